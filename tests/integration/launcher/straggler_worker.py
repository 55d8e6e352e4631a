"""A DDP-style worker for the straggler tests: every step computes (a sleep), prints its
`@ddp-metric step=N` line, then all_reduces a small tensor (gloo), so the ranks run in lockstep.
The line comes BEFORE the collective: a slow rank's line comes late at every step, which is what
the supervisor's straggler detector reads (launcher/hang/straggler_detector.hpp)."""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--compute", type=float, default=0.05, help="seconds of 'work' per step on every rank")
ap.add_argument("--slow-rank", type=int, default=-1, help="this rank works --extra seconds more per step")
ap.add_argument("--extra", type=float, default=0.3)
ap.add_argument("--plain", action="store_true", help="print 'Step N Loss X' (an unchanged script's own line)")
args = ap.parse_args()

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
t = torch.ones(4)
for step in range(1, args.steps + 1):
    time.sleep(args.compute + (args.extra if rank == args.slow_rank else 0.0))
    if args.plain:
        print(f"Step {step} Loss {1.0 / step:.4f}", flush=True)
    else:
        print(f"@ddp-metric step={step} loss={1.0 / step:.4f}", flush=True)
    dist.all_reduce(t)
dist.barrier()
print(f"rank {rank} done after {args.steps} steps", flush=True)
dist.destroy_process_group()
