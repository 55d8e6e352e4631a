#!/usr/bin/env bash
# Builds fuzz_codec with clang (the main build is g++, and libFuzzer needs clang) and runs it for a
# bounded time on a seed corpus derived from real torch clients' bytes. Registered as ctest
# `fuzz.codec`; also handy by hand:
#   tests/fuzz/run-fuzz.sh <source dir> <work dir> [seconds] [clang++]
# The work dir keeps the objects (through ccache), the growing corpus and any crash artifacts.
set -euo pipefail

src=$(cd "${1:?source dir}" && pwd)
work=${2:?work dir}
seconds=${3:-20}
cxx=${4:-clang++}
mkdir -p "$work"
work=$(cd "$work" && pwd)

launcher=()
if command -v ccache >/dev/null; then launcher=(ccache); fi

# The store core and the harness, with sanitizers; -fsanitize=fuzzer-no-link adds the coverage
# instrumentation without a second main(). UBSan findings abort, so they fail the run.
flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
  -fno-sanitize-recover=all -I"$src")
objs=()
for f in store/protocol.cpp store/codec.cpp store/state.cpp tests/fuzz/fuzz_codec.cpp; do
  obj="$work/obj/$(basename "${f%.cpp}").o"
  mkdir -p "$work/obj"
  "${launcher[@]}" "$cxx" "${flags[@]}" -c "$src/$f" -o "$obj"
  objs+=("$obj")
done
"$cxx" -fsanitize=fuzzer,address,undefined "${objs[@]}" -lfmt -o "$work/fuzz_codec"

python3 "$src/tests/fuzz/make_corpus.py" "$src/tests/fuzz/captured_requests.txt" \
  "$src/tests/fuzz/regressions.txt" "$work/seeds"
# Artifacts are this run's only; the corpus grows from run to run (it lives in the build dir).
rm -rf "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts"

# -malloc_limit_mb: any single allocation past 64 MB is a crash, which is what an allocation sized
# by an unchecked length field looks like. -rss_limit_mb catches growth across inputs (a leak, or
# state piling up); ASan's quarantine (256 MB by default) is cut so that it does not count.
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16}
set +e
"$work/fuzz_codec" "$work/corpus" "$work/seeds" \
  -max_total_time="$seconds" -max_len=4096 -timeout=10 \
  -malloc_limit_mb=64 -rss_limit_mb=160 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 >"$work/last-run.log" 2>&1
status=$?
set -e
# The log without libFuzzer's per-input progress lines.
grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)' "$work/last-run.log" || true

if [[ $status -ne 0 ]]; then
  echo "fuzz_codec failed (exit $status); crashing inputs (hex):"
  for a in "$work"/artifacts/*; do
    [[ -f $a ]] || continue
    echo "$a"
    od -An -tx1 -v "$a" | tr -d ' \n' | head -c 4096
    echo
  done
  exit 1
fi
