"""A rank for the node-loss benchmark (bench/run_hang_bench.py), run unchanged by ddp-launch and by
torchrun: it records when it started and when its process group was ready, then all_reduces
forever (a training loop). When a node is lost its peers' all_reduce fails, they exit, and their
launcher starts the next round. One JSON line per start, appended to $NODE_LOSS_LOG (one file per
node, set in the launcher's environment, so the bench knows whose rank it was)."""
import datetime
import json
import os
import time

started = time.time()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
ready = time.time()
with open(os.environ["NODE_LOSS_LOG"], "a") as f:
    f.write(json.dumps({"pid": os.getpid(), "rank": dist.get_rank(), "world": dist.get_world_size(),
                        "restart": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
                        "started": started, "ready": ready}) + "\n")
t = torch.zeros(1)
while True:
    dist.all_reduce(t)
    time.sleep(0.05)
