"""resnet-trainer (the C++ worker SDK's example) under `ddp-launch run`: the loss falls at 1 and 2
ranks, the replicas end equal, a killed rank resumes from the checkpoint with the step count
continuing, and an uncaught exception reaches the supervisor's summary through the error file."""
import json
import os
import re
import subprocess
import tempfile

from harness import DDP_LAUNCH, check, run_tests

TRAINER = os.path.join(os.environ.get("DDP_BIN_DIR", "build/bin"), "resnet-trainer")
# Small enough for seconds per run on two loaded cores; the demo and bench/scaling use the defaults.
TINY = ["--image-size", "16", "--width", "8", "--classes", "16", "--dataset-size", "1024", "--noise", "0.8",
        "--batch-size", "16", "--lr", "0.05", "--log-every", "5"]
METRIC = re.compile(r"^\[rank (\d+)\]: @ddp-metric (.*)$")
FINAL = re.compile(r"^\[rank (\d+)\]: final step=(\d+) loss=([0-9.]+) param_hash=([0-9a-f]+)")


def launch(nproc, *args, extra_launch=(), env=None, timeout=240):
    # An explicit run directory: the default temporary one is kept when metrics were recorded.
    with tempfile.TemporaryDirectory(prefix="trainer-run-") as run_dir:
        cmd = [DDP_LAUNCH, "run", "--nproc-per-node", str(nproc), "--run-dir", run_dir, *extra_launch,
               "--no-python", TRAINER, *TINY, *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})


def metrics(stdout):
    """rank -> list of {key: float} in output order."""
    out = {}
    for line in stdout.splitlines():
        m = METRIC.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append(
                {k: float(v) for k, v in (kv.split("=", 1) for kv in m.group(2).split())})
    return out


def finals(stdout):
    return {int(m.group(1)): (int(m.group(2)), float(m.group(3)), m.group(4))
            for m in map(FINAL.match, stdout.splitlines()) if m}


def check_loss_falls(series, rank, what):
    check(len(series) >= 3, f"{what}: rank {rank} printed {len(series)} metric lines")
    first, last = series[0]["loss"], series[-1]["loss"]
    check(last < 0.8 * first, f"{what}: rank {rank} loss {first:.4f} -> {last:.4f} did not fall")
    check(all(s["samples_per_s"] > 0 for s in series), f"{what}: samples_per_s missing")


def test_one_rank_trains():
    r = launch(1, "--steps", "30")
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
    m = metrics(r.stdout)
    check(list(m) == [0], f"metric lines from ranks {list(m)}")
    check([int(s["step"]) for s in m[0]] == [5, 10, 15, 20, 25, 30], f"steps {[s['step'] for s in m[0]]}")
    check_loss_falls(m[0], 0, "1 rank")
    check(0 in finals(r.stdout), f"no final line: {r.stdout[-2000:]}")


def test_two_ranks_train_and_agree_with_a_global_batch():
    # DDP_GLOBAL_BATCH as `run --global-batch 32` exports it: split into 16 per rank.
    r = launch(2, "--steps", "30", env={"DDP_GLOBAL_BATCH": "32"})
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
    check("per-rank batch 16, global batch 32" in r.stderr, f"batch policy not applied: {r.stderr[-2000:]}")
    m = metrics(r.stdout)
    check(sorted(m) == [0, 1], f"metric lines from ranks {sorted(m)}")
    for rank in (0, 1):
        check_loss_falls(m[rank], rank, "2 ranks")
    f = finals(r.stdout)
    check(sorted(f) == [0, 1], f"final lines: {f}")
    check(f[0][2] == f[1][2], f"replicas differ after training: param_hash {f[0][2]} vs {f[1][2]}")


def test_killed_rank_resumes_from_checkpoint():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        r = launch(2, "--steps", "25", "--checkpoint-dir", os.path.join(d, "ckpt"), "--checkpoint-every", "10",
                   "--fail-at-step", "13", "--fail-rank", "1", "--fail-mode", "kill",
                   extra_launch=["--max-restarts", "1", "--events", ev])
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
        events = [json.loads(x) for x in open(ev) if x.strip()]
        killed = [e for e in events if e["event"] == "rank_exited" and e["attempt"] == 0 and e["rank"] == 1]
        check(killed and killed[0]["signal"] == "SIGKILL", f"rank 1 was not SIGKILLed on attempt 0: {killed}")
        check([e["attempt"] for e in events if e["event"] == "restarting"] == [1],
              f"expected one restart: {[e['event'] for e in events]}")
        for rank in (0, 1):
            check(f"[rank {rank}]: resumed from checkpoint at step 10 (attempt 1)" in r.stdout,
                  f"rank {rank} did not resume at step 10: {r.stdout[-3000:]}")
        # Attempt 0 logged steps 5 and 10, then died after 13; attempt 1 continues at 15, not 5.
        for rank in (0, 1):
            lines = [ln for ln in r.stdout.splitlines() if ln.startswith(f"[rank {rank}]: ")]
            resume = next(i for i, ln in enumerate(lines) if "resumed from checkpoint" in ln)
            after = [int(float(re.search(r"step=(\d+)", ln).group(1))) for ln in lines[resume:] if "@ddp-metric" in ln]
            check(after == [15, 20, 25], f"rank {rank}: steps after the resume {after}, expected [15, 20, 25]")
        f = finals(r.stdout)
        check(sorted(f) == [0, 1] and f[0][0] == 25, f"final lines: {f}")
        check(f[0][2] == f[1][2], f"replicas differ after the resumed run: {f[0][2]} vs {f[1][2]}")


def test_uncaught_exception_reaches_the_summary():
    r = launch(2, "--steps", "10", "--fail-at-step", "3", "--fail-rank", "1", "--fail-mode", "throw")
    check(r.returncode != 0, "the job succeeded despite an uncaught exception")
    check("error file: std::runtime_error: injected failure after step 3" in r.stderr,
          f"the error file's message is not in the summary: {r.stderr[-3000:]}")
    check(re.search(r"Root cause: rank 1 .*exited with code 1", r.stderr) is not None,
          f"rank 1 is not the root cause: {r.stderr[-3000:]}")


if __name__ == "__main__":
    check(os.access(TRAINER, os.X_OK), f"{TRAINER} not built (needs libtorch-dev)")
    run_tests([test_one_rank_trains, test_two_ranks_train_and_agree_with_a_global_batch,
               test_killed_rank_resumes_from_checkpoint, test_uncaught_exception_reaches_the_summary])
