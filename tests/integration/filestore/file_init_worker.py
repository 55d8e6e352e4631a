"""A worker in the seed article's single-machine style: init_process_group(init_method=--dist-url)
with RANK and WORLD_SIZE from the launcher, then an all_reduce; prints READY sum=<n> pid=<pid>.

If a file named "hold" sits beside the FileStore path, it then sleeps (the test SIGKILLs the
launcher); otherwise it destroys the group and exits 0. So two runs share one argv."""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--dist-url", required=True)
parser.add_argument("--timeout", type=float, default=30)
args = parser.parse_args()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method=args.dist_url, world_size=world, rank=rank,
                        timeout=datetime.timedelta(seconds=args.timeout))
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"READY sum={t.item():g} pid={os.getpid()}", flush=True)
if os.path.exists(os.path.join(os.path.dirname(args.dist_url[len("file://"):]), "hold")):
    time.sleep(600)  # the test SIGKILLs the launcher long before this
dist.destroy_process_group()
