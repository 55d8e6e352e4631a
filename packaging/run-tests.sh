#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test through ctest.
# Each phase before ctest prints one line with the seconds since the start (the build its progress
# every 10 % or 30 s); their output goes to log files, shown when a phase fails (progress.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/progress.sh
say "dependencies (every test's: packaging/install-deps.sh)…"
./packaging/install-deps.sh
DDP_QUIET_BUILD=1 ./packaging/build.sh
say "Windows build (ddp-launch.exe for the windows tests, run under Wine)…"
DDP_QUIET_BUILD=1 ./packaging/build-windows.sh
say "Windows ZIP, installer and manifests (packaging/build-windows-installer.sh)…"
quietly windows-installer ./packaging/build-windows-installer.sh
say "Debian chroots (torch2x: torch 2.6/2.14; deb: Debian 12), built once per machine…"
quietly chroots ./tests/chroot/prepare.sh
# The release build + .deb, outside the tests' time limits (their fixture reruns it: configure and
# cpack again, the build a no-op).
say "release build and .deb (packaging/build-deb.sh)…"
quietly build-deb ./packaging/build-deb.sh
say "tests (ctest --preset ${PRESET:-ci})…"
ctest --preset "${PRESET:-ci}" "$@"   # presets live in the source dir; the build dir comes from the preset
