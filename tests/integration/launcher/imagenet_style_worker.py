"""A training script written like PyTorch's ImageNet example (examples/imagenet/main.py): the process
group comes from argv (--dist-url, --dist-backend, --world-size, --rank), not from the environment.
A tiny model on synthetic data instead of ResNet-50 on ImageNet; DistributedDataParallel with a
DistributedSampler, SGD, a few epochs. Prints the loss of every epoch and a checksum of the
parameters (all ranks must agree: gradients were averaged)."""
import argparse
import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

parser = argparse.ArgumentParser(description="PyTorch ImageNet Training (tiny)")
parser.add_argument("--epochs", default=4, type=int)
parser.add_argument("-b", "--batch-size", default=32, type=int, help="total over all ranks, as in the example")
parser.add_argument("--lr", "--learning-rate", default=0.1, type=float, dest="lr")
parser.add_argument("--world-size", default=-1, type=int)
parser.add_argument("--rank", default=-1, type=int)
parser.add_argument("--dist-url", default="tcp://224.66.41.62:23456", type=str)
parser.add_argument("--dist-backend", default="nccl", type=str)
args = parser.parse_args()

dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url, world_size=args.world_size,
                        rank=args.rank, timeout=datetime.timedelta(seconds=60))
torch.manual_seed(0)  # the same initial weights and data on every rank
inputs = torch.randn(256, 8)
targets = (inputs.sum(dim=1) > 0).long()
dataset = TensorDataset(inputs, targets)
sampler = DistributedSampler(dataset, num_replicas=args.world_size, rank=args.rank)
loader = DataLoader(dataset, batch_size=args.batch_size // args.world_size, sampler=sampler)
model = DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9)

for epoch in range(args.epochs):
    sampler.set_epoch(epoch)
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"rank {args.rank} epoch {epoch} loss {total / len(loader):.4f}", flush=True)
checksum = sum(p.detach().double().sum().item() for p in model.parameters())
print(f"rank {args.rank} of {args.world_size} trained checksum {checksum:.6f}", flush=True)
dist.destroy_process_group()
