#!/usr/bin/env bash
# Configures and builds ddp-launch into build/ (binaries in build/bin/). PRESET=dev|ci (default ci).
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${PRESET:-ci}
if [ ! -f build/CMakeCache.txt ] || ! grep -q "CMAKE_GENERATOR:INTERNAL=Ninja" build/CMakeCache.txt; then
  rm -rf build
fi
cmake --preset "$PRESET" >/dev/null
cmake --build --preset "$PRESET"
