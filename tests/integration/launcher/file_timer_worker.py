"""A worker for test_file_timer.py: torch 1.13's own elastic timer client against the FIFO the
supervisor serves ($TORCHELASTIC_TIMER_FILE).

--hang-rank R --after N --sleep S: rank R sleeps S s inside `with expires(after=N)` on attempt 0
    (on later attempts its block ends at once); other ranks sleep S s without a timer.
--quick: every rank enters and leaves `with expires(after=1)` twice, then outlives the deadlines.
--garbage: before that, writes what a FIFO may get that torch never sends (noise, an endless line,
    requests naming the supervisor, pid 1 and a pid that is no process).
--child: a child process's own expires() block overruns: it is killed, this rank is not.
--idle S: after the rest, prints "idle" and sleeps S s inside a far-off expires() block.
--far A,B,...: inside nested `with expires(after=A)` blocks (one per value: 9.3e9 is past 2262,
    1e300, inf), prints "far" and sleeps --idle S s.
--report-env: prints TORCHELASTIC_TIMER_FILE (or "absent") and exits.
"""
import argparse
import os
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--hang-rank", type=int, default=-1)
p.add_argument("--after", type=float, default=2)
p.add_argument("--sleep", type=float, default=60)
p.add_argument("--quick", action="store_true")
p.add_argument("--garbage", action="store_true")
p.add_argument("--child", action="store_true")
p.add_argument("--idle", type=float, default=0)
p.add_argument("--far", default="")
p.add_argument("--report-env", action="store_true")
args = p.parse_args()

if args.report_env:
    print("TORCHELASTIC_TIMER_FILE=" + os.environ.get("TORCHELASTIC_TIMER_FILE", "absent"), flush=True)
    sys.exit(0)

import torch.distributed.elastic.timer as timer  # noqa: E402
from torch.distributed.elastic.timer import FileTimerClient  # noqa: E402

FIFO = os.environ["TORCHELASTIC_TIMER_FILE"]
timer.configure(FileTimerClient(FIFO))
rank = int(os.environ["RANK"])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])


def send(raw):
    fd = os.open(FIFO, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, raw)
    finally:
        os.close(fd)


if args.garbage:
    far_past = time.time() - 100
    send(b"not json at all\n")
    send(b'{"pid": %d, "scope_id": 7}\n' % os.getpid())
    send(b"\xff\xfe\x00binary\n")
    send(b"x" * 8000 + b"\n")  # longer than PIPE_BUF: torch's client would refuse it
    for victim in (os.getppid(), 1, 2 ** 22 + 7):  # the supervisor, init, (almost surely) nobody
        send(b'{"version": 1, "pid": %d, "scope_id": "evil", "expiration_time": %f, "signal": 9}\n'
             % (victim, far_past))
    print("garbage sent", flush=True)

if args.quick:
    for _ in range(2):
        with timer.expires(after=1):
            time.sleep(0.1)
    time.sleep(2.5)  # well past both deadlines: released, so nothing fires
    print(f"rank {rank} survived its released timers", flush=True)

if args.child:
    code = ("import os, time, torch.distributed.elastic.timer as t\n"
            "t.configure(t.FileTimerClient(os.environ['TORCHELASTIC_TIMER_FILE']))\n"
            "with t.expires(after=1, scope='child-block'):\n    time.sleep(60)\n")
    r = subprocess.run([sys.executable, "-c", code], timeout=120)
    print(f"child exited with {r.returncode}", flush=True)

if args.idle:
    with timer.expires(after=600):
        print("idle", flush=True)
        time.sleep(args.idle)

if args.far:
    import contextlib  # noqa: E402

    with contextlib.ExitStack() as blocks:
        for i, after in enumerate(float(a) for a in args.far.split(",")):
            blocks.enter_context(timer.expires(after=after, scope=f"far-{i}"))
        print("far", flush=True)
        time.sleep(args.idle)
    print(f"rank {rank} left its far-off blocks", flush=True)

if args.hang_rank >= 0:
    if rank == args.hang_rank:
        print(f"rank {rank} enters expires(after={args.after}) at {time.time():.3f}", flush=True)
        with timer.expires(after=args.after):
            time.sleep(args.sleep if attempt == 0 else 0)
        print(f"rank {rank} left its block", flush=True)
    else:
        time.sleep(args.sleep if attempt == 0 else 0)
print(f"rank {rank} done", flush=True)
