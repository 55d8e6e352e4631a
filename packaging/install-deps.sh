#!/usr/bin/env bash
# Installs the Debian packages ddp-launch needs; skips what is present. Idempotent: a second run with
# everything installed touches nothing and takes a second.
#   install-deps.sh          everything: build, demo and every test (run-tests.sh, .ci/run)
#   install-deps.sh --demo   only what run-demo.sh needs: build ddp-launch and resnet-trainer, train
#   … --list                 print the package names, one a line, and install nothing
# apt's output goes to a log file (shown when it fails); one line says what is being installed.
set -euo pipefail
. "$(dirname "$0")/progress.sh"

demo=0 list=0
for arg in "$@"; do
  case "$arg" in
    --demo) demo=1 ;;
    --list) list=1 ;;
    *) echo "install-deps: unknown option '$arg' (--demo: only the demo's packages; --list: print them)" >&2; exit 2 ;;
  esac
done

# The demo: configure the ci preset (every find_package of CMakeLists.txt), build ddp-launch (the
# dashboard's uPlot comes from npm at build time) and the libtorch trainer, run it.
DEMO_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config python3
  libboost-dev libboost-system-dev libboost-filesystem-dev
  libyaml-cpp-dev libspdlog-dev libfmt-dev doctest-dev libcli11-dev
  nlohmann-json3-dev libsqlite3-dev libgloo-dev
  libtorch-dev                   # resnet-trainer, the demo's worker
  libre2-dev                     # RE2: linear-time regexes over user output (metrics, log patterns)
)
# Everything else the tests need (tests/README.md).
TEST_PACKAGES=(
  git libboost-all-dev
  python3-torch                  # the integration tests' torch workers (/usr/bin/python3)
  clang libclang-rt-dev          # libFuzzer harnesses
  iproute2 procps psmisc         # ss, ps, fuser used by tests
  librsvg2-bin                   # rsvg-convert: `ddp-launch report --out chart.png`
  gdb                            # native stacks of hung C++ ranks (launcher/hang/hang_forensics.hpp)
  debootstrap                    # torch 2.x client chroots for the store tests; the .deb's Debian 12 root
  dpkg-dev file help2man lintian # the .deb: dpkg-shlibdeps (Depends), man pages from --help, its checks
  slurmctld slurmd slurm-client munge   # Slurm 22.05 for tests/integration/slurm (the tests start it)
  g++-mingw-w64-x86-64-posix wine64     # ddp-launch.exe: cross-built (build-windows.sh), tested under Wine
  tcl perl unicode-data          # windows-deps.sh: yaml-cpp, SQLite, RE2 for mingw from Debian's sources
                                 # (apt-get source: dpkg-dev; SQLite's amalgamation: tclsh; RE2's tables)
  chromium fonts-dejavu-core     # the dashboard's browser test (headless, driven by playwright-core)
)
PACKAGES=("${DEMO_PACKAGES[@]}")
[ "$demo" = 1 ] || PACKAGES+=("${TEST_PACKAGES[@]}")
# Node.js and npm: the build installs the dashboard's pinned packages with `npm ci`, the browser
# test runs on node. A machine that has them from elsewhere keeps its own (nodesource's nodejs
# bundles npm); a fresh Debian 12 gets Debian's (nodejs 18, npm 9).
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

if [ "$list" = 1 ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  say "dependencies: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
say "installing ${#missing[@]} packages… (${missing[*]})"
export DEBIAN_FRONTEND=noninteractive
log="$DDP_PROGRESS_LOGS/install-deps.log"
: >"$log"
# A fresh machine has no package lists; update once, and again if an install fails on stale lists.
if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ]; then
  say "updating the package lists…"
  quietly install-deps-update $SUDO apt-get update -q
fi
# Without systemd, postinst scripts start munge/slurm daemons through /etc/init.d on the default
# paths; the Slurm tests start their own. A temporary policy-rc.d (exit 101) keeps them down.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod 755 /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
install() { $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; }
if ! install >>"$log" 2>&1; then
  say "apt-get install failed; updating the package lists and trying again"
  if ! { $SUDO apt-get update -q && install; } >>"$log" 2>&1; then
    say "FAILED: apt-get install ${missing[*]}" >&2
    show_failure "$log"
    exit 1
  fi
fi
say "installed ${#missing[@]} packages (apt's output: $log)"
