"""A 2-rank gloo training loop for the hang watchdog tests: one line at the start of each step, an
all_reduce per step. On attempt 0 (TORCHELASTIC_RESTART_COUNT) --hang-rank sleeps forever at --hang-step, before
that step's all_reduce: the other ranks block in it. --quiet-s S: after --quiet-after steps, every
rank computes S seconds printing nothing (--heartbeat: touching $DDP_HEARTBEAT_FILE each second,
or through the SDK-free one-liner), then goes on."""
import argparse
import datetime
import os
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--step-time", type=float, default=0.2)
ap.add_argument("--hang-rank", type=int, default=-1)
ap.add_argument("--hang-step", type=int, default=5)
ap.add_argument("--quiet-after", type=int, default=-1)
ap.add_argument("--quiet-s", type=float, default=0)
ap.add_argument("--heartbeat", action="store_true")
ap.add_argument("--hang-mark", help="file: the hanging rank writes the wall time its hang began (not progress)")
ap.add_argument("--hang-once", action="store_true",
                help="hang on any attempt, but only while --hang-mark does not exist yet (a daemon's retry is "
                     "attempt 0 again)")
args = ap.parse_args()
print("worker starting", flush=True)

# Start-up is progress too: on a loaded 2-core machine `import torch` alone can take longer than the
# tests' 3-5 s --hang-timeout, which would judge a rank that is only importing hung (seen in CI at
# load average 10). A tiny process touches the heartbeat file (the SDK-free way) until the process
# group exists; the hang under test comes later, in the training loop.
beat = subprocess.Popen(["/bin/sh", "-c", 'while :; do : >"$DDP_HEARTBEAT_FILE"; sleep 0.5; done']) \
    if os.environ.get("DDP_HEARTBEAT_FILE") else None

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=600))
if beat:
    beat.kill()
    beat.wait()
rank = dist.get_rank()
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def quiet_phase(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))  # "computing", printing nothing
        if args.heartbeat:
            open(os.environ["DDP_HEARTBEAT_FILE"], "w").close()


def load_batch(step):
    first = not os.path.exists(args.hang_mark) if args.hang_once else attempt == 0
    if first and rank == args.hang_rank and step == args.hang_step:
        if args.hang_mark:
            with open(args.hang_mark, "w") as f:
                f.write(repr(time.time()))
        time.sleep(1e9)  # the hang: this rank never reaches this step's all_reduce
    return torch.tensor([float(rank + 1)])


for step in range(args.steps):
    t = load_batch(step)
    print(f"step {step} rank {rank} attempt {attempt}", flush=True)
    if step == args.quiet_after:
        quiet_phase(args.quiet_s)
    time.sleep(args.step_time)  # the step's computation
    dist.all_reduce(t)

print(f"done rank {rank} attempt {attempt}", flush=True)
dist.destroy_process_group()
sys.exit(0)
