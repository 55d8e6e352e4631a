"""A training script initialised the way PyTorch's ImageNet example (examples/imagenet/main.py) is:
no env:// at all, the rendezvous comes from the command line. ddp-launch fills it in through its argv
placeholders, with the script's rank 0 hosting the store (--store rank0):

    ddp-launch run --nproc-per-node 2 --store rank0 --metric loss='Loss\\s+([0-9.e+-]+)' \\
        examples/imagenet_style.py --dist-url {dist_url} --dist-backend {backend} \\
        --world-size {world_size} --rank {rank} -b 32

It reports progress in that example's own format (`Epoch: [0][ 5/20]  Time ...  Loss 4.1234e+00
(4.1500e+00)  Acc@1 ...`), which the supervisor turns into metrics with --metric; the script itself
knows nothing of ddp-launch. Same synthetic data and model as train_ddp.py."""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

from synthetic_imagenet import SyntheticImageNet, TinyResNet

parser = argparse.ArgumentParser(description="PyTorch ImageNet-style Training (synthetic data)")
parser.add_argument("-j", "--workers", default=2, type=int, help="number of data loading workers")
parser.add_argument("--epochs", default=1, type=int, help="number of total epochs to run")
parser.add_argument("--steps-per-epoch", default=20, type=int, help="batches per epoch (synthetic data)")
parser.add_argument("-b", "--batch-size", default=32, type=int, help="mini-batch size per process")
parser.add_argument("--lr", "--learning-rate", default=0.05, type=float, dest="lr")
parser.add_argument("--momentum", default=0.9, type=float)
parser.add_argument("--wd", "--weight-decay", default=1e-4, type=float, dest="weight_decay")
parser.add_argument("-p", "--print-freq", default=1, type=int, help="print frequency")
parser.add_argument("--world-size", default=-1, type=int, help="number of processes for distributed training")
parser.add_argument("--rank", default=-1, type=int, help="rank for distributed training")
parser.add_argument("--dist-url", default="tcp://224.66.41.62:23456", type=str, help="url used to set up training")
parser.add_argument("--dist-backend", default="nccl", type=str, help="distributed backend")
parser.add_argument("--seed", default=0, type=int)


class AverageMeter:
    def __init__(self, name, fmt=":f"):
        self.name, self.fmt = name, fmt
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        return ("{name} {val" + self.fmt + "} ({avg" + self.fmt + "})").format(**self.__dict__)


class ProgressMeter:
    def __init__(self, num_batches, meters, prefix=""):
        digits = len(str(num_batches))
        self.batch_fmtstr = "[{:" + str(digits) + "d}/" + "{:d}".format(num_batches) + "]"
        self.meters, self.prefix = meters, prefix

    def display(self, batch):
        entries = [self.prefix + self.batch_fmtstr.format(batch)] + [str(m) for m in self.meters]
        print("\t".join(entries), flush=True)


def main():
    args = parser.parse_args()
    # As the ImageNet example does: with env:// the launcher's WORLD_SIZE and RANK fill in what the
    # command line left at -1.
    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ["WORLD_SIZE"])
    if args.dist_url == "env://" and args.rank == -1:
        args.rank = int(os.environ["RANK"])
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url, world_size=args.world_size,
                            rank=args.rank)
    torch.manual_seed(args.seed)
    model = DistributedDataParallel(TinyResNet())
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    dataset = SyntheticImageNet(size=args.steps_per_epoch * args.batch_size * args.world_size)
    sampler = DistributedSampler(dataset, num_replicas=args.world_size, rank=args.rank, drop_last=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                        drop_last=True)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        train(loader, model, optimizer, epoch, args)
    dist.destroy_process_group()


def train(loader, model, optimizer, epoch, args):
    batch_time, data_time = AverageMeter("Time", ":6.3f"), AverageMeter("Data", ":6.3f")
    losses, top1 = AverageMeter("Loss", ":.4e"), AverageMeter("Acc@1", ":6.2f")
    progress = ProgressMeter(len(loader), [batch_time, data_time, losses, top1], prefix=f"Epoch: [{epoch}]")
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(loader):
        data_time.update(time.time() - end)
        output = model(images)
        loss = F.cross_entropy(output, target)
        acc1 = (output.argmax(1) == target).float().mean().item() * 100
        losses.update(loss.item(), images.size(0))
        top1.update(acc1, images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end)
        end = time.time()
        if (i + 1) % args.print_freq == 0:
            progress.display(i + 1)


if __name__ == "__main__":
    main()
