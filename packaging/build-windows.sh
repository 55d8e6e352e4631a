#!/usr/bin/env bash
# Cross-builds ddp-launch.exe for 64-bit Windows with Debian's mingw-w64 into build-windows/
# (build-windows/bin/ddp-launch.exe, statically linked: it needs no DLL beside it). The packages
# come from ./packaging/install-deps.sh, the compiled libraries from ./packaging/windows-deps.sh.
# Warnings are errors, as in the ci preset.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-windows}
# yaml-cpp, SQLite and RE2 for mingw-w64 from Debian's source packages, built once into a cache
# outside the tree (DDP_MINGW_DEPS_DIR; cmake/windows-deps.cmake imports them).
./packaging/windows-deps.sh
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] || ! grep -q "CMAKE_GENERATOR:INTERNAL=Ninja" "$BUILD_DIR/CMakeCache.txt"; then
  rm -rf "$BUILD_DIR"
fi
configure=(cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake
  -DCMAKE_BUILD_TYPE=Release -DDDP_WERROR=ON)
build=(cmake --build "$BUILD_DIR" -j "${JOBS:-2}")
# DDP_QUIET_BUILD=1 (run-tests.sh): the build's progress every 10 % or 30 s, its output in a log
# file shown when it fails (progress.sh), as build.sh.
if [ "${DDP_QUIET_BUILD:-0}" = 1 ]; then
  . packaging/progress.sh
  quietly configure-windows "${configure[@]}"
  build_quietly build-windows "${build[@]}"
else
  "${configure[@]}" >/dev/null
  "${build[@]}"
fi
