#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./packaging/install-deps.sh
./packaging/build.sh
./packaging/build-windows.sh  # ddp-launch.exe for the windows tests (run under Wine)
./tests/chroot/prepare.sh  # torch 2.6/2.14 chroots for the torch2x tests, built once per machine
ctest --preset "${PRESET:-ci}" "$@"   # presets live in the source dir; the build dir comes from the preset
