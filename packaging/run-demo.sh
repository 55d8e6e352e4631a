#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and trains.
#
# `ddp-launch run` hosts the rendezvous store and starts 2 ranks of the C++ example trainer
# (build/bin/resnet-trainer: a small ResNet-style CNN on synthetic 32×32 images, gloo on CPU,
# gradients averaged by the worker SDK). Rank 0 prints progress; at the end `ddp-launch report`
# summarises the run from its metrics.csv and draws the loss chart, and the script prints a summary
# (time, first and last loss, whether the replicas agree) and the chart's path.
# Each phase prints one line with the seconds since the start ("[  41 s] building [120/283]…"); apt's
# and the build's output go to log files, shown when a phase fails (packaging/progress.sh).
# STEPS=N changes the length (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/progress.sh
say "demo: dependencies (only the demo's: packaging/install-deps.sh --demo)…"
./packaging/install-deps.sh --demo
# The ci preset's build directory (build/, as run-tests.sh), but only the two programs the demo
# runs: a few hundred steps fewer than the whole build with its tests.
DDP_QUIET_BUILD=1 ./packaging/build.sh ddp-launch resnet-trainer
if [ ! -x build/bin/resnet-trainer ]; then
  echo "demo: build/bin/resnet-trainer was not built: CMake did not find libtorch (libtorch-dev)" >&2
  exit 1
fi

out=$(mktemp -d /tmp/ddp-launch-demo.XXXXXX)
steps=${STEPS:-60}
say "training… (2 ranks, $steps steps; rank 0's progress below)"
start=$(date +%s.%N)
set -x
# --run-dir with the same --log-dir: one flat run directory, metrics.csv (the ranks' @ddp-metric
# lines) and run.json at its top, per-rank logs under attempt_<n>/ (a --log-dir alone would get a
# fresh <run_id>_<random> directory inside it).
build/bin/ddp-launch run --nproc-per-node 2 --max-restarts 1 --events "$out/events.jsonl" \
  --run-dir "$out/run" --log-dir "$out/run" --tee 3 \
  --no-python build/bin/resnet-trainer --steps "$steps" --log-every 5 --checkpoint-dir "$out/checkpoint" |
  tee "$out/stdout.log" | grep -v -e '@ddp-metric'
{ set +x; } 2>/dev/null
end=$(date +%s.%N)

say "report…"
chart="$out/loss.svg"
build/bin/ddp-launch report "$out/run" --out "$chart" | grep -v '^chart: '

python3 - "$out/stdout.log" "$start" "$end" <<'EOF'
import re, sys
log, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
text = open(log).read()
loss = [float(m) for m in re.findall(r"^\[rank 0\]: @ddp-metric step=\d+ loss=([0-9.e+-]+)", text, re.M)]
finals = dict(re.findall(r"^\[rank (\d+)\]: final step=\d+ loss=[0-9.]+ param_hash=([0-9a-f]+)", text, re.M))
agree = len(set(finals.values())) == 1 and len(finals) == 2
print(f"\ndemo summary: 2 ranks, {end - start:.1f} s wall clock (launch to exit)")
if loss:
    print(f"  loss (rank 0): {loss[0]:.4f} at the first report -> {loss[-1]:.4f} at the last")
print(f"  replicas agree (parameter hash): {'yes' if agree else 'NO'} {sorted(set(finals.values()))}")
sys.exit(0 if agree and loss and loss[-1] < loss[0] else 1)
EOF
echo "  run directory (metrics.csv, per-rank logs): $out/run   events: $out/events.jsonl"
echo "  loss chart: $chart"
