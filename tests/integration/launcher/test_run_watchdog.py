"""The rendezvous watchdog when the supervisor does not host the store: `--store rank0` (the
script's rank 0 hosts a TCPStore) and `--store file` (a FileStore). One rank never initialises;
the attempt fails within the --rdzv-timeout naming it and what it printed last (a look that finds
no rank waiting yet, rank 0 still importing torch, is repeated after another period)."""
import json
import os
import re
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, check, run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "allreduce_worker.py")


def run_stuck(store, dist_url):
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        start = time.monotonic()
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--nproc-per-node", "2",
                            "--store", store, "--rdzv-timeout", "4", "--shutdown-grace", "2", WORKER,
                            "--dist-url", dist_url, "--world-size", "{world_size}", "--rank", "{rank}",
                            "--stuck-rank", "1"], capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - start
        with open(ev) as f:
            events = [json.loads(line) for line in f if line.strip()]
    check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
    # rank 0 gives up by itself after its own 60 s store timeout: the watchdog must be first
    check(elapsed < 55, f"took {elapsed:.1f}s with a 4 s rendezvous timeout")
    timeouts = [x for x in events if x["event"] == "rendezvous_timeout"]
    check(len(timeouts) == 1 and timeouts[0]["missing_local_ranks"] == [1], f"events: {timeouts}")
    check("Root cause: rendezvous not complete after 4 s" in r.stderr, f"summary: {r.stderr}")
    check("stuck before init_process_group" in r.stderr, f"the missing rank's last output is not shown: {r.stderr}")
    return r.stderr, timeouts[0]


def test_rank0_store_names_the_rank_that_never_connected():
    err, event = run_stuck("rank0", "{dist_url}")
    check(re.search(r"1 of 2 ranks reached rank 0's store at 127\.0\.0\.1:\d+", err), f"count: {err}")
    check(event["arrived"] == 1, f"the count from rank 0's store: {event}")
    check(re.search(r"rank 1 \(pid \d+\) never connected", err), f"missing rank not named: {err}")


def test_filestore_names_the_rank_that_never_arrived():
    err, _ = run_stuck("file", "{filestore_url}")
    check(re.search(r"reached the FileStore \S+filestore", err), f"where: {err}")
    check(re.search(r"rank 1 \(pid \d+\) never reached the FileStore", err), f"missing rank not named: {err}")


run_tests([
    test_rank0_store_names_the_rank_that_never_connected,
    test_filestore_names_the_rank_that_never_arrived,
])
