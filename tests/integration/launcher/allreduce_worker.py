"""A worker for the supervisor tests: env:// init (or --dist-url argv init), all_reduce, and
optional misbehaviour chosen by flags."""
import argparse
import atexit
import datetime
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--dump-env", help="directory: write this rank's environment as rank<N>.json")
ap.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 3 on attempt 0")
ap.add_argument("--stuck-rank", type=int, default=-1, help="this rank never reaches the store")
ap.add_argument("--raise-rank", type=int, default=-1, help="this rank raises inside a @record main")
ap.add_argument("--lose-peer-rank", type=int, default=-1,
                help="this rank raises inside a @record main, then closes its gloo connections and is slow to "
                     "exit; the other ranks fail in all_reduce on 'Connection closed by peer' and exit first")
ap.add_argument("--dist-url")
ap.add_argument("--dist-backend", default="gloo")
ap.add_argument("--world-size", type=int)
ap.add_argument("--rank", type=int)
args = ap.parse_args()
if int(os.environ.get("RANK", "-1")) == args.stuck_rank:
    print("stuck before init_process_group", flush=True)  # before torch's import: at once
    time.sleep(300)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.elastic.multiprocessing.errors import record  # noqa: E402


@record  # torchrun's error file: TORCHELASTIC_ERROR_FILE gets the exception and its traceback
def main():
    timeout = datetime.timedelta(seconds=60)
    print("entering init_process_group", flush=True)
    if args.dist_url:
        dist.init_process_group(args.dist_backend, init_method=args.dist_url, world_size=args.world_size,
                                rank=args.rank, timeout=timeout)
    else:
        dist.init_process_group("gloo", init_method="env://", timeout=timeout)
    rank = dist.get_rank()
    if args.dump_env:
        with open(os.path.join(args.dump_env, f"rank{rank}.json"), "w") as f:
            json.dump(dict(os.environ), f)
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "?")
    print(f"rank {rank} of {dist.get_world_size()} sum {t.item():g} attempt {attempt}", flush=True)
    if rank == args.fail_rank and attempt == "0":
        print("rank failing on purpose with exit code 3", file=sys.stderr, flush=True)
        sys.exit(3)
    if args.lose_peer_rank >= 0:
        if rank == args.lose_peer_rank:
            def close_then_linger():
                # After @record wrote the error file: the peers see the connections close now, and this
                # rank exits only when the supervisor's teardown stops it (as a slow shutdown would).
                dist.destroy_process_group()
                time.sleep(60)
            atexit.register(close_then_linger)
            raise ValueError(f"bad batch at step 7 on rank {rank}")
        dist.all_reduce(t)  # waits for the failed rank until its connections close
    dist.destroy_process_group()
    if rank == args.raise_rank:
        raise ValueError(f"bad batch at step 7 on rank {rank}")


main()
