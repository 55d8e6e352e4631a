"""examples/train_ddp.py (DistributedDataParallel, DataLoader with 2 workers, DistributedSampler,
batch/LR from the launcher's batch policy, metric lines, checkpoint + resume) under ddp-launch:
loss falls with 1 and 2 ranks, and a rank killed mid-run resumes from the checkpoint with the step
count continuing; `ddp-launch report` charts both runs."""
import os
import tempfile

from example_runs import EXAMPLES, check, check_loss_falls, check_report, launch, losses
from harness import run_tests, restarts

TRAINER = os.path.join(EXAMPLES, "train_ddp.py")
DIR = tempfile.mkdtemp(prefix="ddp-example-trainer-")


@restarts  # no restart itself: the next case reports this run next to its own
def test_one_rank_loss_falls():
    run_dir = os.path.join(DIR, "one-rank")
    r = launch(run_dir, "--global-batch", "32", TRAINER, "--steps", "24", "--checkpoint",
               os.path.join(DIR, "one.pt"))
    check("batch: global 32 = 1 rank × 32; lr × 1" in r.stderr, f"batch policy not announced: {r.stderr[-2000:]}")
    check("1 rank(s) x batch 32" in r.stdout, f"the trainer did not take the batch policy: {r.stdout[-2000:]}")
    check_loss_falls(run_dir, "1 rank")


@restarts
def test_two_ranks_loss_falls_and_killed_rank_resumes():
    run_dir = os.path.join(DIR, "two-ranks")
    ckpt = os.path.join(DIR, "two.pt")
    r = launch(run_dir, "--nproc-per-node", "2", "--per-rank-batch", "16", "--max-restarts", "1", TRAINER,
               "--steps", "24", "--checkpoint", ckpt, "--checkpoint-every", "4", "--die-at-step", "10",
               "--die-rank", "1")
    check("killing myself at step 10" in r.stdout, f"rank 1 was not killed: {r.stdout[-2000:]}")
    check("resumed from step 8" in r.stdout, f"no resume from the step-8 checkpoint: {r.stdout[-3000:]}")
    series = losses(run_dir)
    for rank in (0, 1):
        first = [s for s, _ in series.get((0, rank), [])]
        second = [s for s, _ in series.get((1, rank), [])]
        check(first and max(first) >= 10 - (rank == 0), f"rank {rank} attempt 0 steps {first}")
        check(second and min(second) == 9 and max(second) == 24, f"rank {rank} attempt 1 steps {second}: "
              "the step count must continue from the checkpoint (8)")
    check_loss_falls(run_dir, "2 ranks, one killed")
    report = check_report([os.path.join(DIR, "one-rank"), run_dir], os.path.join(DIR, "loss.svg"))
    check("two-ranks" in report and "one-rank" in report, f"report: {report}")


try:
    run_tests([test_one_rank_loss_falls, test_two_ranks_loss_falls_and_killed_rank_resumes])
finally:
    import shutil
    shutil.rmtree(DIR, ignore_errors=True)
