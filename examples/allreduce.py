"""The demo job: every rank meets the others through the supervisor's store
(init_process_group(init_method="env://")), all_reduces its rank + 1 and checks the sum."""
import datetime
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
expected = world * (world + 1) / 2
print(f"rank {rank}/{world}: all_reduce(sum of 1..{world}) = {t.item():g} "
      f"({'ok' if t.item() == expected else f'WRONG, expected {expected:g}'})", flush=True)
dist.destroy_process_group()
sys.exit(0 if t.item() == expected else 1)
