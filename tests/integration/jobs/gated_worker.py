"""A tiny gloo DDP job for the daemon tests: every rank joins the group, prints 'ready', waits
until the gate file (argv[1]) exists, all_reduces, prints a few progress lines and exits with
argv[2] (default 0). Prints CUDA_VISIBLE_DEVICES so tests can check GPU assignment."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

gate = sys.argv[1]
code = int(sys.argv[2]) if len(sys.argv) > 2 else 0
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
rank, world = dist.get_rank(), dist.get_world_size()
print(f"rank {rank}/{world} ready pid={os.getpid()} cuda_visible_devices={os.environ.get('CUDA_VISIBLE_DEVICES')!r}",
      flush=True)
deadline = time.monotonic() + 300
while not os.path.exists(gate):  # test scaffolding: the test opens the gate when it has checked what it needs
    if time.monotonic() > deadline:
        print("gate never opened", file=sys.stderr, flush=True)
        sys.exit(5)
    time.sleep(0.05)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
for step in range(3):
    print(f"step {step} loss={1.0 / (step + 1):.4f}", flush=True)
print(f"rank {rank}: sum={t.item():g} done", flush=True)
dist.destroy_process_group()
sys.exit(code)
