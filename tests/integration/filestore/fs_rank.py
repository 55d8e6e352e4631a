"""One rank of a 2-rank torch gloo job that meets through init_method="file://PATH".

argv: PATH RANK TIMEOUT_S MODE. Prints IMPORTED once torch is loaded, then waits for a line on
stdin so that the test can start both ranks' init_process_group together (importing torch takes
seconds and varies). After init and an all_reduce it prints READY sum=<n>; MODE "hold" then
sleeps until the test SIGKILLs it, MODE "finish" destroys the group and exits 0.
"""
import datetime
import sys
import time

import torch
import torch.distributed as dist

path, rank, timeout_s, mode = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
print("IMPORTED", flush=True)
sys.stdin.readline()
dist.init_process_group("gloo", init_method=f"file://{path}", world_size=2, rank=rank,
                        timeout=datetime.timedelta(seconds=timeout_s))
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"READY sum={t.item():g}", flush=True)
if mode == "hold":
    time.sleep(600)  # the test SIGKILLs us long before this
dist.destroy_process_group()
