"""The worker run_launcher_bench.py starts under each launcher. It logs its own timestamps
(time.time(), one JSON line per event, appended to the file in $BENCH_LOG) so that every launcher
is measured the same way, from inside the workers.

  --mode trivial  init_process_group (gloo, env://), all_reduce, exit 0
  --mode death    attempt 0: rank 1 exits 1 right after init, rank 0 sleeps until SIGTERM
                  (its handler logs the time and exits); later attempts: like trivial
  --mode sleep    no torch: sleep until SIGTERM (for watching many ranks on few cores)
"""
import time

STARTED = time.time()  # first statement: what the launcher's spawn costs ends here

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["trivial", "death", "sleep"], required=True)
args = ap.parse_args()

RANK = int(os.environ["RANK"])
ATTEMPT = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
LOG = os.environ["BENCH_LOG"]


def log(event, t=None):
    line = json.dumps({"event": event, "rank": RANK, "attempt": ATTEMPT, "pid": os.getpid(),
                       "time": time.time() if t is None else t}) + "\n"
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, line.encode())  # one write per line: lines from all ranks interleave whole
    os.close(fd)


def on_sigterm(signo, frame):
    log("sigterm")
    os._exit(128 + signo)


signal.signal(signal.SIGTERM, on_sigterm)
log("started", STARTED)

if args.mode == "sleep":
    while True:
        time.sleep(3600)

import datetime  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
log("init_done")
if args.mode == "death" and ATTEMPT == 0:
    if RANK == 1:
        log("failing")
        os._exit(1)
    while True:
        time.sleep(3600)
t = torch.ones(1)
dist.all_reduce(t)
log("finished")
sys.exit(0)
