"""The hang watchdog (`run --hang-timeout`, `--on-hang`) with real torch 1.13 gloo ranks: rank 1
sleeps forever at step 5 of attempt 0 while rank 0 blocks in that step's all_reduce. Detection
within the timeout (+ 2 s), the summary names rank 1 and says rank 0 waited, attempt 1 finishes;
--on-hang fail ends the job; auto fires on a script that prints every step; a quiet but alive
phase (auto) is not killed; heartbeat-file writes keep a quiet job alive under a fixed timeout.

Measured times are printed (the acceptance numbers: detection latency, auto's firing time)."""
import os
import shutil
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, check, check_events_schema, read_events, run_tests, restarts

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "hang_step_worker.py")


def run_job(flags, worker_args, timeout=240):
    """Runs a 2-rank job; returns (completed process, events, the hang mark's wall time or None, elapsed)."""
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        mark = os.path.join(d, "hang_mark")
        start = time.monotonic()
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--events", ev,
                            "--shutdown-grace", "3", *flags, WORKER, "--hang-mark", mark, *worker_args],
                           capture_output=True, text=True, timeout=timeout)
        elapsed = time.monotonic() - start
        events = read_events(ev)
        hang_began = float(open(mark).read()) if os.path.exists(mark) else None
    check_events_schema(events)
    return r, events, hang_began, elapsed


def of_type(events, name):
    return [e for e in events if e["event"] == name]


def line_of(text):
    """The line number of the worker's first line holding `text`."""
    with open(WORKER) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def check_rank1_named(r, events, hang_began, limit_s):
    hangs = of_type(events, "hang_detected")
    check(len(hangs) == 1, f"one hang_detected expected: {hangs}\n{r.stderr}")
    h = hangs[0]
    check(h["attempt"] == 0 and h["suspect"] == 1 and h["ranks"] == [1, 0], f"the suspect is rank 1: {h}")
    check(h["first_by_s"] is not None and h["first_by_s"] >= 0.05, f"rank 1 went silent clearly first: {h}")
    # The forensics before the kill: every rank's stacks in the run directory (kept), and the summary
    # names the odd rank out with its file:line and says rank 0 waits in the collective.
    check(h["stacks_file"] and h["stacks_file"].endswith("attempt_0/hang_stacks.txt"), f"stacks file: {h}")
    check(os.path.exists(h["stacks_file"]), f"the stacks file was removed: {h['stacks_file']}")
    stacks = open(h["stacks_file"]).read()
    check("load_batch" in stacks and "all_reduce" in stacks, f"both ranks' stacks: {stacks[:3000]}")
    sleep_line = line_of("time.sleep(1e9)")
    reduce_line = line_of("dist.all_reduce(t)")
    want = (f"Stacks: rank 0 waits in all_reduce (hang_step_worker.py:{reduce_line}); "
            f"rank 1 is in hang_step_worker.py:{sleep_line} load_batch: time.sleep(1e9)")
    check(want in r.stderr, f"want {want!r} in the summary: {r.stderr[-3000:]}")
    check(f"the hung attempt 0's stacks: {h['stacks_file']} (kept)" in r.stderr, f"kept: {r.stderr[-1000:]}")
    shutil.rmtree(os.path.dirname(os.path.dirname(h["stacks_file"])), ignore_errors=True)
    check(hang_began is not None, "rank 1 never reached its hang")
    latency = h["time"] - hang_began
    check(0 < latency <= limit_s, f"detected {latency:.2f} s after rank 1 began to hang (limit {limit_s} s)")
    check("Root cause: rank 1 (local 1) made no progress for" in r.stderr, f"summary: {r.stderr}")
    check("went silent first: it hangs" in r.stderr, f"summary: {r.stderr}")
    check("rank 0 (local 0) waited: silent for" in r.stderr, f"rank 0 waited: {r.stderr}")
    return h, latency


@restarts
def test_fixed_timeout_detects_rank1_restarts_and_attempt1_finishes():
    r, events, began, _ = run_job(["--hang-timeout", "5", "--max-restarts", "1"], ["--hang-rank", "1"])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
    h, latency = check_rank1_named(r, events, began, 9.0)  # 5 s + 2 s, with room for a loaded machine
    print(f"  --hang-timeout 5: detected {latency:.2f} s after rank 1 began to hang "
          f"(rank 1 silent {h['silent_s'][0]:.2f} s, rank 0 {h['silent_s'][1]:.2f} s)", flush=True)
    check(h["hang_timeout"] == "5s" and h["timeout_s"] == 5.0, f"{h}")
    check(len(of_type(events, "restarting")) == 1, "attempt 1 follows the hang")
    check("done rank 0 attempt 1" in r.stdout and "done rank 1 attempt 1" in r.stdout, f"attempt 1: {r.stdout[-800:]}")
    check(of_type(events, "finished")[-1]["exit_code"] == 0, "finished with 0")
    # The group was stopped by the forensics' SIGABRT (faulthandler's dump), not left to gloo's own
    # timeout (600 s).
    exits = [e for e in of_type(events, "rank_exited") if e["attempt"] == 0]
    check(len(exits) == 2 and all(e["signal"] == "SIGABRT" for e in exits), f"attempt 0's exits: {exits}")


def test_on_hang_fail_ends_the_job():
    r, events, began, _ = run_job(["--hang-timeout", "5", "--max-restarts", "1", "--on-hang", "fail"],
                                  ["--hang-rank", "1"])
    check(r.returncode == 1, f"exit {r.returncode}: {r.stderr[-3000:]}")
    check_rank1_named(r, events, began, 9.0)
    check(not of_type(events, "restarting"), "--on-hang fail: no restart despite --max-restarts 1")
    check("job FAILED after 1 attempt(s)" in r.stderr, f"summary: {r.stderr[-2000:]}")


def test_auto_fires_on_a_script_that_prints_every_step():
    r, events, began, _ = run_job(["--max-restarts", "1"], ["--hang-rank", "1", "--steps", "8"])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
    # auto: at least the 60 s floor (steps of 0.2 s are learned as 5 x 0.2 s = 1 s).
    h, latency = check_rank1_named(r, events, began, 60 + 10)
    check(h["hang_timeout"] == "auto" and h["timeout_s"] == 60.0, f"{h}")
    check(h["silent_s"][0] >= 60, f"auto fired before its floor: {h}")
    print(f"  --hang-timeout auto: fired {latency:.2f} s after rank 1 began to hang", flush=True)
    check("(--hang-timeout auto: 60.0 s learned)" in r.stderr, f"summary: {r.stderr[-2000:]}")


def test_auto_keeps_a_quiet_but_alive_job():
    # Five printed steps (the warm-up and a learned 0.2 s interval), then 30 s of computation that
    # prints nothing, then the job goes on and ends.
    r, events, _, elapsed = run_job([], ["--steps", "7", "--quiet-after", "5", "--quiet-s", "30"])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
    check(not of_type(events, "hang_detected"), f"a quiet but alive job was judged hung: {r.stderr[-2000:]}")
    check(elapsed >= 30, f"the quiet phase did not run: {elapsed:.1f} s")


def test_heartbeat_file_keeps_a_quiet_job_alive_under_a_fixed_timeout():
    quiet = ["--steps", "7", "--quiet-after", "3", "--quiet-s", "8"]
    # The one-line Python heartbeat every second, with a 3 s timeout: alive.
    r, events, _, _ = run_job(["--hang-timeout", "3"], quiet + ["--heartbeat"])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}")
    check(not of_type(events, "hang_detected"), f"heartbeats were not seen: {r.stderr[-2000:]}")
    # The same quiet phase without the heartbeat is a hang: the heartbeat is what kept it alive.
    r, events, _, _ = run_job(["--hang-timeout", "3", "--on-hang", "fail"], quiet)
    check(r.returncode == 1, f"exit {r.returncode}: {r.stderr[-3000:]}")
    check(len(of_type(events, "hang_detected")) == 1, f"no hang without the heartbeat: {r.stderr[-2000:]}")


def run_native(env_path):
    """One rank of the C++ hang-native worker (worker SDK handler installed) under --hang-timeout 2."""
    native = os.path.join(os.path.dirname(DDP_LAUNCH), "hang-native")
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        env = dict(os.environ, PATH=env_path)
        r = subprocess.run([DDP_LAUNCH, "run", "--no-python", "--nproc-per-node", "1", "--hang-timeout", "2",
                            "--events", ev, native], capture_output=True, text=True, timeout=120, env=env)
        events = read_events(ev)
    check_events_schema(events)
    hangs = of_type(events, "hang_detected")
    check(r.returncode == 1 and len(hangs) == 1, f"exit {r.returncode}, hangs {hangs}: {r.stderr[-3000:]}")
    check(hangs[0]["stacks_file"] and os.path.exists(hangs[0]["stacks_file"]), f"stacks file: {hangs[0]}")
    shutil.rmtree(os.path.dirname(os.path.dirname(hangs[0]["stacks_file"])), ignore_errors=True)
    return r


def test_native_worker_stack_in_the_summary():
    # gdb (from Debian, packaging/install-deps.sh) reads every thread: the file and line of the wait.
    check(shutil.which("gdb") is not None, "gdb is missing: packaging/install-deps.sh installs it")
    r = run_native(os.environ["PATH"])
    line = next(i for i, text in enumerate(open(os.path.join(HERE, "hang_native.cpp")), 1)
                if "cv.wait(lock" in text and i > 20)
    want = f"Stacks: rank 0 is in hang_native.cpp:{line} wait_for_peer"
    check(want in r.stderr, f"want {want!r}: {r.stderr[-3000:]}")
    # Without gdb, the worker SDK's SIGABRT handler prints the backtrace: the function, by name.
    r = run_native("/nonexistent")
    check("Stacks: rank 0 is in wait_for_peer() (hang-native)" in r.stderr, f"no gdb: {r.stderr[-3000:]}")


def test_bad_values_are_usage_errors_naming_the_flag():
    # The option table's message: "FLAG: must be …, not 'VALUE'".
    for flags in [["--hang-timeout", "soon"], ["--hang-timeout", "0"], ["--on-hang", "retry"]]:
        r = subprocess.run([DDP_LAUNCH, "run", *flags, WORKER], capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and f"{flags[0]}: must be" in r.stderr and f"'{flags[1]}'" in r.stderr,
              f"{flags}: exit {r.returncode}: {r.stderr}")
    # sbatch passes them on to every node's `run`, and rejects what run rejects.
    r = subprocess.run([DDP_LAUNCH, "sbatch", "--nnodes", "1", "--hang-timeout", "5", "--on-hang", "fail", WORKER],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and "run --hang-timeout 5 --on-hang fail" in r.stdout, f"{r.stdout}{r.stderr}")
    r = subprocess.run([DDP_LAUNCH, "sbatch", "--nnodes", "1", "--on-hang", "never", WORKER],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "--on-hang: must be" in r.stderr and "'never'" in r.stderr, f"{r.stdout}{r.stderr}")


run_tests([
    test_bad_values_are_usage_errors_naming_the_flag,
    test_fixed_timeout_detects_rank1_restarts_and_attempt1_finishes,
    test_native_worker_stack_in_the_summary,
    test_on_hang_fail_ends_the_job,
    test_heartbeat_file_keeps_a_quiet_job_alive_under_a_fixed_timeout,
], waiting=[  # auto's 60 s floor and a 30 s quiet phase: waited out alongside the cases above
    test_auto_fires_on_a_script_that_prints_every_step,
    test_auto_keeps_a_quiet_but_alive_job,
])
