#!/usr/bin/env bash
# Builds the Debian package build-release/ddp-launch_<version>_<arch>.deb and prints its path.
#
# Installs what is missing (install-deps.sh), configures the `release` preset (Release, prefix
# /usr, no fault injection, no tests) with Debian's hardening flags from dpkg-buildflags, builds
# the binary with its man pages and bash completion (target ddp-launch-docs: the normal CMake build
# of ddp-launch, so whatever the binary embeds is packaged) and packs it with CPack
# (packaging/package.cmake: Depends from dpkg-shlibdeps, the version from project(VERSION)).
set -euo pipefail
cd "$(dirname "$0")/.."
./packaging/install-deps.sh >/dev/null
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cxxflags="$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)
cmake --preset release -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >/dev/null
cmake --build --preset release
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' build-release/CMakeCache.txt)
arch=$(dpkg --print-architecture)
deb=build-release/ddp-launch_${version}_${arch}.deb
rm -f build-release/ddp-launch_*.deb  # the README installs ./build-release/ddp-launch_*.deb
(cd build-release && cpack -G DEB >cpack.log 2>&1) || { tail -30 build-release/cpack.log >&2; exit 1; }
[ -f "$deb" ] || { echo "build-deb.sh: cpack made no $deb; see build-release/cpack.log" >&2; exit 1; }
echo "$PWD/$deb"
