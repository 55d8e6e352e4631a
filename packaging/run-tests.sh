#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test through ctest.
# Each phase before ctest prints one line with the seconds since the start (the build its progress
# every 10 % or 30 s); their output goes to log files, shown when a phase fails (progress.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/progress.sh
say "dependencies (every test's: packaging/install-deps.sh)…"
./packaging/install-deps.sh
# The Debian chroots (torch2x: torch 2.6/2.14; deb: Debian 12) are built once per machine, mostly
# download and unpack: on a cold machine they build while the compilers run, not after them.
say "Debian chroots: building in the background (tests/chroot/prepare.sh; a no-op once built)…"
# Its own process group (set -m), so a failed build ends the whole chroot build with it (an
# interrupted root stays NAME.partial and is rebuilt next time).
set -m
quietly chroots ./tests/chroot/prepare.sh &
chroots_pid=$!
set +m
trap 'kill -- "-$chroots_pid" 2>/dev/null || true' EXIT
DDP_QUIET_BUILD=1 ./packaging/build.sh
say "Windows build (ddp-launch.exe for the windows tests, run under Wine)…"
DDP_QUIET_BUILD=1 ./packaging/build-windows.sh
say "Windows ZIP, installer and manifests (packaging/build-windows-installer.sh)…"
quietly windows-installer ./packaging/build-windows-installer.sh
# The release build + .deb, outside the tests' time limits (their fixture reruns it: configure and
# cpack again, the build a no-op).
say "release build and .deb (packaging/build-deb.sh)…"
quietly build-deb ./packaging/build-deb.sh
say "waiting for the Debian chroots (tests/chroot/prepare.sh)…"
wait "$chroots_pid" || { say "FAILED: the Debian chroots (the log above; rerun tests/chroot/prepare.sh)" >&2; exit 1; }
trap - EXIT
say "tests (ctest --preset ${PRESET:-ci})…"
status=0
ctest --preset "${PRESET:-ci}" "$@" || status=$?  # presets live in the source dir; the build dir comes from the preset
# Warm restarts are on (auto) in the run above. The cases they change, those whose ranks restart (a
# budget, a c10d membership change: label restart, cases marked @restarts in
# tests/integration/harness.py), run again with them off.
if [ -z "${PRESET:-}" ] && [ $# -eq 0 ]; then
  say "the restart cases again with warm restarts off (ctest --preset ci-cold)…"
  ctest --preset ci-cold || status=$?
fi
exit "$status"
