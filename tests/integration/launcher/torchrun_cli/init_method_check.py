"""Worker for the torchrun CLI cases: init_process_group with the given init_method (env://,
tcp://...), world size and rank from flags or the launcher's environment; every rank all_reduces a
one-hot vector and checks the sum is the world size, then prints Done."""
import argparse
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--init-method", "--init_method", required=True)
parser.add_argument("--world-size", "--world_size", type=int, default=int(os.getenv("WORLD_SIZE", "-1")))
parser.add_argument("--rank", type=int, default=int(os.getenv("RANK", "-1")))
args = parser.parse_args()
dist.init_process_group("gloo", init_method=args.init_method, world_size=args.world_size, rank=args.rank)
world = dist.get_world_size()
v = torch.zeros(world, dtype=torch.int64)
v[dist.get_rank()] = 1
dist.all_reduce(v)
if int(v.sum()) != world:
    raise RuntimeError(f"all_reduce of one-hot vectors summed to {int(v.sum())}, want {world}")
dist.destroy_process_group()
print("Done", flush=True)
