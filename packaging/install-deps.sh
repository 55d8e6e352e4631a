#!/usr/bin/env bash
# Installs the Debian packages ddp-launch needs to build and test; skips what is present.
# Idempotent: a second run with everything installed touches nothing and takes a second.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-all-dev libyaml-cpp-dev libspdlog-dev libfmt-dev doctest-dev libcli11-dev
  nlohmann-json3-dev libsqlite3-dev libgloo-dev
  libtorch-dev python3-torch
  clang libclang-rt-dev          # libFuzzer harnesses
  iproute2 procps psmisc         # ss, ps, fuser used by tests
  libre2-dev                     # RE2: linear-time regexes over user output (metrics, log patterns)
  librsvg2-bin                   # rsvg-convert: `ddp-launch report --out chart.png`
  gdb                            # native stacks of hung C++ ranks (launcher/hang/hang_forensics.hpp)
  debootstrap                    # torch 2.x client chroots for the store tests; the .deb's Debian 12 root
  dpkg-dev file help2man lintian # the .deb: dpkg-shlibdeps (Depends), man pages from --help, its checks
  slurmctld slurmd slurm-client munge   # Slurm 22.05 for tests/integration/slurm (the tests start it)
  g++-mingw-w64-x86-64-posix wine64     # ddp-launch.exe: cross-built (build-windows.sh), tested under Wine
  chromium fonts-dejavu-core     # the dashboard's browser test (headless, driven by playwright-core)
)
# Node.js and npm: the build installs the dashboard's pinned packages with `npm ci`, the browser
# test runs on node. A machine that has them from elsewhere keeps its own (nodesource's nodejs
# bundles npm); a fresh Debian 12 gets Debian's (nodejs 18, npm 9).
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists; update once, and again if an install fails on stale lists.
if [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ]; then
  $SUDO apt-get update -q
fi
# Without systemd, postinst scripts start munge/slurm daemons through /etc/init.d on the default
# paths; the Slurm tests start their own. A temporary policy-rc.d (exit 101) keeps them down.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod 755 /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
