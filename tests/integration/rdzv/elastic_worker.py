"""A gloo worker for the elastic tests: init from the torchrun environment, then all_reduce in a
loop until --stop-file exists (every rank agrees through the all_reduce), printing its place once."""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--stop-file", required=True)
ap.add_argument("--seconds", type=float, default=300)
args = ap.parse_args()
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
rnd = os.environ["TORCHELASTIC_RESTART_COUNT"]
t = torch.ones(1)
dist.all_reduce(t)
print(f"round {rnd} world {world} rank {rank} sum {t.item():g}", flush=True)
deadline = time.monotonic() + args.seconds
while time.monotonic() < deadline:
    flag = torch.tensor([1.0 if os.path.exists(args.stop_file) else 0.0])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    if flag.item() > 0:
        print(f"rank {rank} stops", flush=True)
        dist.destroy_process_group()
        sys.exit(0)
    time.sleep(0.1)
sys.exit(4)
