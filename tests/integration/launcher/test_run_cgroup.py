"""`ddp-launch run` with cgroups (where this host lets the supervisor create them: root, cgroup2
mounted; the memory part also with a v1 memory hierarchy or the v2 memory controller): a worker's
double-forked `setsid` daemon, which no process-group kill reaches, is killed when the job stops or
when the supervisor is SIGKILLed; a rank over --memory-limit-per-rank is reported as OOM-killed.
Where cgroups are not writable each test says it was skipped (and checks the fallback instead)."""
import os
import re
import signal
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, LineReader, check, read_events, run_tests, wait_dead

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.join(HERE, "tree_worker.py")
HOG = os.path.join(HERE, "memory_hog_worker.py")


def daemon_of(stdout):
    """(daemon pid, its session id): the worker's tree_worker.py --daemon line."""
    m = re.search(r"\]: daemon (\d+) sid (\d+)", stdout)
    check(m, f"the worker did not report its daemon: {stdout!r}")
    return int(m.group(1)), int(m.group(2))


def worker_of(stdout):
    m = re.search(r"\]: pids (\d+) (\d+)", stdout)
    check(m, f"the worker did not report its pids: {stdout!r}")
    return int(m.group(1))


def test_setsid_daemon_is_killed_when_the_job_ends():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--nproc-per-node", "1", TREE,
                            "--daemon", "--exit"], capture_output=True, text=True, timeout=60)
        daemon, sid = daemon_of(r.stdout)
        cgroup = read_events(ev)[0]["cgroup"]
        if cgroup is None:
            os.kill(daemon, signal.SIGKILL)
            print("     skipped: cgroups are not writable here (process groups alone cannot reach the daemon)")
            return
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check(sid != worker_of(r.stdout), "the daemon stayed in the worker's session: the test proves nothing")
        survivors = wait_dead([daemon], 1.0)
        for p in survivors:
            os.kill(p, signal.SIGKILL)
        check(not survivors, f"the setsid daemon {daemon} outlived the job (cgroup {cgroup})")
        check(not os.path.exists(cgroup), f"the run's cgroup {cgroup} was not removed")


def test_setsid_daemon_is_killed_when_the_supervisor_is_sigkilled():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        sup = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--nproc-per-node", "1",
                                TREE, "--daemon"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        reader = LineReader(sup.stdout)
        daemon, _ = daemon_of(reader.wait_for("]: daemon ", 30, "the worker reporting its daemon"))
        pids = [daemon] + [int(p) for p in reader.wait_for("]: pids ", 30, "the worker's pids").split()[-2:]]
        cgroup = read_events(ev)[0]["cgroup"]
        sup.kill()
        sup.wait(timeout=10)
        survivors = wait_dead(pids, 1.0)
        for p in survivors:
            os.kill(p, signal.SIGKILL)
        if cgroup is None:
            check(survivors in ([], [daemon]), f"survivors besides the daemon: {survivors}")
            print("     skipped: cgroups are not writable here (the guardian cannot reach the daemon)")
            return
        check(not survivors, f"alive 1 s after the supervisor was SIGKILLed: {survivors} (daemon {daemon})")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and os.path.exists(cgroup):
            time.sleep(0.05)
        check(not os.path.exists(cgroup), f"the guardian did not remove the run's cgroup {cgroup}")


def test_rank_over_its_memory_limit_is_reported_oom_killed():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--nproc-per-node", "2",
                            "--memory-limit-per-rank", "64M", "--shutdown-grace", "5", HOG, "--hog-rank", "1",
                            "--megabytes", "512"], capture_output=True, text=True, timeout=90)
        if r.returncode == 2 and "needs a memory cgroup" in r.stderr:
            print("     skipped: no writable memory cgroup here (the option is refused with the reason)")
            return
        check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
        check(re.search(r"Root cause: rank 1 .*: killed by the OOM killer \(memory\.(max|limit_in_bytes)=64 MiB, "
                        r"SIGKILL\)", r.stderr), f"summary: {r.stderr}")
        exits = {x["rank"]: x for x in read_events(ev) if x["event"] == "rank_exited"}
        check(exits[1]["signal"] == "SIGKILL" and exits[1]["oom"] is True, f"rank 1's rank_exited: {exits[1]}")
        check(exits[0]["oom"] is False, f"rank 0's rank_exited: {exits[0]}")


def test_bad_memory_limit_is_a_usage_error():
    r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--memory-limit-per-rank", "lots", HOG],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "--memory-limit-per-rank 'lots'" in r.stderr, f"{r.returncode}: {r.stderr}")


run_tests([
    test_setsid_daemon_is_killed_when_the_job_ends,
    test_setsid_daemon_is_killed_when_the_supervisor_is_sigkilled,
    test_rank_over_its_memory_limit_is_reported_oom_killed,
    test_bad_memory_limit_is_a_usage_error,
])
