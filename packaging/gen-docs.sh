#!/bin/bash
# gen-docs.sh BINARY OUTDIR CHANGELOG -- what the package carries besides the binary, made from
# the binary itself so it never drifts from what it accepts:
#   OUTDIR/man1/ddp-launch.1.gz and ddp-launch-<command>.1.gz for each command `--help` lists
#       (help2man over `BINARY [COMMAND] --help`),
#   OUTDIR/bash-completion/ddp-launch (`BINARY completion bash`),
#   OUTDIR/changelog.gz (CHANGELOG, compressed as Debian wants: gzip -9n).
# Called by the build (packaging/package.cmake, target ddp-launch-docs).
set -euo pipefail
BIN=$1 OUT=$2 CHANGELOG=$3
HERE=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C.UTF-8 COLUMNS=100
# The pages' date is the changelog's newest entry, not the build's: the same source, the same .deb.
SOURCE_DATE_EPOCH=$(date -d "$(sed -n 's/^ -- .*>  //p' "$CHANGELOG" | head -1)" +%s)
export SOURCE_DATE_EPOCH

# "ddp-launch 0.1.0": help2man takes the program name and version from it.
VERSION_LINE=$("$BIN" --version)
VERSION=${VERSION_LINE##* }
# The commands and their one-line descriptions, from the "Subcommands:" block of --help.
mapfile -t COMMANDS < <("$BIN" --help | awk '/^Subcommands:/ {in_block = 1; next}
    in_block && /^  [a-z]/ {print} in_block && /^[^ ]/ {exit}')
[ ${#COMMANDS[@]} -gt 0 ] || { echo "gen-docs.sh: '$BIN --help' lists no subcommands" >&2; exit 1; }

rm -rf "$OUT/man1" "$OUT/bash-completion" "$OUT/changelog.gz"
mkdir -p "$OUT/man1" "$OUT/bash-completion"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

see_also=""
for line in "${COMMANDS[@]}"; do
    cmd=$(awk '{print $1}' <<<"$line")
    see_also+=".BR ddp\\-launch\\-${cmd//-/\\-} (1),"$'\n'
done

# help2man wants the whole program name on the --version line; a command's page is
# "ddp-launch-run 0.1.0" and its usage line still reads "ddp-launch run ...".
page() {  # $1 = file name (no .1), $2 = NAME line text, $3 = help option, $4 = include file
    help2man --no-info --section 1 --source "ddp-launch $VERSION" --manual "ddp-launch manual" \
        --version-string "$1 $VERSION" --name "$2" --help-option "$3" --include "$4" \
        --output "$TMP/$1.1" "$BIN" >/dev/null
    # help2man names the binary by its build path in places; the installed one is ddp-launch.
    sed -i "s|${BIN//|/\\|}|ddp-launch|g" "$TMP/$1.1"
    gzip -9n <"$TMP/$1.1" >"$OUT/man1/$1.1.gz"
}

{
    cat "$HERE/man-extra.h2m"
    printf '[SEE ALSO]\n%s' "${see_also%,$'\n'}"
    printf '\n'
} >"$TMP/main.h2m"
page ddp-launch "launcher and job daemon for PyTorch DistributedDataParallel training" --help "$TMP/main.h2m"

for line in "${COMMANDS[@]}"; do
    cmd=$(awk '{print $1}' <<<"$line")
    desc=$(sed -E 's/^  [^ ]+ +//' <<<"$line")
    {
        [ "$cmd" = daemon ] && cat "$HERE/man-extra.h2m"
        printf '[SEE ALSO]\n.BR ddp\\-launch (1)\n'
    } >"$TMP/$cmd.h2m"
    page "ddp-launch-$cmd" "$desc" "$cmd --help" "$TMP/$cmd.h2m"
done

"$BIN" completion bash >"$OUT/bash-completion/ddp-launch"
gzip -9n <"$CHANGELOG" >"$OUT/changelog.gz"
