"""examples/imagenet_style.py: initialised like PyTorch's ImageNet example (--dist-url --dist-backend
--world-size --rank, filled in by the supervisor's argv placeholders, rank 0 hosting the store), its
own progress format turned into metrics by --metric: loss falls at 1 and 2 ranks."""
import os
import tempfile

from example_runs import EXAMPLES, check, check_loss_falls, check_report, launch
from harness import run_tests

SCRIPT = os.path.join(EXAMPLES, "imagenet_style.py")
DIR = tempfile.mkdtemp(prefix="ddp-example-imagenet-")
ARGV = [SCRIPT, "--dist-url", "{dist_url}", "--dist-backend", "{backend}", "--world-size", "{world_size}",
        "--rank", "{rank}", "--steps-per-epoch", "24"]
METRIC = ["--metric", r"loss=Loss\s+([0-9.e+-]+)"]


def run_at(nproc, batch):
    run_dir = os.path.join(DIR, f"ranks-{nproc}")
    r = launch(run_dir, "--nproc-per-node", str(nproc), "--store", "rank0", *METRIC, *ARGV, "-b", str(batch))
    check("Epoch: [0][24/24]" in r.stdout and "Loss " in r.stdout, f"no progress lines: {r.stdout[-2000:]}")
    check_loss_falls(run_dir, f"{nproc} rank(s)")
    return run_dir


def test_loss_falls_at_one_and_two_ranks():
    one = run_at(1, 32)
    two = run_at(2, 16)
    check_report([one, two], os.path.join(DIR, "loss.svg"))


try:
    run_tests([test_loss_falls_at_one_and_two_ranks])
finally:
    import shutil
    shutil.rmtree(DIR, ignore_errors=True)
