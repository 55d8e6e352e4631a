"""torch's elastic file timer, served by `ddp-launch run` (TORCHELASTIC_ENABLE_FILE_TIMER=1), against
torch 1.13's own FileTimerClient: a rank whose `with expires(after=2)` block overruns is killed
soon after the deadline and named as the root cause, the supervisor lives on (and restarts the group
with --max-restarts); released timers never fire; garbage in the FIFO and requests naming other
processes harm nobody; a timer pending far off costs the supervisor no wake-ups; without the
variable nothing is created or exported."""
import json
import os
import re
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, LineReader, check, check_events_schema, read_events, run_tests, restarts

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "file_timer_worker.py")
FIFO_NAME = "torchelastic_timer.fifo"


def timer_env(**extra):
    env = dict(os.environ)
    env.pop("TORCHELASTIC_TIMER_FILE", None)
    env["TORCHELASTIC_ENABLE_FILE_TIMER"] = "1"
    env.update(extra)
    return env


def run(run_dir, nproc, worker_args, env, extra=(), timeout=180):
    ev = os.path.join(run_dir, "events.jsonl")
    start = time.monotonic()
    r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--run-dir", os.path.join(run_dir, "r"),
                        "--nproc-per-node", str(nproc), "--shutdown-grace", "2", *extra, WORKER, *worker_args],
                       capture_output=True, text=True, timeout=timeout, env=env)
    return r, read_events(ev), time.monotonic() - start


def only(events, kind):
    found = [e for e in events if e["event"] == kind]
    check(len(found) == 1, f"expected one {kind} event, got {found}")
    return found[0]


def check_killed_by_timer(r, events, rank, attempt=0):
    """The timer's kill: event, reap, root cause, summary; returns (deadline → signal, deadline → reap)."""
    expired = only([e for e in events if e.get("attempt") == attempt], "timer_expired")
    started = [e for e in events if e["event"] == "rank_started" and e["attempt"] == attempt and e["rank"] == rank]
    check(expired["rank"] == rank and expired["pid"] == started[0]["pid"], f"{expired} vs {started}")
    # torch 1.13's default scope is "<file>#<line>" of its caller's caller: contextlib.py's, as it stands.
    check(expired["signal"] == "SIGKILL" and re.fullmatch(r"\S+#\d+", expired["scope_id"]), f"{expired}")
    exited = [e for e in events if e["event"] == "rank_exited" and e["attempt"] == attempt and e["rank"] == rank]
    check(exited and exited[0]["signal"] == "SIGKILL", f"rank {rank} did not die of SIGKILL: {exited}")
    root = [e for e in events if e["event"] == "root_cause" and e["attempt"] == attempt]
    check(root and root[0]["rank"] == rank and root[0]["role"] == "original failure", f"root cause: {root}")
    check(re.search(rf"Root cause: rank {rank} \(local {rank}\).*killed by SIGKILL \(the torch elastic timer sent "
                    rf"SIGKILL: scope {re.escape(expired['scope_id'])} missed its deadline \d\d:\d\d:\d\d\.\d{{3}}\)",
                    r.stderr), f"summary: {r.stderr}")
    check("torch elastic timer: the `with expires(...)` block at" in r.stderr, f"details: {r.stderr}")
    check("contextlib" not in expired["scope_id"] or "pass scope=" in r.stderr, f"no scope hint: {r.stderr}")
    return expired["time"] - expired["deadline"], exited[0]["time"] - expired["deadline"]


def test_the_rank_that_overruns_its_deadline_is_killed_and_named():
    with tempfile.TemporaryDirectory() as d:
        r, events, took = run(d, 2, ["--hang-rank", "1", "--after", "2", "--sleep", "60"], timer_env())
        check(r.returncode == 1, f"the supervisor must survive and fail the job: exit {r.returncode}: {r.stderr}")
        sent, reaped = check_killed_by_timer(r, events, rank=1)
        print(f"  deadline -> SIGKILL {sent * 1000:.0f} ms, deadline -> reaped {reaped * 1000:.0f} ms, "
              f"whole run {took:.1f} s", flush=True)
        # Measured 1-40 ms on an idle 2-core VM; 3 s allows for a loaded one.
        check(0 <= sent and reaped < 3.0, f"killed {reaped:.2f} s after the deadline")
        check(took < 60, f"the run took {took:.0f} s: rank 0 was not stopped after rank 1's kill")
        check(not os.path.exists(os.path.join(d, "r", FIFO_NAME)), "the FIFO outlived the run")
        check_events_schema(events)


@restarts
def test_restart_after_the_timer_kill_succeeds_and_released_timers_never_fire():
    with tempfile.TemporaryDirectory() as d:
        r, events, _ = run(d, 1, ["--hang-rank", "0", "--after", "2", "--sleep", "60", "--quick"], timer_env(),
                           extra=["--max-restarts", "1"])
        check(r.returncode == 0, f"attempt 1 should succeed: exit {r.returncode}: {r.stderr}")
        check_killed_by_timer(r, events, rank=0, attempt=0)
        check(len([e for e in events if e["event"] == "timer_expired"]) == 1, "a released timer fired")
        check("rank 0 survived its released timers" in r.stdout, f"stdout: {r.stdout}")
        check("job succeeded on attempt 1 after 1 restart(s)" in r.stderr, f"stderr: {r.stderr}")
        check_events_schema(events)


def measure_waiting_supervisor(run_dir, ev, worker_args, marker, what, measure):
    """A 1-rank run of WORKER with `worker_args`: once the worker prints `marker` (it then waits inside
    its expires() blocks) and 0.5 s more (its requests read, the timer armed), `measure(pid)` looks at
    the supervisor; returns (exit code, output) once the run has ended, killing it if measure fails."""
    proc = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--run-dir",
                             os.path.join(run_dir, "r"), "--nproc-per-node", "1", WORKER, *worker_args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=timer_env())
    try:
        out = LineReader(proc.stdout, proc, "ddp-launch run")
        out.wait_for(marker, 120, what)
        time.sleep(0.5)
        measure(proc.pid)
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out.drain()
    return rc, "\n".join(out.lines)


def test_garbage_and_foreign_pids_harm_nobody_and_an_idle_timer_costs_no_wakeups():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")

        def few_wakeups(pid):  # its one timer is due 600 s from now: nothing should wake it
            switches = lambda: sum(  # noqa: E731 - every thread's context switches: its wake-ups
                int(v) for t in os.listdir(f"/proc/{pid}/task")
                for k, v in (l.split(":") for l in open(f"/proc/{pid}/task/{t}/status"))
                if k.endswith("ctxt_switches"))
            before = switches()
            time.sleep(2)
            woke = switches() - before
            print(f"  supervisor wake-ups in 2 s with a timer due in 600 s: {woke}", flush=True)
            check(woke <= 2, f"the supervisor woke {woke} times in 2 s with nothing due")

        rc, text = measure_waiting_supervisor(d, ev, ["--garbage", "--quick", "--child", "--idle", "4"], "idle",
                                              "the worker to wait inside a far-off expires() block", few_wakeups)
        check(rc == 0, f"exit {rc}: {text}")
        events = read_events(ev)
        supervisor = only(events, "started")["supervisor_pid"]
        check(f"ignored a request for pid {supervisor} (scope evil)" in text, f"log: {text}")
        check("ignored a request for pid 1 (scope evil)" in text, f"log: {text}")
        check(text.count("skipped a malformed request") == 2, f"once per sender (the worker; unknown): {text}")
        check(f"skipped a request longer than 4096 bytes" not in text, "logged twice for unknown senders")
        check("bad or foreign requests skipped in all" in text, f"no total: {text}")
        check("rank 0 survived its released timers" in text, f"log: {text}")
        # The child's block overran: the child (a descendant of rank 0) was killed, rank 0 was not.
        check("child exited with -9" in text, f"log: {text}")
        expired = only(events, "timer_expired")
        check(expired["rank"] == 0 and expired["scope_id"] == "child-block" and expired["pid"] != supervisor,
              f"{expired}")
        check_events_schema(events)


def running_share(pid, seconds, samples=100):
    """The share of samples in which the process's main thread is running or runnable (state R):
    about 1 for a loop that spins, whatever share of the CPUs a loaded host gives it; about 0 for
    one that sleeps until its timer."""
    running = 0
    for _ in range(samples):
        with open(f"/proc/{pid}/task/{pid}/stat") as f:
            running += f.read().rsplit(")", 1)[1].split()[0] == "R"
        time.sleep(seconds / samples)
    return running / samples


def test_deadlines_past_2262_and_infinite_ones_cost_the_supervisor_no_cpu():
    # Regression: a deadline past int64 nanoseconds (2262) wrapped the supervisor's timer into a
    # negative wait that fired again and again: 3.99 s of CPU in 4 s. torch's client sends
    # time.time() + after; inf is written as `Infinity`, which is not JSON, and is skipped.
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        # The earliest is the one armed: 2e10 (its wait from now is past 2^63 ns), then the rest.
        far = "2e10,1e300,1.7e308,inf,nan"

        def no_spinning(pid):
            share = running_share(pid, 2)
            print(f"  supervisor's loop running in {share:.0%} of 2 s with deadlines {far}", flush=True)
            check(share < 0.25, f"the supervisor's loop ran {share:.0%} of the time with nothing due: it spins")

        rc, text = measure_waiting_supervisor(d, ev, ["--far", far, "--idle", "4"], "far",
                                              "the worker to wait inside expires() blocks due past 2262", no_spinning)
        check(rc == 0, f"exit {rc}: {text}")
        check("rank 0 left its far-off blocks" in text, f"log: {text}")
        check("skipped a malformed request (not a JSON object): {" in text and "Infinity" in text,
              f"Infinity/NaN not reported: {text}")
        check(not [e for e in read_events(ev) if e["event"] == "timer_expired"], "a far-off timer fired")


def test_without_the_variable_nothing_is_created_or_exported():
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ)
        env.pop("TORCHELASTIC_ENABLE_FILE_TIMER", None)
        env.pop("TORCHELASTIC_TIMER_FILE", None)
        r, _, _ = run(d, 1, ["--report-env"], env)
        check(r.returncode == 0 and "TORCHELASTIC_TIMER_FILE=absent" in r.stdout, f"{r.stdout} {r.stderr}")
        check(not os.path.exists(os.path.join(d, "r", FIFO_NAME)), "a FIFO without the variable")
        check("torch elastic timer" not in r.stderr, f"stderr: {r.stderr}")

        # Not exactly 1 (torch's rule): off, and the log says why.
        env["TORCHELASTIC_ENABLE_FILE_TIMER"] = "true"
        r, _, _ = run(d, 1, ["--report-env"], env)
        check(r.returncode == 0 and "TORCHELASTIC_TIMER_FILE=absent" in r.stdout, f"{r.stdout} {r.stderr}")
        check("TORCHELASTIC_ENABLE_FILE_TIMER=true is not 1" in r.stderr, f"stderr: {r.stderr}")

        # TORCHELASTIC_TIMER_FILE names the FIFO: made there, exported, removed at the end.
        fifo = os.path.join(d, "my.fifo")
        r, _, _ = run(d, 1, ["--report-env"], timer_env(TORCHELASTIC_TIMER_FILE=fifo))
        check(r.returncode == 0 and f"TORCHELASTIC_TIMER_FILE={fifo}" in r.stdout, f"{r.stdout} {r.stderr}")
        check(not os.path.exists(fifo), "the FIFO outlived the run")
        # ...and a file there that is not a FIFO is refused, untouched.
        with open(fifo, "w") as f:
            f.write("mine")
        r, _, _ = run(d, 1, ["--report-env"], timer_env(TORCHELASTIC_TIMER_FILE=fifo))
        check(r.returncode != 0 and "exists and is not a FIFO" in r.stderr, f"exit {r.returncode}: {r.stderr}")
        check(open(fifo).read() == "mine", "the user's file was changed")


run_tests([
    test_the_rank_that_overruns_its_deadline_is_killed_and_named,
    test_restart_after_the_timer_kill_succeeds_and_released_timers_never_fire,
    test_garbage_and_foreign_pids_harm_nobody_and_an_idle_timer_costs_no_wakeups,
    test_deadlines_past_2262_and_infinite_ones_cost_the_supervisor_no_cpu,
    test_without_the_variable_nothing_is_created_or_exported,
])
