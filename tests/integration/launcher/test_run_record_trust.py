"""Run records are trusted only when this user wrote them (issue 25, 3.1). Another local user could
plant /tmp/ddp-launch-<id>-node0.processes.json naming any process: `run --rdzv-id <id>` swept it
as a killed predecessor's worker (SIGKILL; as root, a third user's process), and `clean --force`
took any live pid in such a record naming the FileStore for a worker of a dead run and ended it.
Now a record counts only when its owner and its directory's owner are this user (or root), a pid
is signalled only when its start time, group and user are the recorded worker's, and the rest is
reported, never signalled. Real `ddp-launch run` and `clean`, real victims; the other-user cases
need root (setpriv, chown), else they are skipped."""
import json
import os
import subprocess
import tempfile
import time

from filestore.fs_helpers import killed_rendezvous_bytes, write_file
from harness import DDP_LAUNCH, check, run_tests

ROOT = os.geteuid() == 0
NOBODY = 65534
DEAD = 2147483000  # above any pid_max: a supervisor that is gone


def stat_of(pid):
    """(pgid, start time) from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[2]), int(fields[19])


def victim(as_nobody=False):
    """A live process leading its own group (as a worker does), of this user or of nobody."""
    argv = ["sleep", "300"]
    if as_nobody:
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    p = subprocess.Popen(argv, start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # setpriv execs sleep: wait until the pid runs it as nobody
        try:
            with open(f"/proc/{p.pid}/comm") as f:
                if f.read().strip() == "sleep":
                    break
        except OSError:
            pass
        time.sleep(0.05)
    return p


def record_naming(p, filestore=None, start_time=None):
    pgid, start = stat_of(p.pid)
    return json.dumps({"supervisor": {"pid": DEAD, "pgid": DEAD, "start_time": 1},
                       "guardian": {"pid": 0, "pgid": 0, "start_time": 0}, "attempt": 0, "cgroups": [],
                       "filestores": [filestore] if filestore else [],
                       "workers": [{"pid": p.pid, "pgid": pgid, "start_time": start_time or start, "rank": 0,
                                    "local_rank": 0}]})


def run_with_id(tmp, run_id):
    env = {**os.environ, "TMPDIR": tmp}
    return subprocess.run([DDP_LAUNCH, "run", "--rdzv-id", run_id, "--no-python", "true"], capture_output=True,
                          text=True, timeout=60, env=env)


def stop(*procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def test_run_sweeps_no_record_another_user_planted():
    if not ROOT:
        print("skipped: needs root to plant a record as another user")
        return
    with tempfile.TemporaryDirectory(prefix="ddp-trust-") as tmp:
        mine = victim()
        try:
            planted = os.path.join(tmp, "ddp-launch-planted-node0.processes.json")
            write_file(planted, record_naming(mine).encode())
            os.chown(planted, NOBODY, NOBODY)
            r = run_with_id(tmp, "planted")
            check(r.returncode == 0, f"run: rc {r.returncode} {r.stderr[-2000:]}")
            time.sleep(0.3)
            check(mine.poll() is None, f"the planted record got pid {mine.pid} killed: {r.stderr[-2000:]}")
            check("not acting on" in r.stderr and planted in r.stderr and f"uid {NOBODY}" in r.stderr,
                  f"the planted record is not reported: {r.stderr[-2000:]}")
        finally:
            stop(mine)


def test_run_signals_no_pid_of_another_user_or_another_start_time():
    with tempfile.TemporaryDirectory(prefix="ddp-trust-") as tmp:
        cases = [("restarted", victim(), lambda p: record_naming(p, start_time=stat_of(p.pid)[1] - 7))]
        if ROOT:
            cases.append(("stranger", victim(as_nobody=True), record_naming))
        try:
            for run_id, p, text in cases:
                write_file(os.path.join(tmp, f"ddp-launch-{run_id}-node0.processes.json"), text(p).encode())
                r = run_with_id(tmp, run_id)
                check(r.returncode == 0, f"{run_id}: rc {r.returncode} {r.stderr[-2000:]}")
                time.sleep(0.3)
                check(p.poll() is None, f"{run_id}: pid {p.pid}, not the recorded worker, was killed")
                check(f"left pid {p.pid} alone" in r.stderr, f"{run_id}: not reported: {r.stderr[-2000:]}")
        finally:
            stop(*[p for _, p, _ in cases])


def test_clean_force_ends_no_process_a_planted_record_names():
    if not ROOT:
        print("skipped: needs root to plant a record as another user")
        return
    with tempfile.TemporaryDirectory(prefix="ddp-trust-") as tmp:
        store = os.path.join(tmp, "rdzv")
        write_file(store, killed_rendezvous_bytes())
        mine = victim()
        try:
            planted = os.path.join(tmp, "ddp-launch-x-node0.processes.json")
            write_file(planted, record_naming(mine, filestore=store).encode())
            os.chown(planted, NOBODY, NOBODY)
            r = subprocess.run([DDP_LAUNCH, "clean", "--force", store], capture_output=True, text=True, timeout=60,
                               env={**os.environ, "TMPDIR": tmp})
            time.sleep(0.3)
            check(mine.poll() is None, f"clean --force ended pid {mine.pid} on a planted record's word: "
                                       f"{r.stdout}{r.stderr}")
            check(f"ended pid {mine.pid}" not in r.stdout, r.stdout)
            check("not reading" in r.stderr and planted in r.stderr, f"the planted record is not reported: {r.stderr}")
            check(os.path.exists(planted), "another user's record was removed")
        finally:
            stop(mine)


if __name__ == "__main__":
    run_tests([test_run_sweeps_no_record_another_user_planted,
               test_run_signals_no_pid_of_another_user_or_another_start_time,
               test_clean_force_ends_no_process_a_planted_record_names])
