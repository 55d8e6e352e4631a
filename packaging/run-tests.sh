#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./packaging/install-deps.sh
./packaging/build.sh
cd build
ctest --preset "${PRESET:-ci}" "$@"
