"""Stragglers end to end (issue 13 item 4): real torch 1.13 gloo ranks in lockstep (an all_reduce
every step, the step's metric line printed before it). A rank 0.3 s slower per step is reported
(console warning, `straggler` event) within 20 steps and is not stopped; the same job balanced
never is; an unchanged script's own lines (--metric) with two ranks work too; `--straggler-threshold
off` turns it off."""
import csv
import os
import subprocess
import tempfile

from harness import DDP_LAUNCH, PYTHON, check, check_events_schema, read_events, run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "straggler_worker.py")


def run_job(d, *flags, worker_args=(), nproc=3, timeout=240):
    events = os.path.join(d, "events.jsonl")
    run_dir = os.path.join(d, "run")
    r = subprocess.run([DDP_LAUNCH, "run", "--nproc-per-node", str(nproc), "--python", PYTHON, "--events", events,
                        "--run-dir", run_dir, *flags, WORKER, *worker_args],
                       capture_output=True, text=True, timeout=timeout)
    return r, read_events(events), run_dir


def rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def test_a_rank_slowed_by_0_3_s_per_step_is_reported_within_20_steps():
    with tempfile.TemporaryDirectory() as d:
        r, evs, run_dir = run_job(d, worker_args=["--steps", "30", "--slow-rank", "1"])
        check(r.returncode == 0, f"the job is not stopped: exit {r.returncode}: {r.stderr[-3000:]}")
        check_events_schema(evs)
        found = [e for e in evs if e["event"] == "straggler"]
        check(len(found) == 1, f"one straggler event (once per episode): {found}")
        s = found[0]
        check(s["rank"] == 1 and s["attempt"] == 0, f"rank 1 in attempt 0: {s}")
        check(0 < s["ratio"] < 0.75, f"a ratio under the threshold: {s}")
        check(s["rank_step_s"] > 0.3 and s["rank_step_s"] > s["median_step_s"] + 0.2,
              f"rank 1's step time holds the extra 0.3 s, the others' does not: {s}")
        check(abs(s["ratio"] - s["median_step_s"] / s["rank_step_s"]) < 1e-6, f"ratio = median / rank step time: {s}")
        # Within 20 steps: no rank had reported step 20 when the verdict came (metrics.csv's rows
        # and the event carry the same clock).
        before = [int(float(row["step"])) for row in rows(run_dir) if float(row["time"]) <= s["time"]]
        check(before and max(before) < 20, f"reported after step {max(before or [0])}, not within 20 steps")
        warning = (f"[ddp-launch] warning: rank 1 is a straggler: {s['ratio']:.2f}× the median step rate "
                   f"({s['rank_step_s']:.2f} s/step vs {s['median_step_s']:.2f} s/step) (--straggler-threshold 0.75)")
        check(warning in r.stderr, f"console warning {warning!r} not in {r.stderr[-3000:]!r}")
        check(r.stderr.count("is a straggler") == 1, f"one warning: {r.stderr[-3000:]}")
        for rank in range(3):
            check(f"rank {rank} done after 30 steps" in r.stdout, f"rank {rank} finished: {r.stdout[-2000:]}")


def test_the_balanced_job_is_never_reported():
    with tempfile.TemporaryDirectory() as d:
        r, evs, _ = run_job(d, worker_args=["--steps", "60"])
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
        check(not [e for e in evs if e["event"] == "straggler"], f"a straggler in a balanced job: {evs}")
        check("straggler" not in r.stderr, f"a warning in a balanced job: {r.stderr[-3000:]}")


def test_an_unchanged_scripts_own_lines_two_ranks():
    # --metric's matches are the steps; with two ranks the median rate is their mean.
    with tempfile.TemporaryDirectory() as d:
        r, evs, _ = run_job(d, "--metric", r"loss=Loss ([0-9.]+)", nproc=2,
                            worker_args=["--steps", "30", "--slow-rank", "0", "--plain"])
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
        found = [e for e in evs if e["event"] == "straggler"]
        check(len(found) == 1 and found[0]["rank"] == 0 and found[0]["ratio"] < 0.75, f"rank 0 reported once: {found}")
        check("rank 0 is a straggler" in r.stderr, f"the warning: {r.stderr[-3000:]}")


def test_threshold_off_reports_nothing():
    with tempfile.TemporaryDirectory() as d:
        r, evs, _ = run_job(d, "--straggler-threshold", "off", worker_args=["--steps", "25", "--slow-rank", "2"])
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
        check(not [e for e in evs if e["event"] == "straggler"], f"--straggler-threshold off: {evs}")


run_tests([test_a_rank_slowed_by_0_3_s_per_step_is_reported_within_20_steps, test_the_balanced_job_is_never_reported,
           test_an_unchanged_scripts_own_lines_two_ranks, test_threshold_off_reports_nothing])
