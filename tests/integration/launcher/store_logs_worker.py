"""A worker for the --store file and log-flag tests. Prints one line to stdout and one to stderr
naming its rank; with --dist-url it first meets the others (gloo, e.g. a {filestore_url}) and
all_reduces; --sleep keeps it alive (after printing its pid); --fail-rank fails attempt 0."""
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--dist-url")
ap.add_argument("--world-size", type=int)
ap.add_argument("--rank", type=int)
ap.add_argument("--sleep", type=float, default=0)
ap.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 3 on attempt 0")
args = ap.parse_args()

rank = int(os.environ["RANK"])
attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "?")
if args.dist_url:
    import datetime

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=args.dist_url, world_size=args.world_size, rank=args.rank,
                            timeout=datetime.timedelta(seconds=30))
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    print(f"rank {rank} of {args.world_size} sum {t.item():g} attempt {attempt} "
          f"filestore {os.environ.get('DDP_FILESTORE_PATH')}", flush=True)
print(f"out from rank {rank}", flush=True)
print(f"err from rank {rank}", file=sys.stderr, flush=True)
if args.sleep:
    print(f"ready pid {os.getpid()}", flush=True)
    time.sleep(args.sleep)
if rank == args.fail_rank and attempt == "0":
    os._exit(3)  # like a crash: no FileStore destructor, the file keeps this attempt's keys
if args.dist_url:
    dist.destroy_process_group()
