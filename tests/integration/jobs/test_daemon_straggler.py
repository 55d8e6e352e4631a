"""The daemon shows stragglers (issue 13 item 6): a real 3-rank torch gloo job under the daemon,
rank 1 0.3 s slower per step (tests/integration/launcher/straggler_worker.py). Its `status` (CLI
and JSON) lists rank 1 with its ratio, /metrics has ddpd_job_straggler_ratio{job,rank} while the job
runs, a daemon restarted meanwhile still knows it (replayed from the event file), and the rank is
not stopped: the job runs on until cancelled."""
import os
import re
import time

from daemon_harness import Daemon
from harness import PYTHON, TestFailure, check, run_tests

WORKER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launcher", "straggler_worker.py")
TORCH_TIMEOUT = 180  # torch imports take 10-30 s each on a loaded machine

D = None


def wait_stragglers(job, timeout):
    deadline = time.monotonic() + timeout
    while True:
        j = D.job(job)
        if j.get("stragglers"):
            return j
        if j["state"] not in ("PENDING", "STARTING", "RUNNING"):
            raise TestFailure(f"job {job} ended before a straggler was listed: {j}")
        if time.monotonic() > deadline:
            raise TestFailure(f"no straggler listed for job {job} within {timeout}s: {j}\n{D.log()[-3000:]}")
        time.sleep(0.5)


def metrics_text():
    status, text = D.request("GET", "/metrics")
    check(status == 200, f"/metrics answered {status}")
    return text


def test_a_straggler_shows_in_status_and_metrics_and_the_job_goes_on():
    job = D.submit(f"name: straggler\ncommand: [{PYTHON}, {WORKER}, --steps, '400', --slow-rank, '1']\n"
                   f"resources: {{nproc_per_node: 3}}\ndistributed: {{shutdown_grace: 3s}}\n")
    j = wait_stragglers(job, TORCH_TIMEOUT)
    check(j["state"] == "RUNNING", f"the straggler is reported, not stopped: {j}")
    [s] = j["stragglers"]
    check(s["rank"] == 1 and s["attempt"] == 0 and 0 < s["ratio"] < 0.75, f"rank 1 under 0.75: {s}")
    check(s["rank_step_s"] > s["median_step_s"] and s["time"] > 0, f"its step times and when: {s}")
    gauge = re.search(rf'^ddpd_job_straggler_ratio{{job="{job}",rank="1"}} ([0-9.e-]+)$', metrics_text(), re.M)
    check(gauge and abs(float(gauge.group(1)) - s["ratio"]) < 1e-3, f"/metrics gauge: {metrics_text()}")
    out = D.cli("status", str(job))
    want = f"straggler: rank 1 at {s['ratio']:.2f}× the median step rate"
    check(out.returncode == 0 and want in out.stdout, f"ddp-launch status: {want!r} not in {out.stdout!r} {out.stderr}")
    evs = [e for e in D.events(job)["events"] if e["event"] == "straggler"]
    check(len(evs) == 1 and evs[0]["rank"] == 1, f"the job's events: {evs}")

    # A restarted daemon re-adopts the run and still knows its straggler (the event file replayed).
    D.kill9()
    D.start()
    j = D.job(job)
    check(j["state"] == "RUNNING" and [x["rank"] for x in j["stragglers"]] == [1], f"after a daemon restart: {j}")
    check(f'ddpd_job_straggler_ratio{{job="{job}",rank="1"}}' in metrics_text(), "the gauge after a restart")

    status, body = D.request("POST", f"/v1/jobs/{job}/cancel")
    check(status in (200, 202), f"cancel: {status} {body}")
    j = D.wait_state(job, "CANCELLED", 60)
    check([x["rank"] for x in j["stragglers"]] == [1], f"the finished job's status still lists it: {j}")
    check("ddpd_job_straggler_ratio{" not in metrics_text(), "a job that is over is no longer in the gauge")


if __name__ == "__main__":
    D = Daemon("--slots", "3")
    try:
        run_tests([test_a_straggler_shows_in_status_and_metrics_and_the_job_goes_on])
    finally:
        D.cleanup()
