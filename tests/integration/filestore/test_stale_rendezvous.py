"""The seed's case with real torch 1.13 ranks: a 2-rank gloo job meeting through file://PATH is
SIGKILLed after init + all_reduce; the FileStore it leaves breaks the next run on that PATH (spec
§11.4: store-based barrier counts 4 of 2, or gloo dials a dead peer); `ddp-launch clean PATH`
removes it and the run after that succeeds."""
import os
import tempfile
import time

from fs_helpers import clean, kill_all, start_ranks
from harness import check, run_tests

RERUN_TIMEOUT_S = 10   # the rerun's init_process_group timeout
RERUN_BOUND_S = 15     # how long after release into init the test lets the rerun fail or hang


def crash_run(path):
    """Both ranks init, all_reduce, then SIGKILL: the FileStore file stays behind."""
    ranks = start_ranks(path, 60, "hold")
    try:
        for r in ranks:
            line = r.wait_line("READY", 120, "init_process_group + all_reduce of the first run")
            check(line == "READY sum=3", f"{r.name}: all_reduce gave {line!r}, want sum=3")
    finally:
        kill_all(ranks)
    check(all(r.proc.returncode == -9 for r in ranks), "ranks were not SIGKILLed")
    check(os.path.exists(path), f"a SIGKILLed run left no FileStore at {path}")


def test_killed_run_breaks_the_next_and_clean_fixes_it():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "rdzv")
        crash_run(path)
        with open(path, "rb") as f:
            left = f.read()
        print(f"  a SIGKILLed 2-rank run left {len(left)} bytes")

        r = clean("--dry-run", path)
        check(r.returncode == 0, f"dry run on a stale file: rc={r.returncode}\n{r.stdout}{r.stderr}")
        for want in ("verdict: stale", "no cleanup/ record", "/default_pg/0/0/0 = <",
                     "/default_pg/store_based_barrier_key:1 = \"2\"", "would remove"):
            check(want in r.stdout, f"dry-run report lacks {want!r}:\n{r.stdout}")
        with open(path, "rb") as f:
            check(f.read() == left, "--dry-run changed the file")

        # The next run on the same path, both ranks released together.
        ranks = start_ranks(path, RERUN_TIMEOUT_S, "finish")
        start = time.monotonic()
        try:
            deadline = start + RERUN_BOUND_S
            while time.monotonic() < deadline and any(x.proc.poll() is None for x in ranks):
                time.sleep(0.1)
            elapsed = time.monotonic() - start
            outcome = []
            for x in ranks:
                rc = x.proc.poll()
                x.drain()
                succeeded = rc == 0 and "READY sum=3" in x.lines
                check(not succeeded, f"{x.name} of the rerun succeeded on a stale FileStore: {x.tail()}")
                errors = [ln for ln in x.lines if "Error" in ln or "error" in ln]
                outcome.append(f"{x.name}: " + (f"hung past {RERUN_BOUND_S}s" if rc is None else
                                                f"rc={rc} after {elapsed:.1f}s: {errors[-1] if errors else x.tail(2)}"))
        finally:
            kill_all(ranks)
        print("  rerun on the stale file: " + "; ".join(outcome))
        failed_fast = [x for x in ranks if x.proc.returncode not in (0, -9)]
        for x in failed_fast:
            text = "\n".join(x.lines)
            check("store based barrier" in text or "Connect" in text or "connect" in text,
                  f"{x.name} failed, but not in a way spec §11.4 describes: {x.tail()}")

        # A rerun whose ranks exit (even with an error) runs FileStore's destructor, and that
        # deletes the file; a killed one leaves it. Either way, make the stale state again.
        if not os.path.exists(path):
            print("  the failed rerun's destructors deleted the file; crashing another run")
            crash_run(path)

        r = clean(path)
        check(r.returncode == 0, f"clean of a stale file: rc={r.returncode}\n{r.stdout}{r.stderr}")
        check("removed" in r.stdout, f"clean did not say it removed the file:\n{r.stdout}")
        check(not os.path.exists(path), "clean said removed, the file is still there")

        ranks = start_ranks(path, 60, "finish")
        try:
            for x in ranks:
                line = x.wait_line("READY", 120, "init + all_reduce of the run after clean")
                check(line == "READY sum=3", f"{x.name}: {line!r}")
            for x in ranks:
                rc = x.proc.wait(timeout=60)
                check(rc == 0, f"{x.name} of the run after clean exited {rc}: {x.tail()}")
        finally:
            kill_all(ranks)
        check(not os.path.exists(path), "a clean 2-rank exit should delete its FileStore (spec §11.3)")


run_tests([test_killed_run_breaks_the_next_and_clean_fixes_it])
