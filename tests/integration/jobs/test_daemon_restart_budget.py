"""The recovery keys of a job file reach the job's supervisor, and the daemon shows its restart budget
(issue 28): a job whose first attempt fails and restarts once shows `restart_budget` in its JSON
(`status`, `list`) and `restarts:  1 of 3, 2 left …` in `ddp-launch status`; restart_budget: progress
with a checkpoint_file charges nothing for a restart after progress; min_restart_interval spaces
the attempts. warm_start: on forks a Python job's restart from the warm-start process (torch already
imported); a job that does not say so restarts cold."""
import os
import time

from daemon_harness import Daemon
from harness import PYTHON, TestFailure, check, run_tests

D = None


def gate(name):
    return os.path.join(D.dir, f"gate-{name}")


def fails_once_then_waits(name):
    """A shell job: attempt 0 runs `first` and exits 3; attempt 1 waits for its gate and succeeds."""
    return (f'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then {{first}} exit 3; fi; i=0; '
            f'while [ ! -e {gate(name)} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo done')


def wait_budget(job, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        j = D.job(job)
        if "restart_budget" in j and j["state"] == "RUNNING":
            return j
        if time.monotonic() > deadline:
            raise TestFailure(f"job {job} shows no restart budget while running its second attempt: {j}")
        time.sleep(0.1)


def test_status_shows_the_restart_budget_left_after_a_restart():
    ckpt = os.path.join(D.dir, "iteration.txt")
    counted = D.submit("name: counted\nshell: '" + fails_once_then_waits("counted").format(first="") + "'\n"
                       "distributed: {max_restarts: 3, min_restart_interval: 2s, shutdown_grace: 2s}\n")
    # Attempt 0 saves a checkpoint before it fails: progress, which restart_budget: progress does not charge.
    progress = D.submit("name: progress\nshell: '" +
                        fails_once_then_waits("progress").format(first=f"echo 10 > {ckpt};") + "'\n"
                        f"distributed: {{max_restarts: 1, restart_budget: progress, checkpoint_file: {ckpt}, "
                        "max_no_progress_restarts: 5, shutdown_grace: 2s}\n")
    j = wait_budget(counted)
    # No checkpoint file and no step lines: progress cannot be measured, so none is counted as missing.
    check(j["restart_budget"] == {"max_restarts": 3, "used": 1, "restarts_left": 2, "counts": "count",
                                  "no_progress_restarts": 0}, f"the counted job's budget: {j}")
    restarting = [e for e in D.events(counted)["events"] if e["event"] == "restarting"]
    check(len(restarting) == 1 and restarting[0]["delay_s"] > 1.0,
          f"min_restart_interval: 2s reached the supervisor: {restarting}")
    out = D.cli("status", str(counted))
    check(out.returncode == 0 and "  restarts:  1 of 3, 2 left (this run; 0 in a row without progress)\n" in out.stdout,
          f"`status`: {out.stdout}{out.stderr}")
    listed = {x["id"]: x for x in D.request("GET", "/v1/jobs")[1]["jobs"]}
    check(listed[counted]["restart_budget"] == j["restart_budget"], f"`list`'s JSON: {listed[counted]}")

    p = wait_budget(progress)
    check(p["restart_budget"] == {"max_restarts": 1, "used": 0, "restarts_left": 1, "counts": "progress",
                                  "no_progress_restarts": 0}, f"a restart after progress is free: {p}")
    restarting = [e for e in D.events(progress)["events"] if e["event"] == "restarting"]
    check(len(restarting) == 1 and restarting[0]["progress"] and restarting[0]["checkpoint"] == 10,
          f"checkpoint_file reached the supervisor: {restarting}")
    out = D.cli("status", str(progress))
    check("  restarts:  0 of 1, 1 left (this run, restart_budget: progress counts only those without progress; "
          "0 in a row without progress)\n" in out.stdout, f"`status`: {out.stdout}{out.stderr}")

    for name, job in (("counted", counted), ("progress", progress)):
        open(gate(name), "w").close()
        done = D.wait_state(job, "SUCCEEDED", 30)
        check(done["restarts"] == 1 and "restart_budget" in done, f"{name}: the budget stays shown: {done}")


# Says whether torch was already imported when the script began: a warm rank is forked from a process
# that imported it; a cold one starts a new interpreter. Attempt 0 fails, attempt 1 succeeds.
PRELOADED = ('import os, sys\n'
             'print("attempt", os.environ["TORCHELASTIC_RESTART_COUNT"], "torch preloaded:", "torch" in sys.modules)\n'
             'sys.exit(3 if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0" else 0)\n')


def test_warm_start_on_forks_a_python_jobs_restart_and_the_default_stays_cold():
    script = os.path.join(D.dir, "preloaded.py")
    with open(script, "w") as f:
        f.write(PRELOADED)
    common = f"command: [{PYTHON}, {script}]\n"
    warm = D.submit("name: warm\n" + common + "distributed: {max_restarts: 1, warm_start: on, shutdown_grace: 2s}\n")
    cold = D.submit("name: cold\n" + common + "distributed: {max_restarts: 1, shutdown_grace: 2s}\n")
    for job, preloaded in ((warm, True), (cold, False)):
        j = D.wait_state(job, ["SUCCEEDED", "FAILED"], 60)
        out = D.cli("logs", str(job))
        check(j["state"] == "SUCCEEDED" and out.stdout == f"attempt 1 torch preloaded: {preloaded}\n",
              f"job {j['name']}: attempt 1 preloaded torch: {out.stdout!r} (want {preloaded}); {j}\n"
              f"{D.cli('logs', str(job), '--rank', 'supervisor').stdout[-2000:]}")


if __name__ == "__main__":
    D = Daemon("--slots", "2")
    try:
        run_tests([
            test_status_shows_the_restart_budget_left_after_a_restart,
            test_warm_start_on_forks_a_python_jobs_restart_and_the_default_stays_cold,
        ])
    finally:
        D.cleanup()
