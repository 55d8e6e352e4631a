"""Runs INSIDE a torch 2.x chroot as one rank: init_process_group("gloo", init_method="env://")
against the agent store named by MASTER_ADDR/MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True), an
all_reduce, then rank 0 reports which keys the attempt left in the store.
Needs the nolibuv shim on PYTHONPATH: the agent-store path builds its TCPStore without use_libuv.
Prints `RESULT {...}`."""
import datetime
import json
import os

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=30))
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
result = {"rank": rank, "sum": t.item(), "torch_version": torch.__version__}
dist.barrier()  # both ranks' keys are in the store before rank 0 looks
if rank == 0:
    # A plain client, as the next attempt's workers would open: what would they find?
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False,
                          datetime.timedelta(seconds=10), wait_for_workers=False, use_libuv=False)
    rank_keys = [f"default_pg/0//cpu//0/{r}" for r in range(world)]
    result["num_keys"] = store.num_keys()
    result["rank_keys_present"] = store.check(rank_keys)
    result["attempt_prefixed_keys_present"] = store.check([f"worker/attempt_0/{k}" for k in rank_keys])
    if hasattr(store, "list_keys"):
        result["list_keys"] = sorted(store.list_keys())
dist.destroy_process_group()
print("RESULT " + json.dumps(result), flush=True)
