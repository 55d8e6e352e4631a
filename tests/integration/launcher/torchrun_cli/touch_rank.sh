#!/bin/sh
# --no-python worker for the torchrun CLI cases: creates $1/$RANK.
set -eu
: "${TEST_SENTINEL_PARENT:?the launcher's environment was not passed on}"
touch "$1/$RANK"
