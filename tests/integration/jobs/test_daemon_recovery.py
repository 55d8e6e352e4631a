"""kill -9 of the daemon with queued and running jobs, then a restart: no job is lost, live
supervisors are re-adopted (same pid), and a job that ended while the daemon was down gets its
true outcome from its run directory."""
import glob
import http.client
import os
import signal
import time

from daemon_harness import HERE, Daemon, alive, gated_job, supervisor_pids
from harness import PYTHON, check, remove_matching, run_tests

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


# A fault-injection point (common/fault_injection.hpp), compiled only into a build configured with
# -DDDP_FAULT_INJECTION=ON (the dev and ci presets): the daemon SIGKILLs itself right after the spawn.
KILL_AFTER_SPAWN = {"DDP_FAULT_INJECT": "daemon-kill-after-spawn"}


def submit_and_see_it_die(d, yaml_text):
    """Submits to a daemon started with the hook: it starts the supervisor and SIGKILLs itself
    before it answers. Returns the job's id (its directory: the first job of a fresh state dir)
    and the supervisor's pids (0 or 1 of them)."""
    check("daemon-kill-after-spawn armed" in d.log(),
          "this ddp-launch has no fault injection: configure it with -DDDP_FAULT_INJECTION=ON (the dev and ci "
          "presets of packaging/build.sh do)")
    try:
        d.request("POST", "/v1/jobs", yaml_text)
    except (OSError, http.client.HTTPException):
        pass  # no answer: it died handling the request, as it should
    d.proc.wait(timeout=60)
    check(d.proc.returncode == -signal.SIGKILL, f"the hooked daemon died of SIGKILL: {d.proc.returncode}")
    runs = glob.glob(os.path.join(d.state, "jobs", "*", "run-0"))
    check(len(runs) == 1, f"one job was started: {runs}")
    pids = supervisors(d.state)
    check(len(pids) <= 1, f"one supervisor at most: {pids}")
    return int(runs[0].split(os.sep)[-2]), pids


def supervisors(state_dir):
    """The supervisors themselves (session leaders), not their guardians (forked from the
    supervisor with its argv, and session leaders too after their setsid)."""
    leaders = []
    for pid in supervisor_pids(state_dir):
        try:
            if os.getsid(pid) == pid:
                leaders.append(pid)
        except ProcessLookupError:
            pass
    return [p for p in leaders if parent(p) not in leaders]


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def test_supervisor_started_before_its_pid_was_committed_is_readopted():
    # The daemon dies between spawning the supervisor and committing its pid, and the supervisor is
    # frozen before it wrote its processes.json: the restarted daemon must find it all the same (by
    # its command line), re-adopt it, start no second one, and follow it to an end that leaves no
    # process behind.
    d = Daemon("--slots", "2", env=KILL_AFTER_SPAWN)
    try:
        gate = os.path.join(d.dir, "gate")
        job, pids = submit_and_see_it_die(d, gated_job("unrecorded", gate, ranks=2))
        check(len(pids) == 1, f"the supervisor outlives the daemon: {pids}")
        sup = pids[0]
        os.kill(sup, signal.SIGSTOP)  # as if the daemon restarted before the supervisor got this far
        try:
            remove_matching(os.path.join(d.state, "jobs", str(job), "run-0", "logs", "*", "processes.json"))
            d.start()
            j = d.job(job)
            check(j["pid"] == sup and j["state"] in ("STARTING", "RUNNING"), f"the supervisor is re-adopted: {j}")
            check(supervisors(d.state) == [sup], f"no second supervisor: {supervisors(d.state)}")
            check("found its supervisor" in d.log(), "the daemon log says how it found the supervisor")
        finally:
            os.kill(sup, signal.SIGCONT)
        d.wait_state(job, "RUNNING", TORCH_TIMEOUT)
        deadline = time.monotonic() + TORCH_TIMEOUT
        while len([x for x in d.events(job)["events"] if x["event"] == "rank_started"]) < 2:
            check(time.monotonic() < deadline, "both ranks of the re-adopted job started")
            time.sleep(0.2)
        rank_pids = [x["pid"] for x in d.events(job)["events"] if x["event"] == "rank_started"]
        open(gate, "w").close()
        j = d.wait_state(job, "SUCCEEDED", TORCH_TIMEOUT, "(the re-adopted job, followed to its end)")
        check(j["runs"] == 1 and j["exit_code"] == 0, f"run once, not requeued: {j}")
        deadline = time.monotonic() + 30
        while any(alive(p) for p in rank_pids) or supervisor_pids(d.state):
            check(time.monotonic() < deadline, f"a process of the job outlived it: ranks {rank_pids}, "
                  f"supervisor and guardian {supervisor_pids(d.state)}")
            time.sleep(0.1)
    finally:
        d.cleanup()


def test_supervisor_that_ended_before_its_pid_was_committed_gives_its_outcome():
    # Same window, but the supervisor runs to its end while no daemon watches: the restarted daemon
    # takes the outcome from its event file instead of running the job again over it.
    d = Daemon("--slots", "1", env=KILL_AFTER_SPAWN)
    try:
        job, pids = submit_and_see_it_die(d, "name: ends-unrecorded\nshell: 'exit 3'\n")
        deadline = time.monotonic() + 60
        while any(alive(p) for p in pids):
            check(time.monotonic() < deadline, f"the supervisor did not end: {pids}")
            time.sleep(0.1)
        d.start()
        j = d.wait_state(job, "FAILED", 30)
        check(j["runs"] == 1 and "exited with code 3" in j["reason"], f"its true outcome, not a second run: {j}")
    finally:
        d.cleanup()


def test_timed_out_job_whose_supervisor_ends_while_the_daemon_is_down_stays_failed():
    # The daemon is killed while a timeout stops the job (CANCELLING: its rank ignores SIGTERM for
    # the grace period); the supervisor ends meanwhile. After the restart the stored final state
    # (jobs.cancel_final, no longer the reason's wording) ends it FAILED, not CANCELLED.
    d = Daemon("--slots", "1")
    try:
        gate = os.path.join(d.dir, "gate")
        job = d.submit(f"name: times-out\nshell: 'trap \"\" TERM; while [ ! -e {gate} ]; do sleep 0.1; done'\n"
                       "limits: {timeout: 1s}\ndistributed: {shutdown_grace: 120s}\n")
        j = d.wait_state(job, "CANCELLING", 60, "(stopped by limits.timeout)")
        check(j["reason"].startswith("timed out after 1s"), f"{j}")
        d.kill9()
        open(gate, "w").close()
        deadline = time.monotonic() + 60
        while alive(j["pid"]):
            check(time.monotonic() < deadline, "the supervisor did not end once its rank could exit")
            time.sleep(0.2)
        d.start()
        j = d.wait_state(job, ["FAILED", "CANCELLED"], 30)
        check(j["state"] == "FAILED" and j["reason"].startswith("timed out after 1s"),
              f"a timeout stays FAILED across the restart: {j}")
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
               test_timed_out_job_whose_supervisor_ends_while_the_daemon_is_down_stays_failed,
               test_supervisor_that_ended_before_its_pid_was_committed_gives_its_outcome,
               test_supervisor_started_before_its_pid_was_committed_is_readopted, test_kill9_restart_loses_nothing])
