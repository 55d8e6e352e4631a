#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and trains.
#
# `ddp-launch run` hosts the rendezvous store and starts 2 ranks of the C++ example trainer
# (build/bin/resnet-trainer: a small ResNet-style CNN on synthetic 32×32 images, gloo on CPU,
# gradients averaged by the worker SDK). Rank 0 prints progress; at the end the script prints a
# summary (time, first and last loss, whether the replicas agree) and the loss chart's path.
# STEPS=N changes the length (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
./packaging/install-deps.sh >/dev/null
./packaging/build.sh >/dev/null
if [ ! -x build/bin/resnet-trainer ]; then
  echo "demo: build/bin/resnet-trainer was not built: CMake did not find libtorch (libtorch-dev)" >&2
  exit 1
fi

out=$(mktemp -d /tmp/ddp-launch-demo.XXXXXX)
steps=${STEPS:-60}
start=$(date +%s.%N)
set -x
build/bin/ddp-launch run --nproc-per-node 2 --max-restarts 1 --events "$out/events.jsonl" --log-dir "$out/logs" \
  --tee 3 --no-python build/bin/resnet-trainer --steps "$steps" --log-every 5 --checkpoint-dir "$out/checkpoint" |
  tee "$out/stdout.log" | grep -v -e '@ddp-metric'
{ set +x; } 2>/dev/null
end=$(date +%s.%N)

chart="$out/loss.svg"
# --log-dir holds one directory per run (torchrun's <run_id>_<random>); this run made the only one.
run_dir=$(find "$out/logs" -mindepth 1 -maxdepth 1 -type d | head -n 1)
if build/bin/ddp-launch report --help >/dev/null 2>&1 && [ -f "$run_dir/metrics.csv" ]; then
  build/bin/ddp-launch report "$run_dir" --chart "$chart" >/dev/null
else
  python3 bench/scaling/loss_chart.py "$out/stdout.log" --out "$chart" --title "resnet-trainer, 2 ranks" >/dev/null
fi

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
echo "  per-rank logs: $run_dir   events: $out/events.jsonl"
echo "  loss chart: $chart"
