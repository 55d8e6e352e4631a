"""The seed's script as the issue tells it: the FileStore path is a plain argument of the script
(no file:// anywhere in its command line or environment) and the script builds the URL itself:
init_process_group("gloo", init_method=f"file://{path}"), RANK and WORLD_SIZE from the launcher,
then an all_reduce; prints READY sum=<n> pid=<pid>.

argv: PATH [TIMEOUT_S]. If a file named "hold" sits beside PATH, it then sleeps (the test SIGKILLs
the launcher); otherwise it destroys the group and exits 0. So two runs share one command."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

path = sys.argv[1]
timeout_s = float(sys.argv[2]) if len(sys.argv) > 2 else 20
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method=f"file://{path}", world_size=world, rank=rank,
                        timeout=datetime.timedelta(seconds=timeout_s))
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"READY sum={t.item():g} pid={os.getpid()}", flush=True)
if os.path.exists(os.path.join(os.path.dirname(path), "hold")):
    time.sleep(600)  # the test SIGKILLs the launcher long before this
dist.destroy_process_group()
