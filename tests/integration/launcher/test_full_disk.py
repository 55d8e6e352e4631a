"""A full disk under the run directory: the ranks' logs and metrics.csv cannot hold what the workers
wrote. It is said at once (a warning line and a write_failed event per file, while the rank runs),
the ranks are never held up, the job's own exit code stands, and the end of the run says, one line
per file, how much each file lacks, with the last stderr lines kept in memory.
The disk is a real 1 MiB tmpfs: mounting needs root (CI runs the tests as root); skipped otherwise."""
import os
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, check, check_events_schema, read_events, run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "full_disk_worker.py")


def mount_small_tmpfs(where):
    os.makedirs(where)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", where], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"     skipped: cannot mount a 1 MiB tmpfs at {where} (needs root): {r.stderr.strip()}", flush=True)
        return False
    return True


def test_a_full_disk_is_said_at_once_and_counted_per_file():
    with tempfile.TemporaryDirectory() as d:
        disk = os.path.join(d, "full")
        if not mount_small_tmpfs(disk):
            return
        try:
            ev = os.path.join(d, "events.jsonl")  # not on the full disk
            run_dir = os.path.join(disk, "run")
            start = time.monotonic()
            r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--run-dir", run_dir,
                                "--nproc-per-node", "1", "--redirects", "3", WORKER, ev, "4"],
                               capture_output=True, text=True, timeout=180)
            took = time.monotonic() - start
            events = read_events(ev)
        finally:
            subprocess.run(["umount", "-l", disk], check=False)
        print(f"  run took {took:.1f} s", flush=True)
        check(r.returncode == 0, f"the worker succeeded, so must the job: exit {r.returncode}: {r.stderr[-3000:]}")
        failed = {os.path.basename(e["path"]): e for e in events if e["event"] == "write_failed"}
        check({"stdout.log", "stderr.log"} <= set(failed), f"write_failed events: {failed}")
        for name in ("stdout.log", "stderr.log"):
            e = failed[name]
            check(e["rank"] == 0 and e["attempt"] == 0 and e["error"] == "No space left on device", f"{e}")
            check(e["path"] == os.path.join(run_dir, "attempt_0", "0", name), f"{e}")
            # At once: before the rank ended (the worker waited for these events before exiting).
            exited = [x for x in events if x["event"] == "rank_exited"][0]
            check(e["time"] < exited["time"], f"{name}: reported after the rank ended")
            stream = name.split(".")[0]
            check(f"[ddp-launch] warning: cannot write rank 0's {stream} (attempt 0) {e['path']} "
                  "(No space left on device)" in r.stderr, f"no warning for {name}: {r.stderr[-3000:]}")
            check(f"rank 0's {stream} (attempt 0) {e['path']} is incomplete: " in r.stderr,
                  f"no summary line for {name}: {r.stderr[-3000:]}")
        # Each file said once at once, once at the end.
        check(r.stderr.count("warning: cannot write rank 0's stdout") == 1, f"{r.stderr[-3000:]}")
        # metrics.csv lives on the same disk: its loss is said too (not one rank's file).
        check(any(os.path.basename(p) == "metrics.csv" for p in failed), f"metrics.csv not reported: {failed}")
        check("metrics.csv is incomplete" in r.stderr or "metrics.csv was not written" in r.stderr,
              f"{r.stderr[-3000:]}")
        # The rank's last stderr lines, from memory: its file lacks them.
        tail = r.stderr[r.stderr.index("rank 0's last stderr lines (kept in memory):"):]
        check("last words 1: the disk was full" in tail and "last words 2: exiting 0" in tail, f"{tail}")
        check(took < 120, f"the run took {took:.0f} s: was a rank held up by the full disk?")
        check_events_schema(events)


run_tests([test_a_full_disk_is_said_at_once_and_counted_per_file])
