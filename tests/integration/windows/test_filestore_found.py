"""Issue 25 items 1 and 3.1 on Windows, under Wine.

Item 1: the supervisor finds the FileStore its ranks use when only the ranks' own code names it.
Each rank (ddp-test-child.exe hold-in DIR NAME) opens DIR\\NAME, a path it joins itself, so no
argument or variable names the file; rank 0 fails after 1 s while rank 1 still holds it. The
supervisor reads rank 1's open files from the system's handle table (platform/windows/proc.cpp's
open_files: Wine keeps that table, so this runs the Windows path itself) and the summary names the
file, its age and `ddp-launch clean PATH`. Whether a process outside the run holds the file is asked
of the Restart Manager, which under Wine is a stub that reports no one: a pass here proves nothing
about that path. What Wine does exercise is the fallback beside it: a holder whose command line
names the file keeps it "in use" (second test).

Item 3.1: a run record naming a live process is acted on only when the process provably is the
recorded worker (start time and this user's token); any other live pid is reported, never ended.
Wine runs every process as one user with one owner for every file: another user's record, directory
or process cannot be made here (the owner decision is unit-tested with injected SIDs:
tests/unit/platform/test_files.cpp)."""
import json
import os
import subprocess
import sys
import tempfile
import time

from harness import LineReader, check, run_tests
from wine import CHILD, alive_windows, run_exe, wine_command, windows_path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "filestore"))
from fs_helpers import killed_rendezvous_bytes, write_file  # noqa: E402


def leave_stale(tmp):
    path = os.path.join(tmp, "store")
    write_file(path, killed_rendezvous_bytes())
    time.sleep(1.5)  # created well before the run starts (its birth time proves the age)
    return path


def run_hold_in(tmp, *extra):
    # --shutdown-grace 2: Wine does not deliver the teardown's Ctrl-Break, so rank 1 (holding the file
    # for 60 s) would be ended only when the default 30 s grace ran out.
    return run_exe("run", "--nproc-per-node", "2", "--max-restarts", "0", "--shutdown-grace", "2", *extra,
                   "--no-python", CHILD, "hold-in", windows_path(tmp), "store", "60000", timeout=180)


def test_a_file_only_the_ranks_name_is_found_by_their_handles():
    with tempfile.TemporaryDirectory(prefix="ddp-win-found-") as tmp:
        path = leave_stale(tmp)
        r = run_hold_in(tmp)
        err = r.stderr
        check(r.returncode != 0, f"rank 0 failed, yet exit {r.returncode}: {err}")
        wpath = windows_path(path)
        check(f"FileStore {wpath} (a rank had it open" in err, f"the summary does not name the file:\n{err}")
        check("before this run started" in err, f"the summary gives no age:\n{err}")
        check(f"`ddp-launch clean {wpath}`" in err, f"no `ddp-launch clean PATH`:\n{err}")


def test_a_holder_outside_the_run_that_names_it_keeps_it_in_use():
    # The Restart Manager (Wine: a stub) is not what proves this here: the holder's command line is.
    with tempfile.TemporaryDirectory(prefix="ddp-win-found-") as tmp:
        path = leave_stale(tmp)
        holder = subprocess.Popen(wine_command(CHILD, "hold", windows_path(path), "120000"), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        try:
            LineReader(holder.stdout, holder, "holder").wait_for("holding", 60, "the holder", prefix=True)
            r = run_hold_in(tmp)
        finally:
            holder.kill()
            holder.wait()
        err = r.stderr
        check(f"FileStore {windows_path(path)} (a rank had it open" in err, f"the file is not named:\n{err}")
        check("is in use by a process outside this run" in err, f"not reported in use:\n{err}")
        check(os.path.exists(path), "a file in use was removed")


def start_tree(tmp):
    """Live processes of ours: ddp-test-child.exe tree and its grandchild, as [("PID", start time)]."""
    out = os.path.join(tmp, "tree.txt")
    subprocess.Popen(wine_command(CHILD, "tree", "120000", windows_path(out)), stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (os.path.exists(out) and os.path.getsize(out) > 0):
        time.sleep(0.2)
    check(os.path.exists(out), "ddp-test-child tree wrote no pids")
    return [(pid, int(start)) for pid, start in (p.split(":") for p in open(out).read().split())]


def plant(log_dir, procs):
    rec = {"supervisor": {"pid": 4000000, "pgid": 4000000, "start_time": 1}, "guardian": {}, "attempt": 0,
           "cgroups": [], "filestores": [],
           "workers": [{"pid": int(pid), "pgid": int(pid), "start_time": start, "rank": i, "local_rank": i}
                       for i, (pid, start) in enumerate(procs)]}
    with open(os.path.join(log_dir, "processes.json"), "w") as f:
        json.dump(rec, f)


def sweep(logs):
    r = run_exe("run", "--log-dir", windows_path(logs), "--no-python", CHILD, "exit", "0", timeout=120)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    return r.stderr


def test_a_record_naming_a_live_pid_with_another_start_time_is_reported_not_acted_on():
    with tempfile.TemporaryDirectory(prefix="ddp-win-rec-") as tmp:
        logs = os.path.join(tmp, "logs")
        os.makedirs(logs)
        procs = start_tree(tmp)
        (pid, start), _ = procs
        try:
            plant(logs, [(pid, start + 1)])  # the pid, but not the process the record's run started
            err = sweep(logs)
            check(f"left pid {pid} alone" in err, f"the spared pid is not reported:\n{err}")
            check(alive_windows([f"{pid}:{start}"]) == [pid], "a process the record does not prove was ended")
            plant(logs, procs)  # now they are the recorded workers: swept
            err = sweep(logs)
            check("swept 2 process(es)" in err, f"the recorded workers were not swept:\n{err}")
        finally:
            if alive_windows([f"{p}:{s}" for p, s in procs]):
                plant(logs, procs)
                sweep(logs)


run_tests([
    test_a_file_only_the_ranks_name_is_found_by_their_handles,
    test_a_holder_outside_the_run_that_names_it_keeps_it_in_use,
    test_a_record_naming_a_live_pid_with_another_start_time_is_reported_not_acted_on,
])
