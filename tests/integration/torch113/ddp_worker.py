"""One rank of a real DDP job meeting through the agent store (our `ddp-launch store`).

Run with /usr/bin/python3 under the env a launcher sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE=True, TORCHELASTIC_RESTART_COUNT). Prints "imported",
waits for "go" on stdin (so slow torch imports cannot eat the rendezvous timeout), then prints
"allreduce=<sum>" and "result=<json>" with a checksum of its final parameters and their largest
deviation from a single-process run of the same training.
"""
import datetime
import hashlib
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

INIT_TIMEOUT = datetime.timedelta(seconds=30)
STEPS = 3
LR = 0.1


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(4, 8, generator=g)
    return x, x.sum(dim=1, keepdim=True) * (rank + 1)


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    print("imported", flush=True)
    if sys.stdin.readline().strip() != "go":
        sys.exit("driver went away before saying go")

    dist.init_process_group("gloo", init_method="env://", timeout=INIT_TIMEOUT)
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    print(f"allreduce={total.item()}", flush=True)

    # Each rank starts from different weights: DDP must broadcast rank 0's at construction.
    model = DistributedDataParallel(make_model(seed=rank))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(STEPS):
        opt.zero_grad()
        x, y = batch(rank, step)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    params = flat(model.module)

    # DDP averages gradients over ranks: the same as one process minimising the mean of the ranks'
    # losses from rank 0's weights.
    ref = make_model(seed=0)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=LR)
    for step in range(STEPS):
        ref_opt.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(ref(x), y) for x, y in (batch(r, step) for r in range(world)))
        (loss / world).backward()
        ref_opt.step()

    print("result=" + json.dumps({
        "rank": rank,
        "allreduce": total.item(),
        "checksum": hashlib.sha256(params.numpy().tobytes()).hexdigest(),
        "deviation": (params - flat(ref)).abs().max().item(),
        "moved": (params - flat(make_model(seed=0))).abs().max().item(),
    }), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
