"""A SIGSTOPped rank is said to be stopped (issue 25): the hang watchdog finds it silent, and the
summary says it is stopped (and that `kill -CONT` resumes it) at once, instead of waiting out the
stack collection's bound for a faulthandler traceback a stopped process cannot write."""
import tempfile
import time

from harness import check, check_events_schema, run_script_worker, run_tests

WORKER = """import os, signal, time
for i in range(5):
    print(f"step {i}", flush=True)
    time.sleep(0.1)
os.kill(os.getpid(), signal.SIGSTOP)  # as `kill -STOP` from a terminal would
time.sleep(600)
"""


def test_a_stopped_rank_is_named_stopped_at_once():
    with tempfile.TemporaryDirectory() as d:
        start = time.monotonic()
        r, events = run_script_worker(d, "stop_self.py", WORKER, 1, "--hang-timeout", "3", "--on-hang", "fail",
                                      "--shutdown-grace", "2")
        took = time.monotonic() - start
    check_events_schema(events)
    check(r.returncode == 1, f"exit {r.returncode}: {r.stderr[-3000:]}")
    check(len([e for e in events if e["event"] == "hang_detected"]) == 1, f"{r.stderr[-3000:]}")
    check("it is stopped (SIGSTOP or another stop signal; who sent it is not recorded)" in r.stderr,
          f"not said to be stopped: {r.stderr[-3000:]}")
    check("kill -CONT" in r.stderr, f"{r.stderr[-3000:]}")
    check("no faulthandler traceback" not in r.stderr, f"waited for a traceback: {r.stderr[-3000:]}")
    # 3 s of silence, then at once: not the collection's 10 s bound.
    check(took < 12, f"the run took {took:.1f} s")


run_tests([test_a_stopped_rank_is_named_stopped_at_once])
