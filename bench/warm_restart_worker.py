"""The warm-restart benchmark's rank (bench/run_warm_restart_bench.py): torch DDP on gloo, env://.

--kind trivial: `import torch`, a one-parameter model; --kind torchvision: what an ImageNet script
imports and builds (torchvision's resnet18 on FakeData, 64x64 images, batch 4). Each step appends
"attempt rank step wall-time" to $BENCH_OUT/steps.txt; on attempt 0, rank 1 SIGKILLs itself after
step 3 (its time first, as "kill"). Attempt 1 runs 3 steps and exits 0."""
import argparse
import os
import signal
import time

import sys  # noqa: E402

PRELOADED = "torchvision" in sys.modules  # a warm restart found it imported already
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--kind", choices=["trivial", "torchvision"], default="trivial")
args = ap.parse_args()
out = os.path.join(os.environ["BENCH_OUT"], "steps.txt")
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
rank = int(os.environ["RANK"])


def note(what):
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, f"{attempt} {rank} {what} {time.time():.6f}\n".encode())
    os.close(fd)


note(f"start-preloaded-torchvision-{PRELOADED}")
if args.kind == "torchvision":
    import torchvision  # noqa: E402
    import torchvision.transforms as transforms  # noqa: E402

    model = torchvision.models.resnet18(num_classes=10)
    data = torchvision.datasets.FakeData(size=64, image_size=(3, 64, 64), num_classes=10,
                                         transform=transforms.ToTensor())
    loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=0)
else:
    model = torch.nn.Linear(4, 1)
    loader = [(torch.randn(4, 4), torch.zeros(4, dtype=torch.long))] * 16
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step, (x, y) in enumerate(loader, start=1):
    y_hat = model(x)
    loss = torch.nn.functional.cross_entropy(y_hat, y) if args.kind == "torchvision" else y_hat.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    note(f"step{step}")
    if attempt == 0 and rank == 1 and step == 3:
        note("kill")
        os.kill(os.getpid(), signal.SIGKILL)
    if attempt == 0 and step >= 3:
        time.sleep(0.05)  # rank 0 waits in the next step's allreduce for the dead rank
    if attempt > 0 and step == 3:
        break
dist.destroy_process_group()
