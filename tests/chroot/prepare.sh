#!/bin/bash
# prepare.sh [NAME...] -- build (once per machine) the Debian chroots the tests need: torch-2.6
# and torch-2.14 (the torch2x tests), debian-12 and debian-12-torch (the .deb tests); by default
# all of them (roots.sh). They build at the same time (mostly download and unpack); when they
# exist already this takes a few seconds. Fails, naming the root, if any build does.
set -uo pipefail
# Parsed whole before it runs, so editing or updating this file mid-build cannot derail it.
{
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
. "$HERE/roots.sh"

ROOTS=${*:-$KNOWN_ROOTS}
declare -A PIDS
for name in $ROOTS; do
    "$HERE/make-root.sh" "$name" &
    PIDS[$name]=$!
done
failed=""
for name in $ROOTS; do
    wait "${PIDS[$name]}" || failed="$failed $name"
done
if [ -n "$failed" ]; then
    echo "tests/chroot/prepare.sh: FAILED to build chroot(s):$failed (see the make-root lines above;" \
         "rerun tests/chroot/prepare.sh once the cause is fixed)" >&2
    exit 1
fi
exit
}
