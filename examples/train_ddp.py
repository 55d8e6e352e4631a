"""The Python twin of the C++ example trainer: a small ResNet-style CNN on synthetic ImageNet-like
data with torch.nn.parallel.DistributedDataParallel, a DataLoader with workers and a
DistributedSampler. Run it under the launcher:

    ddp-launch run --nproc-per-node 2 --per-rank-batch 32 examples/train_ddp.py --steps 100

- batch and learning rate follow the launcher's batch policy (DDP_PER_RANK_BATCH, DDP_LR_SCALE,
  DDP_LR_WARMUP_STEPS; see launcher/README.md), or --batch/--lr when run without one;
- progress goes out as `@ddp-metric step=.. loss=.. samples_per_s=..` lines every --log-every steps
  (the loss averaged over those steps, as the C++ trainer does), which the supervisor records in
  <run dir>/metrics.csv (`ddp-launch report` charts them); at the end every rank prints
  `final step=.. loss=.. seconds=..` (seconds: from before init_process_group to the end);
- rank 0 checkpoints every --checkpoint-every steps; a restarted group
  (TORCHELASTIC_RESTART_COUNT > 0) resumes from the checkpoint and the step count continues.
"""
import argparse
import datetime
import os
import signal
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

from synthetic_imagenet import SyntheticImageNet, TinyResNet

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--steps", type=int, default=100, help="optimizer steps in all")
ap.add_argument("--batch", type=int, default=32, help="per-rank batch when DDP_PER_RANK_BATCH is not set")
ap.add_argument("--lr", type=float, default=0.05, help="base learning rate (multiplied by DDP_LR_SCALE)")
ap.add_argument("--workers", type=int, default=2, help="DataLoader worker processes per rank")
ap.add_argument("--dataset-size", type=int, default=8192)
ap.add_argument("--log-every", type=int, default=1, help="steps between metric lines (loss averaged over them)")
ap.add_argument("--checkpoint", default="train_ddp_checkpoint.pt", help="checkpoint file (written by rank 0)")
ap.add_argument("--checkpoint-every", type=int, default=10, help="steps between checkpoints (0: never)")
ap.add_argument("--die-at-step", type=int, default=0,
                help="testing: on the first attempt, --die-rank SIGKILLs itself after this step")
ap.add_argument("--die-rank", type=int, default=1)
args = ap.parse_args()
if args.log_every < 1:
    ap.error("--log-every must be at least 1")

started = time.perf_counter()
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
per_rank_batch = int(os.environ.get("DDP_PER_RANK_BATCH", args.batch))
lr_scale = float(os.environ.get("DDP_LR_SCALE", "1"))
warmup = int(os.environ.get("DDP_LR_WARMUP_STEPS", "0"))
torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))

torch.manual_seed(0)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)
model = DistributedDataParallel(TinyResNet())
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * lr_scale, momentum=0.9, weight_decay=1e-4)

step = 0
if attempt > 0 and os.path.exists(args.checkpoint):
    state = torch.load(args.checkpoint)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    print(f"resumed from step {step} ({args.checkpoint}, attempt {attempt})", flush=True)

dataset = SyntheticImageNet(size=args.dataset_size)
sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0, drop_last=True)
loader = DataLoader(dataset, batch_size=per_rank_batch, sampler=sampler, num_workers=args.workers,
                    drop_last=True, persistent_workers=args.workers > 0)
if rank == 0:
    print(f"training: {world} rank(s) x batch {per_rank_batch} = {world * per_rank_batch} per step, "
          f"lr {args.lr} x {lr_scale:g}, warm-up {warmup} steps, {args.workers} DataLoader workers", flush=True)


def learning_rate(s):
    base, scaled = args.lr, args.lr * lr_scale
    return scaled if warmup <= 0 or s >= warmup else base + (scaled - base) * s / warmup


def save_checkpoint(s):
    tmp = args.checkpoint + ".tmp"
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "step": s}, tmp)
    os.replace(tmp, args.checkpoint)  # a kill mid-write never leaves a torn checkpoint


model.train()
loss_sum, loss_n, last_loss = 0.0, 0, float("nan")
tick = time.perf_counter()
while step < args.steps:
    epoch, skip = divmod(step, len(loader))
    sampler.set_epoch(epoch)
    for i, (images, labels) in enumerate(loader):
        if i < skip:
            continue  # resuming mid-epoch: these batches were trained on before the checkpoint
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step)
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()  # DDP averages the gradients across ranks here
        optimizer.step()
        step += 1
        loss_sum += loss.item()
        loss_n += 1
        if step % args.log_every == 0 or step == args.steps:
            now = time.perf_counter()
            last_loss = loss_sum / loss_n
            print(f"@ddp-metric step={step} loss={last_loss:.4f} "
                  f"samples_per_s={per_rank_batch * loss_n / (now - tick):.1f} lr={learning_rate(step - 1):.4g}",
                  flush=True)
            loss_sum, loss_n, tick = 0.0, 0, now
        if rank == 0 and args.checkpoint_every and step % args.checkpoint_every == 0:
            save_checkpoint(step)
        if attempt == 0 and step == args.die_at_step and rank == args.die_rank:
            print(f"rank {rank}: killing myself at step {step} (--die-at-step)", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if step >= args.steps:
            break

dist.barrier()
print(f"final step={step} loss={last_loss:.6f} seconds={time.perf_counter() - started:.3f}", flush=True)
if rank == 0:
    print(f"done: {step} steps, last loss {last_loss:.4f}", flush=True)
dist.destroy_process_group()
