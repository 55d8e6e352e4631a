"""The daemon and the hang watchdog: a job whose rank 1 hangs in its first run (2 gloo ranks,
`distributed.hang_timeout: 4s`). The supervisor stops the attempt; with no worker-group restarts
left the run fails, and the daemon's retry policy (exit-code, its default codes 128-255) relaunches
it: a hang counts as a failure. The job's events list the hang_detected, `status` shows it (JSON
and the CLI), and the reason of the retry names the hung rank."""
import os

from daemon_harness import HERE, Daemon
from harness import PYTHON, check, run_tests

WORKER = os.path.join(HERE, "..", "launcher", "hang_step_worker.py")
D = None


def test_a_hang_is_listed_shown_and_retried():
    mark = os.path.join(D.dir, "hang-mark")
    job = D.submit(f"name: hangs-once\n"
                   f"command: [{PYTHON}, {WORKER}, --hang-rank, '1', --hang-once, --hang-mark, {mark}, --steps, '8']\n"
                   "resources: {nproc_per_node: 2}\n"
                   "distributed: {hang_timeout: 4s, on_hang: restart, shutdown_grace: 3s}\n"
                   "restart: {policy: exit-code, max_retries: 1, backoff: {initial: 0s}}\n")
    j = D.wait_state(job, "SUCCEEDED", 180, "(run 0 hangs, run 1 finishes)")
    check(j["runs"] == 2 and j["restarts"] == 1, f"one daemon retry after the hang: {j}")
    hangs = j["hangs"]
    check(len(hangs) == 1, f"status lists the hang: {j}")
    h = hangs[0]
    check(h["run"] == 0 and h["attempt"] == 0 and h["suspect"] == 1 and h["ranks"] == [1, 0], f"{h}")
    check(h["text"].startswith("rank 1 hung: no progress for") and "--hang-timeout 4s" in h["text"], f"{h}")
    evs = [e for e in D.events(job)["events"] if e["event"] == "hang_detected"]
    check(len(evs) == 1 and evs[0]["run"] == 0 and evs[0]["suspect"] == 1, f"events list the hang: {evs}")
    reasons = [t["reason"] for t in D.events(job)["transitions"] if t["to"] == "RESTARTING"]
    check(len(reasons) == 1 and reasons[0].startswith("rank 1 hung: no progress for"), f"retry reason: {reasons}")
    check("retry 1 of 1" in reasons[0], f"the retry policy judged the hang a failure: {reasons}")
    out = D.cli("status", str(job))
    check(out.returncode == 0 and "  hangs:     1 (last: run 0 attempt 0: rank 1 hung: no progress for" in out.stdout,
          f"`status`: {out.stdout}{out.stderr}")


def test_on_hang_fail_without_retries_fails_the_job_naming_the_hang():
    mark = os.path.join(D.dir, "hang-mark-2")
    job = D.submit(f"name: hangs-fails\n"
                   f"command: [{PYTHON}, {WORKER}, --hang-rank, '1', --hang-once, --hang-mark, {mark}]\n"
                   "resources: {nproc_per_node: 2}\n"
                   "distributed: {hang_timeout: 4s, on_hang: fail, max_restarts: 2, shutdown_grace: 3s}\n")
    j = D.wait_state(job, "FAILED", 120)
    check(j["runs"] == 1 and j["reason"].startswith("rank 1 hung: no progress for"), f"{j}")
    check(not [e for e in D.events(job)["events"] if e["event"] == "restarting"], "--on-hang fail: no restart")


def main():
    global D
    D = Daemon("--slots", "2")
    try:
        run_tests([test_a_hang_is_listed_shown_and_retried,
                   test_on_hang_fail_without_retries_fails_the_job_naming_the_hang])
    finally:
        D.cleanup()


main()
