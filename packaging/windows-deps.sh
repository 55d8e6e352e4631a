#!/usr/bin/env bash
# Builds the compiled libraries of ddp-launch.exe (yaml-cpp, SQLite, RE2) for 64-bit Windows with
# Debian's mingw-w64 (posix threads, cmake/mingw-w64-x86_64.cmake), from Debian 12's own source
# packages at the versions of the Linux build's libyaml-cpp-dev, libsqlite3-dev and libre2-dev:
# `apt-get source` (Debian's patches applied), static libraries, installed into a cache outside the
# repository, one directory per package and version:
#   ${DDP_MINGW_DEPS_DIR:-/var/cache/ddp-launch/mingw-deps}/<package>-<version>/{include,lib}
# A directory that is complete (its .complete stamp) is kept: a second run takes a second. Called by
# packaging/build-windows.sh; cmake/windows-deps.cmake imports the result (DDP_MINGW_DEPS_DIR).
# One line per package says whether it was cached or built (and in how long); the build's output goes to
# log files shown when it fails. The versions: packaging/windows-deps.versions.
# Needs dpkg-dev (dpkg-source), tcl (SQLite's amalgamation), perl and unicode-data (RE2's tables)
# and the mingw-w64 toolchain:
# ./packaging/install-deps.sh. RE2 of 2022-06 needs no Abseil (RE2 depends on it from 2023-06 on).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
. packaging/progress.sh

DEPS_DIR=${DDP_MINGW_DEPS_DIR:-/var/cache/ddp-launch/mingw-deps}
[ $# = 0 ] || { echo "windows-deps: no options (the cache directory: DDP_MINGW_DEPS_DIR)" >&2; exit 2; }
# YAML_CPP_VERSION, SQLITE3_VERSION, RE2_VERSION
. packaging/windows-deps.versions

TOOLCHAIN=$REPO/cmake/mingw-w64-x86_64.cmake
HOST=x86_64-w64-mingw32
JOBS=${JOBS:-2}

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

# deb-src entries for the suites the machine's deb entries name (deb822 .sources or one-line
# .list), once; then the source indexes.
ensure_deb_src() {
  if grep -rqs -e '^deb-src ' -e '^Types:.*deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return
  fi
  local file=/etc/apt/sources.list.d/ddp-launch-deb-src.sources
  say "windows-deps: adding deb-src entries ($file)"
  {
    # Every enabled deb822 stanza of type deb, as deb-src.
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -e "$f" ] || continue
      awk 'BEGIN { RS = ""; ORS = "\n\n" }
           /(^|\n)Types:[^\n]*deb([ \n]|$)/ && !/(^|\n)Enabled: *no/ {
             sub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print }' "$f"
    done
    # Every one-line deb entry, as a deb822 deb-src stanza.
    if [ -f /etc/apt/sources.list ]; then
      awk '$1 == "deb" {
             i = 2; opts = ""
             if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
             printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents:", $i, $(i + 1)
             for (j = i + 2; j <= NF; j++) printf " %s", $j
             printf "\n\n" }' /etc/apt/sources.list
    fi
  } | $SUDO tee "$file" >/dev/null
  [ -s "$file" ] || { echo "windows-deps: no deb entry in /etc/apt to derive deb-src entries from" >&2; exit 1; }
  quietly windows-deps-apt-update $SUDO apt-get update -q
}

# fetch SOURCE VERSION DIR: the unpacked, patched source package in DIR/src (apt-get source).
fetch() {
  local source=$1 version=$2 dir=$3
  rm -rf "$dir" && mkdir -p "$dir"
  ensure_deb_src
  local rc=0
  (cd "$dir" && apt-get source -q "$source=$version") >"$DDP_PROGRESS_LOGS/windows-deps-$source-fetch.log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    # Stale source indexes (a point release since the last update): once more after an update.
    quietly windows-deps-apt-update $SUDO apt-get update -q
    rm -rf "$dir" && mkdir -p "$dir"
    if ! (cd "$dir" && apt-get source -q "$source=$version") >"$DDP_PROGRESS_LOGS/windows-deps-$source-fetch.log" 2>&1; then
      say "windows-deps: FAILED: apt-get source $source=$version (a deb-src entry for Debian 12 in /etc/apt? is the version still in the archive? the pins: packaging/windows-deps.versions)" >&2
      show_failure "$DDP_PROGRESS_LOGS/windows-deps-$source-fetch.log"
      exit 1
    fi
  fi
  # dpkg-source unpacks into <source>-<upstream version>.
  local upstream=${version%-*}
  mv "$dir/$source-${upstream#*:}" "$dir/src"
}

cmake_build() { # NAME SRC BUILD PREFIX ARGS...
  local name=$1 src=$2 build=$3 prefix=$4
  shift 4
  quietly "windows-deps-$name-configure" cmake -S "$src" -B "$build" -G Ninja \
    -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DBUILD_SHARED_LIBS=OFF -DCMAKE_CROSSCOMPILING_EMULATOR= "$@"
  quietly "windows-deps-$name-build" cmake --build "$build" -j "$JOBS"
  quietly "windows-deps-$name-install" cmake --install "$build"
}

build_yaml_cpp() { # WORK PREFIX
  cmake_build yaml-cpp "$1/src" "$1/build" "$2" -DYAML_BUILD_SHARED_LIBS=OFF \
    -DYAML_CPP_BUILD_TESTS=OFF -DYAML_CPP_BUILD_TOOLS=OFF -DYAML_CPP_BUILD_CONTRIB=OFF
}

# Debian's RE2 source leaves out the generated Unicode and Perl tables; debian/rules makes them
# again (REBUILD_TABLES=1) from Debian's unicode-data, and so does this.
build_re2() { # WORK PREFIX
  quietly windows-deps-re2-tables make -C "$1/src" REBUILD_TABLES=1 re2/perl_groups.cc \
    re2/unicode_casefold.cc re2/unicode_groups.cc
  cmake_build re2 "$1/src" "$1/build" "$2" -DRE2_BUILD_TESTING=OFF
}

# SQLite: the build host makes the amalgamation (sqlite3.c and sqlite3.h, with its tclsh and
# Debian's patches in), mingw compiles it into a static library with Debian's feature flags
# (debian/rules) that apply to a library without extensions loaded at run time.
SQLITE_FLAGS=(-DSQLITE_THREADSAFE=1 -DSQLITE_OMIT_LOAD_EXTENSION=1 -DSQLITE_ENABLE_COLUMN_METADATA
  -DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_RTREE -DSQLITE_SECURE_DELETE -DSQLITE_ENABLE_UNLOCK_NOTIFY
  -DSQLITE_ENABLE_DBSTAT_VTAB -DSQLITE_MAX_SCHEMA_RETRY=25 -DSQLITE_ENABLE_PREUPDATE_HOOK
  -DSQLITE_ENABLE_SESSION -DSQLITE_ENABLE_STMTVTAB -DSQLITE_MAX_VARIABLE_NUMBER=250000
  -DSQLITE_ENABLE_MATH_FUNCTIONS)
build_sqlite3() { # WORK PREFIX
  local work=$1 prefix=$2
  mkdir -p "$work/build"
  quietly windows-deps-sqlite3-configure sh -c "cd '$work/build' && '$work/src/configure' --disable-tcl"
  quietly windows-deps-sqlite3-amalgamation make -C "$work/build" sqlite3.c
  quietly windows-deps-sqlite3-build "$HOST-gcc-posix" -O2 "${SQLITE_FLAGS[@]}" -c "$work/build/sqlite3.c" \
    -o "$work/build/sqlite3.o"
  mkdir -p "$prefix/lib" "$prefix/include"
  quietly windows-deps-sqlite3-install "$HOST-ar" rcs "$prefix/lib/libsqlite3.a" "$work/build/sqlite3.o"
  cp "$work/build/sqlite3.h" "$work/src/src/sqlite3ext.h" "$prefix/include/"
}

# ensure NAME SOURCE VERSION: the package's cache directory, built if it is not complete.
ensure() {
  local name=$1 source=$2 version=$3
  local prefix=$DEPS_DIR/$name-$version
  if [ -f "$prefix/.complete" ]; then
    say "windows-deps: $name $version (cached: $prefix)"
    return
  fi
  local t0 work
  t0=$(date +%s)
  say "windows-deps: building $name $version for mingw-w64 (Debian's source package)…"
  $SUDO mkdir -p "$DEPS_DIR"
  [ -w "$DEPS_DIR" ] || $SUDO chown "$(id -u):$(id -g)" "$DEPS_DIR"
  rm -rf "$prefix" "$DEPS_DIR/.work-$name".*
  work=$(mktemp -d "$DEPS_DIR/.work-$name.XXXXXX")
  fetch "$source" "$version" "$work"
  "build_${name//-/_}" "$work" "$prefix"
  rm -rf "$work"
  date -u +%FT%TZ >"$prefix/.complete"
  say "windows-deps: built $name $version in $(($(date +%s) - t0)) s ($prefix)"
}

ensure yaml-cpp yaml-cpp "$YAML_CPP_VERSION"
ensure sqlite3 sqlite3 "$SQLITE3_VERSION"
ensure re2 re2 "$RE2_VERSION"
