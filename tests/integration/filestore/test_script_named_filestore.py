"""Issue 25 item 1: the seed's stale FileStore when only the script knows the path. A 2-rank torch
1.13 gloo job whose script builds init_method=f"file://{path}" from its own plain argument is run
under `ddp-launch run`; its supervisor is SIGKILLed after the first all_reduce; the same command is
run again. Nothing in the rerun's command line or environment says file://, so `run` cannot check
the file before the launch: the ranks meet on the earlier run's keys and fail (gloo dials a dead
peer, or the store-based barrier counts 4 of 2). The supervisor finds the file its ranks used and
  (a) with --max-restarts 0, the summary names it, its age and `ddp-launch clean PATH`;
  (b) with --max-restarts 1, removes it (provably stale) and restarts at once: the rerun succeeds;
  (c) leaves it alone, reported as in use, while a live process outside the run holds it open.
torch's own ranks may remove the file as they exit (the last FileStore instance destroyed deletes it:
both ranks of the failed rerun usually get that far), so the tests assert on what ddp-launch says and
does, not on whether the file is still there afterwards."""
import os
import subprocess
import tempfile

from fs_helpers import leave_killed_run_filestore, open_holder, script_named_command
from harness import check, check_events_schema, read_events, run_tests, restarts

RERUN_TIMEOUT_S = 240


def rerun(path, *extra):
    try:
        return subprocess.run(script_named_command(path, *extra), capture_output=True, text=True,
                              timeout=RERUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the rerun did not end within {RERUN_TIMEOUT_S}s: {e.stderr}") from e


def test_summary_names_the_stale_file_its_age_and_clean():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "sharedfile")
        leave_killed_run_filestore(path)
        events = os.path.join(tmp, "events.jsonl")
        r = rerun(path, "--max-restarts", "0", "--events", events)
        check(r.returncode != 0, f"the rerun on a stale FileStore succeeded?\n{r.stdout}\n{r.stderr}")
        err = r.stderr
        check(f"FileStore {path} (the workers' argument '{path}' names it" in err,
              f"the summary does not name the file:\n{err}")
        check("is stale: it was there before this run started" in err, f"no stale verdict:\n{err}")
        check("last written " in err and " before this run started" in err, f"the summary gives no age:\n{err}")
        check(f"`ddp-launch clean {path}`" in err, f"the summary does not name `ddp-launch clean PATH`:\n{err}")
        check("removed the stale FileStore" not in err, f"--max-restarts 0 removed the file: only a restart may\n{err}")
        evs = read_events(events)
        check_events_schema(evs)
        found = [e for e in evs if e["event"] == "filestore_found"]
        check(len(found) == 1 and found[0]["path"] == path and found[0]["verdict"] == "stale"
              and not found[0]["removed"] and found[0]["age_s"] >= 0, f"filestore_found: {found}")


@restarts
def test_a_restart_removes_the_stale_file_and_the_rerun_succeeds():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "sharedfile")
        leave_killed_run_filestore(path)
        r = rerun(path, "--max-restarts", "1")
        check(r.returncode == 0, f"the rerun with --max-restarts 1 failed: rc={r.returncode}\n{r.stdout}\n{r.stderr}")
        for rank in (0, 1):
            check(f"[rank {rank}]: READY sum=3" in r.stdout, f"rank {rank} did not finish: {r.stdout}\n{r.stderr}")
        line = [ln for ln in r.stderr.splitlines() if "failed on a FileStore an earlier run left" in ln]
        check(len(line) == 1 and path in line[0] and "at once" in line[0] and "attempt 1" in line[0]
              and ("removed the stale FileStore" in line[0] or "is gone (the ranks' torch removed it" in line[0]),
              f"no one line saying the stale file is gone and the restart is at once:\n{r.stderr}")


def test_a_file_held_outside_the_run_is_in_use_and_kept():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "sharedfile")
        leave_killed_run_filestore(path)
        events = os.path.join(tmp, "events.jsonl")
        # Holds it open; its command line does not name it (the path comes on stdin).
        holder = open_holder(path)
        try:
            r = rerun(path, "--max-restarts", "1", "--events", events)
        finally:
            holder.kill()
        err = r.stderr
        # Attempt 0 fails on the earlier run's keys; attempt 1 may succeed, as the ranks' torch deletes the
        # file as they exit (the holder keeps only its own descriptor): that is torch's doing, not ddp-launch's.
        check("attempt 0 failed" in err, f"the rerun's attempt 0 did not fail on the stale keys:\n{err}")
        check(f"FileStore {path}" in err and "is in use by a process outside this run" in err,
              f"not reported as in use:\n{err}")
        check(f"pid {holder.proc.pid}" in err, f"the holder is not named:\n{err}")
        check("removed the stale FileStore" not in err and "at once" not in err, f"a file in use was removed:\n{err}")
        found = [e for e in read_events(events) if e["event"] == "filestore_found"]
        check(found and all(e["verdict"] == "in_use" and not e["removed"] for e in found), f"filestore_found: {found}")


if __name__ == "__main__":
    run_tests([test_summary_names_the_stale_file_its_age_and_clean,
               test_a_restart_removes_the_stale_file_and_the_rerun_succeeds,
               test_a_file_held_outside_the_run_is_in_use_and_kept])
