"""A rank for the Slurm tests: env:// gloo init, one all_reduce, a JSON record per rank in --out;
with --hold it then sleeps (a job to cancel)."""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--hold", action="store_true")
ap.add_argument("--rank0-exit", type=int, default=0, help="rank 0 exits with this code after the all_reduce")
args = ap.parse_args()

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
rank = dist.get_rank()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
record = {"rank": rank, "world": dist.get_world_size(), "sum": t.item(), "pid": os.getpid()}
for k in ("GROUP_RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "SLURM_NODEID",
          "SLURMD_NODENAME", "SLURM_JOB_ID"):
    record[k] = os.environ.get(k)
tmp = os.path.join(args.out, f".rank{rank}.json")
with open(tmp, "w") as f:
    json.dump(record, f)
os.rename(tmp, os.path.join(args.out, f"rank{rank}.json"))
print(f"rank {rank} of {dist.get_world_size()} sum {t.item():g}", flush=True)
if rank == 0 and args.rank0_exit:
    sys.exit(args.rank0_exit)
if args.hold:
    while True:
        time.sleep(1)
dist.destroy_process_group()
