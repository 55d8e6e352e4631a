"""kill -9 of the daemon with queued and running jobs, then a restart: no job is lost, live
supervisors are re-adopted (same pid), and a job that ended while the daemon was down gets its
true outcome from its run directory."""
import os
import time

from daemon_harness import HERE, Daemon, alive, gated_job
from harness import PYTHON, check, run_tests

TORCH_TIMEOUT = 180


def test_kill9_restart_loses_nothing():
    d = Daemon("--slots", "3", "--gpus", "1")
    try:
        gate = os.path.join(d.dir, "gate")
        quick_gate = os.path.join(d.dir, "quick-gate")
        running = d.submit(gated_job("survivor", gate, ranks=2))
        # Ends with code 3 while the daemon is down: its outcome must come from its run directory.
        ends = d.submit(f"name: ends-while-down\ncommand: [{PYTHON}, {HERE}/gated_worker.py, {quick_gate}, '3']\n")
        queued = d.submit(f"name: queued\ncommand: [{PYTHON}, {HERE}/gpu_worker.py, {gate}]\n"
                          "resources: {nproc_per_node: 1}\npriority: -1\n")
        r = d.wait_state(running, "RUNNING", TORCH_TIMEOUT)
        e = d.wait_state(ends, "RUNNING", TORCH_TIMEOUT)
        q = d.job(queued)
        check(q["state"] == "PENDING", f"the third job waits (3 slots, 2+1 taken): {q}")
        deadline = time.monotonic() + TORCH_TIMEOUT
        while len([x for x in d.events(running)["events"] if x["event"] == "rank_started"]) < 2:
            check(time.monotonic() < deadline, "both ranks of the survivor started")
            time.sleep(0.2)
        rank_pids = [x["pid"] for x in d.events(running)["events"] if x["event"] == "rank_started"]

        d.kill9()
        check(alive(r["pid"]) and all(alive(p) for p in rank_pids), "the job survives the daemon's SIGKILL")
        open(quick_gate, "w").close()  # 'ends-while-down' finishes with code 3 while no daemon watches
        deadline = time.monotonic() + TORCH_TIMEOUT
        while alive(e["pid"]):
            check(time.monotonic() < deadline, "the job meant to end while the daemon was down did not end")
            time.sleep(0.2)

        d.start()
        status, listing = d.request("GET", "/v1/jobs?limit=100")
        check(listing["total"] == 3, f"every job is still known after the restart: {listing}")
        r2 = d.job(running)
        check(r2["state"] == "RUNNING" and r2["pid"] == r["pid"], f"the live supervisor is re-adopted: {r2}")
        e2 = d.wait_state(ends, "FAILED", 30)
        check(e2["exit_code"] == 1 and "exited with code 3" in e2["reason"], f"true outcome of the ended job: {e2}")
        q2 = d.wait_state(queued, ["RUNNING", "SUCCEEDED"], 60, "(its slot freed by the ended job)")
        check(q2["state"] in ("RUNNING", "SUCCEEDED"), f"{q2}")
        check("re-adopted its supervisor" in d.log(), "the daemon log names the re-adoption")

        open(gate, "w").close()
        r3 = d.wait_state(running, "SUCCEEDED", TORCH_TIMEOUT, "(the re-adopted job, followed to its end)")
        check(r3["exit_code"] == 0, f"{r3}")
        d.wait_state(queued, "SUCCEEDED", 60)
        check(not any(alive(p) for p in rank_pids + [r["pid"]]), "no process of the survivor is left")
    finally:
        d.cleanup()


def test_retry_backoff_survives_a_daemon_restart():
    d = Daemon("--slots", "1")
    try:
        backoff = 10
        job = d.submit("name: backs-off\nshell: 'exit 3'\n"
                       f"restart: {{policy: on-failure, max_retries: 1, backoff: {{initial: {backoff}s}}}}\n")
        d.wait_state(job, "RESTARTING", 60)
        d.kill9()
        d.start()
        j = d.job(job)
        check(j["state"] == "RESTARTING" and j["runs"] == 1, f"still waiting out its back-off: {j}")
        check("from before the restart" in d.log(), "the daemon log does not say it kept the back-off")
        j = d.wait_state(job, "FAILED", backoff + 60, "(the retry, once its back-off is over)")
        check(j["runs"] == 2, f"{j}")
        transitions = d.events(job)["transitions"]
        waited_from = [t["time"] for t in transitions if t["to"] == "RESTARTING"][0]
        retried_at = [t["time"] for t in transitions if t["to"] == "STARTING"][1]
        check(retried_at - waited_from >= backoff - 0.5,
              f"retried {retried_at - waited_from:.1f} s after the failure, before its {backoff} s back-off: "
              f"{transitions}")
    finally:
        d.cleanup()


def test_second_daemon_on_same_state_dir_is_refused():
    d = Daemon("--slots", "1")
    try:
        import subprocess
        out = subprocess.run([os.environ.get("DDP_LAUNCH", "build/bin/ddp-launch"), "daemon", "--state-dir", d.state,
                              "--socket", d.socket + "2"], capture_output=True, text=True, timeout=30)
        check(out.returncode != 0 and "another ddp-launch daemon" in out.stderr, f"{out.returncode} {out.stderr}")
    finally:
        d.cleanup()


if __name__ == "__main__":
    run_tests([test_second_daemon_on_same_state_dir_is_refused, test_retry_backoff_survives_a_daemon_restart,
               test_kill9_restart_loses_nothing])
