"""One DDP step on gloo, initialised by env:// as torchrun's workers are: what the .deb's
`ddp-launch run` must start on a Debian 12 with python3-torch. Prints 'rank R of W: sum S
grad_agree True' (S = 1 + ... + W from an all_reduce of rank+1)."""
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([rank + 1.0])
dist.all_reduce(t)
torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
loss = model(torch.full((2, 4), float(rank + 1))).sum()
loss.backward()
grad = model.module.weight.grad.clone()
grads = [torch.zeros_like(grad) for _ in range(world)]
dist.all_gather(grads, grad)
agree = all(torch.equal(g, grads[0]) for g in grads)
print(f"rank {rank} of {world}: sum {t.item():g} grad_agree {agree} user {os.environ.get('USER', '?')}", flush=True)
dist.destroy_process_group()
