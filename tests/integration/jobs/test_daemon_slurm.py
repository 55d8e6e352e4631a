"""The job daemon's `executor: slurm` on a real Slurm 22.05 cluster started here (munged, slurmctld,
two slurmd: tests/integration/slurm/slurm_cluster.py): a two-node gloo job completes and its log is
served by `ddp-launch logs` (and followed by `logs -f`); a failing job ends FAILED with Slurm's exit
code; cancel runs scancel and leaves no process; a daemon killed with -9 while its Slurm job runs is
replaced by one that re-adopts the job (its Slurm id from the job database) and reports its end,
also when the job ended while no daemon ran.
Nothing of the host is booked for Slurm jobs (the daemon has one slot; a 2x2-rank job runs)."""
import os
import re
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "slurm"))
from harness import PYTHON, LineReader, check, run_tests, wait_until_value  # noqa: E402
from daemon_harness import Daemon  # noqa: E402
from slurm_cluster import SlurmCluster, skip_unless_available  # noqa: E402

CLUSTER = None
JOB_TIMEOUT = 180  # torch import under load, two nodes


def proc_cmdlines(needle):
    """Live processes whose command line mentions needle: {pid: cmdline}."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        if needle in cmd:
            found[int(d)] = cmd
    return found


def sh_worker(tmp, name, body):
    """A worker script file: /proc shows its path in the command line while it runs."""
    path = os.path.join(tmp, f"{name}.sh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)
    return path


def slurm_daemon():
    return Daemon("--slots", "1", "--slurm-poll-interval", "0.5")


def test_two_node_job_completes_and_its_log_is_served():
    d = slurm_daemon()
    follower = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            gate = os.path.join(tmp, "gate")
            # 2 nodes x 2 ranks on a daemon with one slot: Slurm places it, the host books nothing.
            job = d.submit(f"name: slurm-ok\ncommand: [{PYTHON}, {HERE}/gated_worker.py, {gate}]\n"
                           f"executor: slurm\nresources: {{nodes: 2, nproc_per_node: 2}}\n"
                           f"distributed: {{shutdown_grace: 3s}}\nslurm: {{partition: debug, time_limit: 5m}}\n")
            # Followed from before the output file exists: its lines stream while the job runs.
            follower = subprocess.Popen([os.environ["DDP_LAUNCH"], "logs", str(job), "-f", "--socket", d.socket],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines = LineReader(follower.stdout, follower, "logs -f")
            ready = set()
            while len(ready) < 4:  # the ranks' lines arrive in any order
                line = lines.wait_for("/4 ready", JOB_TIMEOUT, f"the ranks' ready lines, streamed (have {ready})")
                ready.add(line.split("rank ", 1)[1].split("/")[0])
            check(d.job(job)["state"] == "RUNNING", f"not RUNNING while its ranks wait: {d.job(job)}")
            status, metrics = d.request("GET", "/metrics")
            check("ddpd_slots_in_use 0" in metrics, f"a Slurm job booked host slots:\n{metrics}")
            open(gate, "w").close()
            j = d.wait_state(job, {"SUCCEEDED", "FAILED", "CANCELLED"}, JOB_TIMEOUT, "(a two-node Slurm job)")
            check(j["state"] == "SUCCEEDED" and j["exit_code"] == 0 and j["executor"] == "slurm", f"{j}")
            lines.wait_for("rank 3: sum=10 done", 30, "rank 3's last line through logs -f")
            check(follower.wait(timeout=30) == 0, f"logs -f exit {follower.returncode}")
            slurm_id = re.search(r"Slurm job (\d+) COMPLETED \(ExitCode=0:0, on n\[1-2\]\)", j["reason"])
            check(slurm_id is not None, f"the reason names no completed Slurm job on both nodes: {j}")
            info = CLUSTER.job_info(slurm_id.group(1))
            check(info.get("JobState") == "COMPLETED" and info.get("NumNodes") == "2", f"Slurm says {info}")
            check(info.get("JobName") == f"ddp-{job}-slurm-ok", f"job name {info.get('JobName')}")
            r = d.cli("logs", str(job))
            check(r.returncode == 0, f"logs exit {r.returncode}: {r.stderr}")
            for rank in range(4):
                check(f"rank {rank}: sum=10 done" in r.stdout, f"rank {rank}'s last line missing: {r.stdout}")
            states = [t["to"] for t in d.events(job)["transitions"]]
            check(states[:2] == ["PENDING", "STARTING"] and "RUNNING" in states and states[-1] == "SUCCEEDED",
                  f"transitions {states}")
    finally:
        if follower is not None and follower.poll() is None:
            follower.kill()
            follower.wait()
        d.cleanup()


def test_failing_job_is_failed_with_slurm_exit_code():
    d = slurm_daemon()
    try:
        job = d.submit("name: slurm-fail\nshell: 'echo about to fail; exit 3'\nexecutor: slurm\n")
        j = d.wait_state(job, {"FAILED", "SUCCEEDED", "CANCELLED"}, JOB_TIMEOUT, "(a failing Slurm job)")
        check(j["state"] == "FAILED", f"{j}")
        # The batch script's status is srun's: the supervisor's 1 when a rank failed (the rank's 3 is
        # in the output's failure summary).
        check(j["exit_code"] == 1, f"exit code {j['exit_code']}: {j}")
        check("FAILED" in j["reason"] and "ExitCode=1:0" in j["reason"], f"reason {j['reason']}")
        r = d.cli("logs", str(job))
        check("about to fail" in r.stdout and "exited with code 3" in r.stdout, f"log: {r.stdout}")
    finally:
        d.cleanup()


def test_cancel_scancels_and_leaves_no_process():
    d = slurm_daemon()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            worker = sh_worker(tmp, "slurm-sleeper", "echo sleeper up\nwhile true; do sleep 0.2; done")
            job = d.submit(f"name: slurm-cancel\ncommand: [/bin/sh, {worker}]\nexecutor: slurm\n"
                           f"distributed: {{shutdown_grace: 2s}}\n")
            d.wait_state(job, "RUNNING", JOB_TIMEOUT, "(the job to cancel)")
            wait_until_value("the worker script running", lambda: proc_cmdlines(worker), 60)
            j = d.job(job)
            slurm_id = j.get("slurm_job_id", "")
            check(slurm_id.isdigit(), f"no slurm_job_id while running: {j}")
            st = d.cli("status", str(job)).stdout
            check(f"slurm job: {slurm_id}" in st and "1 node(s) x 1 rank(s), on Slurm" in st, f"status: {st}")
            status, metrics = d.request("GET", "/metrics")
            check("ddpd_slots_in_use 0" in metrics, f"a Slurm job booked host slots:\n{metrics}")
            r = d.cli("cancel", str(job))
            check(r.returncode == 0, f"cancel exit {r.returncode}: {r.stderr}")
            j = d.wait_state(job, {"CANCELLED", "FAILED", "SUCCEEDED"}, 60, "(after cancel)")
            check(j["state"] == "CANCELLED" and j["reason"] == "cancelled by request", f"{j}")
            info = CLUSTER.job_info(slurm_id)
            check(info.get("JobState") == "CANCELLED", f"Slurm says {info}")
            left = {}
            try:
                wait_until_value("the worker script gone", lambda: not proc_cmdlines(worker), 30)
            except AssertionError:
                left = proc_cmdlines(worker)
            check(not left, f"after cancel these processes live on: {left}")
    finally:
        d.cleanup()


def test_daemon_killed_while_slurm_job_runs_readopts_it():
    d = slurm_daemon()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            gate = os.path.join(tmp, "gate")
            worker = sh_worker(tmp, "slurm-gated", f"echo gated up\nwhile [ ! -e {gate} ]; do sleep 0.2; done\n"
                               "echo gate open")
            job = d.submit(f"name: slurm-adopt\ncommand: [/bin/sh, {worker}]\nexecutor: slurm\n")
            before = d.wait_state(job, "RUNNING", JOB_TIMEOUT, "(the job to re-adopt)")
            wait_until_value("the worker script running", lambda: proc_cmdlines(worker), 60)
            d.kill9()
            d.start()
            after = d.job(job)
            check(after["state"] == "RUNNING" and after.get("slurm_job_id") == before["slurm_job_id"],
                  f"not re-adopted as it was: before {before} after {after}")
            check(f"re-adopted slurm job {before['slurm_job_id']}" in d.log(), "the daemon log names the re-adoption")
            open(gate, "w").close()
            j = d.wait_state(job, {"SUCCEEDED", "FAILED", "CANCELLED"}, 60, "(the re-adopted job, to its end)")
            check(j["state"] == "SUCCEEDED" and j["exit_code"] == 0, f"{j}")
            check("gate open" in d.cli("logs", str(job)).stdout, "the re-adopted job's log")
    finally:
        d.cleanup()


def test_slurm_job_that_ended_while_the_daemon_was_down_is_settled():
    d = slurm_daemon()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            gate = os.path.join(tmp, "gate")
            worker = sh_worker(tmp, "slurm-gated-down", f"while [ ! -e {gate} ]; do sleep 0.2; done\n"
                               "echo failing after the gate; exit 4")
            job = d.submit(f"name: slurm-down\ncommand: [/bin/sh, {worker}]\nexecutor: slurm\n")
            before = d.wait_state(job, "RUNNING", JOB_TIMEOUT, "(the job to settle later)")
            d.kill9()
            open(gate, "w").close()
            CLUSTER.wait_job_state(before["slurm_job_id"], {"FAILED", "COMPLETED", "CANCELLED"}, 60)
            d.start()
            j = d.wait_state(job, {"SUCCEEDED", "FAILED", "CANCELLED"}, 30, "(settled after the restart)")
            check(j["state"] == "FAILED" and j["exit_code"] == 1, f"{j}")
            check(f"Slurm job {before['slurm_job_id']} FAILED" in j["reason"], f"reason {j['reason']}")
            check("exited with code 4" in d.cli("logs", str(job)).stdout, "the failure summary in the log")
    finally:
        d.cleanup()


def _exit_on_sigterm(*_):
    sys.exit(143)  # unwinds through `with SlurmCluster`, which stops the cluster


if __name__ == "__main__":
    skip_unless_available()
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with SlurmCluster(nodes=2) as CLUSTER:
        # The daemon (and the sbatch/scontrol/scancel it runs) talks to this cluster.
        os.environ["SLURM_CONF"] = CLUSTER.conf
        os.environ["PATH"] = CLUSTER.env["PATH"]
        run_tests([test_two_node_job_completes_and_its_log_is_served, test_failing_job_is_failed_with_slurm_exit_code,
                   test_cancel_scancels_and_leaves_no_process, test_daemon_killed_while_slurm_job_runs_readopts_it,
                   test_slurm_job_that_ended_while_the_daemon_was_down_is_settled])
