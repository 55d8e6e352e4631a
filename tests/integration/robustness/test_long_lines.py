"""User regexes over worker output must survive any line (issue 12, defect 1). libstdc++'s
std::regex recursed once per character of `.*`: a ~120-300 KB line with `loss=(.*)` overflowed
the stack, so `ddp-launch run --metric` exited 139, the daemon segfaulted serving a job's metrics,
and with `no_retry_log_patterns` it died settling the failed run and again on every restart. The
patterns now run on RE2 (common/user_regex.hpp), linear in the line. These tests print such lines
from real workers and check every path that applies a user regex to them."""
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jobs"))

from daemon_harness import Daemon  # noqa: E402
from harness import DDP_LAUNCH, PYTHON, check, run_tests  # noqa: E402

LINE = 300_000  # bytes of one output line (the probes crashed from ~120 KB on)


def long_line_worker(prefix, then="", code=0):
    """argv of a worker printing `prefix` + LINE bytes on one line, then `then` lines, then exiting."""
    src = (f"import sys; sys.stdout.write({prefix!r} + 'x' * {LINE} + '\\n'); "
           f"sys.stdout.write({then!r}); sys.stdout.flush(); sys.exit({code})")
    return [PYTHON, "-c", src]


def test_run_metric_pattern_on_a_300kb_line():
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([DDP_LAUNCH, "run", "--no-python", "--run-dir", d, "--metric", "loss=loss=(.*)",
                            *long_line_worker("loss=", "loss=0.25\n")],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"run exited {r.returncode} (139: the regex blew the stack): {r.stderr[-2000:]}")
        with open(os.path.join(d, "metrics.csv")) as f:
            loss = [float(x["value"]) for x in csv.DictReader(f) if x["name"] == "loss"]
        check(loss == [0.25], f"the long line is no number, the short one is: {loss}")


def test_run_pathological_pattern_is_linear():
    # Nested quantifiers: exponential for a backtracking engine, linear for RE2.
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([DDP_LAUNCH, "run", "--no-python", "--run-dir", d, "--metric", "loss=(x*)*y([0-9]+)",
                            *long_line_worker("", "xxy7\n")], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"run exited {r.returncode}: {r.stderr[-2000:]}")


def test_run_rejects_what_re2_cannot_run():
    r = subprocess.run([DDP_LAUNCH, "run", "--no-python", "--metric", r"loss=(a)\1", "/bin/true"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "--metric loss" in r.stderr and "backreferences" in r.stderr,
          f"a backreference must be a usage error naming RE2's limits: {r.returncode} {r.stderr}")


def test_daemon_metrics_and_no_retry_patterns_on_a_300kb_line():
    d = Daemon("--slots", "2")
    try:
        argv = long_line_worker("loss=", "loss=0.5\n")
        job = d.submit(f"name: long-metrics\ncommand: {json.dumps(argv)}\nmetrics: {{loss: 'loss=(.*)'}}\n")
        d.wait_state(job, "SUCCEEDED", 120)
        status, m = d.request("GET", f"/v1/jobs/{job}/metrics")
        check(status == 200 and m["metrics"] == {"loss": [0.5]}, f"metrics of a long-line job: {status} {m}")
        # A failing job whose log has the long line: the no-retry patterns run while the daemon
        # settles the run. The first pattern recursed through the whole line in std::regex.
        argv = long_line_worker("fatal: ", "", code=1)
        spec = (f"name: long-fail\ncommand: {json.dumps(argv)}\n" +
                "restart: {policy: on-failure, max_retries: 3, backoff: {initial: 0s},\n"
                "          no_retry_log_patterns: ['fatal: (.*)', 'never (.*) seen']}\n")
        job = d.submit(spec)
        j = d.wait_state(job, "FAILED", 120)
        check(j["runs"] == 1 and "no-retry pattern" in j["reason"], f"the pattern stops retries: {j}")
        check(d.proc.poll() is None, f"the daemon died settling the run: {d.log()[-2000:]}")
        d.stop()
        d.start()  # it used to die again here, re-settling the same run
        check(d.job(job)["state"] == "FAILED", "the job's state survives the restart")
        check(d.proc.poll() is None, f"the restarted daemon died: {d.log()[-2000:]}")
    finally:
        d.cleanup()


if __name__ == "__main__":
    run_tests([test_run_metric_pattern_on_a_300kb_line, test_run_pathological_pattern_is_linear,
               test_run_rejects_what_re2_cannot_run, test_daemon_metrics_and_no_retry_patterns_on_a_300kb_line])
