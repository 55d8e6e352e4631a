#!/bin/bash
# prepare.sh -- build (once per machine) the Debian chroots with torch 2.6 and torch 2.14 that
# the torch2x integration tests need. Both build at the same time (mostly download and unpack);
# when they exist already this takes a few seconds. Fails, naming the root, if either build does.
set -uo pipefail
# Parsed whole before it runs, so editing or updating this file mid-build cannot derail it.
{
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
. "$HERE/roots.sh"

declare -A PIDS
for name in $KNOWN_ROOTS; do
    "$HERE/make-root.sh" "$name" &
    PIDS[$name]=$!
done
failed=""
for name in $KNOWN_ROOTS; do
    wait "${PIDS[$name]}" || failed="$failed $name"
done
if [ -n "$failed" ]; then
    echo "tests/chroot/prepare.sh: FAILED to build chroot(s):$failed (see the make-root lines above;" \
         "rerun tests/chroot/prepare.sh once the cause is fixed)" >&2
    exit 1
fi
exit
}
