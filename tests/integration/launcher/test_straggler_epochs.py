"""Per-epoch step numbers do not switch the straggler detector off (issue 25 item 3.11): two ranks
print the ImageNet example's own progress lines (`Epoch: [1][ 10/200]`: the batch index restarts
every epoch), read with `--metric step=...`; rank 1 is 3x slower in epoch 1 only, and is reported
in epoch 1. Before, every row at or below the highest step seen (epoch 0's last) was dropped."""
import tempfile

from harness import check, check_events_schema, run_script_worker, run_tests

WORKER = r"""import os, sys, time
rank = int(os.environ["RANK"])
batches, freq = 200, 10
for epoch in range(2):
    per_line = 0.6 if (epoch == 1 and rank == 1) else 0.2
    for i in range(0, batches, freq):
        time.sleep(per_line)
        print(f"Epoch: [{epoch}][{i:3d}/{batches}]\tTime  0.215 ( 0.233)\tData  0.001 ( 0.010)\t"
              f"Loss 6.9078e+00 (6.9101e+00)\tAcc@1   0.00 (  0.10)\tAcc@5   0.39 (  0.55)", flush=True)
if rank == 0:
    time.sleep(9)  # the slow rank's epoch is still running
"""


def test_a_rank_slow_in_epoch_1_is_reported_with_per_epoch_batch_indices():
    with tempfile.TemporaryDirectory() as d:
        r, events = run_script_worker(d, "imagenet_lines.py", WORKER, 2,
                                      "--metric", r"step=Epoch: \[\d+\]\[\s*(\d+)/\d+\]",
                                      "--metric", r"loss=Loss\s+([0-9.e+-]+)", "--straggler-threshold", "0.75")
    check_events_schema(events)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}")
    stragglers = [e for e in events if e["event"] == "straggler"]
    check(len(stragglers) == 1 and stragglers[0]["rank"] == 1 and stragglers[0]["ratio"] < 0.75,
          f"rank 1 not reported in epoch 1: {stragglers} {r.stderr[-2000:]}")
    check("rank 1 is a straggler" in r.stderr, f"{r.stderr[-2000:]}")


run_tests([test_a_rank_slow_in_epoch_1_is_reported_with_per_epoch_batch_indices])
