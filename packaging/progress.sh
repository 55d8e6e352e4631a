# shellcheck shell=bash
# Sourced by run-demo.sh, run-tests.sh and the scripts they call: one line per phase with the time
# since the first script started ("[  41 s] building [120/283]…"), the phases' own output in a log
# file that is shown when the phase fails. The clock is shared through DDP_PROGRESS_T0, so the
# scripts a phase calls count from the same start.

: "${DDP_PROGRESS_T0:=$(date +%s)}"
export DDP_PROGRESS_T0
# Where the phases' logs go (one file per phase); kept after the run.
: "${DDP_PROGRESS_LOGS:=${TMPDIR:-/tmp}/ddp-launch-logs.$(id -u)}"
export DDP_PROGRESS_LOGS
mkdir -p "$DDP_PROGRESS_LOGS"
# How often the build says where it is: every DDP_BUILD_EVERY_PCT % of its steps or every
# DDP_BUILD_EVERY_S seconds, whichever comes first.
: "${DDP_BUILD_EVERY_PCT:=10}"
: "${DDP_BUILD_EVERY_S:=30}"

# say MESSAGE: one line, prefixed with the seconds since the first script started.
say() {
  printf '[%4d s] %s\n' "$(($(date +%s) - DDP_PROGRESS_T0))" "$*"
}

# show_failure LOG: the part of a failed phase's log that says why (from the first "FAILED:" of
# ninja, else its last lines), and where the whole log is.
show_failure() {
  local log=$1
  if grep -q '^FAILED: ' "$log"; then
    sed -n '/^FAILED: /,$p' "$log" | head -n 200 >&2
  else
    tail -n 40 "$log" >&2
  fi
  echo "(the whole log: $log)" >&2
}

# quietly NAME COMMAND...: runs COMMAND with its output in $DDP_PROGRESS_LOGS/NAME.log; on failure
# shows the log's end and returns COMMAND's status.
quietly() {
  local log="$DDP_PROGRESS_LOGS/$1.log"
  shift
  local rc=0
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    say "FAILED ($rc): $*" >&2
    show_failure "$log"
  fi
  return "$rc"
}

# ninja_progress LOG: reads ninja's output ("[120/283] Building CXX …" lines) on stdin into LOG and
# prints "building [120/283]…" every DDP_BUILD_EVERY_PCT % or DDP_BUILD_EVERY_S seconds, and the
# last step; thousands of lines become about a dozen.
ninja_progress() {
  local log=$1 line done total pct last_pct=-100 last_t now shown=""
  last_t=$(date +%s)
  : >"$log"
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    done=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
    pct=$((done * 100 / total))
    now=$(date +%s)
    if ((pct >= last_pct + DDP_BUILD_EVERY_PCT || now - last_t >= DDP_BUILD_EVERY_S || done == total)); then
      say "building [$done/$total]…"
      last_pct=$pct last_t=$now shown="$done/$total"
    fi
  done
  [ -n "$shown" ] || say "building: nothing to do"
}

# build_quietly NAME COMMAND...: a ninja build (cmake --build …) condensed by ninja_progress, its
# whole output in $DDP_PROGRESS_LOGS/NAME.log, shown (the failed steps) when it fails.
build_quietly() {
  local log="$DDP_PROGRESS_LOGS/$1.log"
  shift
  local rc=0
  # ninja prints one line per step when its output is not a terminal, as here. pipefail: the
  # build's status, not the filter's.
  set -o pipefail
  if ! "$@" 2>&1 | ninja_progress "$log"; then rc=1; fi
  if [ "$rc" != 0 ]; then
    say "FAILED ($rc): $*" >&2
    show_failure "$log"
  fi
  return "$rc"
}
