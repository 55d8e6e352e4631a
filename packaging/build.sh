#!/usr/bin/env bash
# Configures and builds ddp-launch into build/ (binaries in build/bin/). PRESET=dev|ci (default ci).
#   build.sh [TARGET...]   only these targets (e.g. ddp-launch resnet-trainer), default all
# DDP_QUIET_BUILD=1 (run-demo.sh, run-tests.sh): a line per phase and the build's progress every
# 10 % or 30 s instead of every step; the output in a log file, shown when it fails (progress.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${PRESET:-ci}
if [ ! -f build/CMakeCache.txt ] || ! grep -q "CMAKE_GENERATOR:INTERNAL=Ninja" build/CMakeCache.txt; then
  rm -rf build
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
if [ "${DDP_QUIET_BUILD:-0}" = 1 ]; then
  . packaging/progress.sh
  say "configuring (cmake --preset $PRESET)…"
  quietly configure cmake --preset "$PRESET"
  say "building${*:+ $*}…"
  build_quietly build cmake --build --preset "$PRESET" "${targets[@]}"
else
  cmake --preset "$PRESET" >/dev/null
  cmake --build --preset "$PRESET" "${targets[@]}"
fi
