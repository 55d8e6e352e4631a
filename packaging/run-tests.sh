#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./packaging/install-deps.sh
./packaging/build.sh
./packaging/build-windows.sh  # ddp-launch.exe for the windows tests (run under Wine)
./tests/chroot/prepare.sh  # Debian chroots (torch2x: torch 2.6/2.14; deb: Debian 12), built once per machine
./packaging/build-deb.sh >/dev/null  # the release build + .deb, outside the tests' time limits (their fixture reruns it: configure and cpack again, the build a no-op)
ctest --preset "${PRESET:-ci}" "$@"   # presets live in the source dir; the build dir comes from the preset
