"""A small gloo DDP job for the dashboard test: every rank joins the group, then steps: an
all_reduce and a line `step N loss=X` (a loss that falls, as training's does) every 0.25 s, until
the gate file (argv[1]) exists and at least argv[2] steps are done (default 8). Prints its pid so
the test can check that a cancelled job leaves no rank behind."""
import datetime
import math
import os
import random
import sys
import time

import torch
import torch.distributed as dist

gate = sys.argv[1]
min_steps = int(sys.argv[2]) if len(sys.argv) > 2 else 8
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
rank, world = dist.get_rank(), dist.get_world_size()
print(f"rank {rank}/{world} ready pid={os.getpid()}", flush=True)
rng = random.Random(rank)
step = 0
while step < 2400:  # 10 minutes at most: test scaffolding must end by itself
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    loss = 2.2 * math.exp(-step / 45.0) + 0.15 + 0.04 * rng.random() + 0.02 * rank
    print(f"step {step} loss={loss:.4f} sum={t.item():g}", flush=True)
    step += 1
    if step >= min_steps and os.path.exists(gate):
        break
    time.sleep(0.25)
print(f"rank {rank}: done after {step} steps", flush=True)
dist.destroy_process_group()
sys.exit(0 if step < 2400 else 3)
