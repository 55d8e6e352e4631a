"""Progress drawn with "\\r" (tqdm) is progress (issue 25 item 3.9): a rank whose bar visibly advances
without ever ending a line is not judged hung, under a fixed --hang-timeout or under auto (five
ordinary lines, then only the bar, for longer than auto's 60 s floor); a bar that stops redrawing
is still a hang. The bar's bytes are tqdm's own (tqdm_worker.py)."""
import os
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, check, check_events_schema, read_events, run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "tqdm_worker.py")


def run_job(flags, worker_args, timeout=240):
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        start = time.monotonic()
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "1", "--events", ev,
                            "--shutdown-grace", "2", *flags, WORKER, *worker_args],
                           capture_output=True, text=True, timeout=timeout)
        elapsed = time.monotonic() - start
        events = read_events(ev)
    check_events_schema(events)
    return r, [e for e in events if e["event"] == "hang_detected"], elapsed


def test_a_tqdm_bar_is_progress_under_a_fixed_timeout():
    # 12 s of bar at 0.5 s a step with a 4 s timeout: killed at ~4 s before.
    r, hangs, elapsed = run_job(["--hang-timeout", "4", "--on-hang", "fail"], ["--steps", "24", "--step-s", "0.5"])
    check(r.returncode == 0 and not hangs, f"an advancing bar was judged hung: exit {r.returncode} {hangs} "
                                           f"{r.stderr[-2000:]!r}")
    check(elapsed >= 12, f"the bar did not run: {elapsed:.1f} s")
    check("24/24" in r.stderr and "done" in r.stdout, f"{r.stdout[-500:]!r} {r.stderr[-500:]!r}")


def test_a_bar_that_stops_redrawing_is_still_a_hang():
    r, hangs, elapsed = run_job(["--hang-timeout", "4", "--on-hang", "fail"],
                                ["--steps", "24", "--step-s", "0.5", "--stop-after", "4"])
    check(r.returncode == 1 and len(hangs) == 1, f"a stopped bar was not judged hung: exit {r.returncode} {hangs}")
    check(elapsed < 60, f"found after {elapsed:.1f} s")


def test_auto_keeps_a_script_whose_lines_give_way_to_a_bar():
    # Five ordinary lines (auto's warm-up and a learned 0.1 s interval), then 70 s of only the bar:
    # before, auto's 60 s floor passed without a "line" and the rank was killed.
    r, hangs, elapsed = run_job([], ["--lines", "5", "--steps", "140", "--step-s", "0.5"])
    check(r.returncode == 0 and not hangs, f"auto killed a rank drawing a bar: exit {r.returncode} {hangs} "
                                           f"{r.stderr[-2000:]!r}")
    check(elapsed >= 70, f"the bar did not run past auto's floor: {elapsed:.1f} s")


run_tests([
    test_a_tqdm_bar_is_progress_under_a_fixed_timeout,
    test_a_bar_that_stops_redrawing_is_still_a_hang,
], waiting=[test_auto_keeps_a_script_whose_lines_give_way_to_a_bar])  # 70 s of bar, waited out alongside
