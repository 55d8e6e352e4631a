"""The progress-aware restart budget (launcher/rendezvous/restart_budget.hpp), with real workers:
a crash loop without progress ends after --max-no-progress-restarts with exit code 3; a loop whose
checkpoint file (or step) advances goes on past it; --restart-budget progress counts only restarts
without progress; --min-restart-interval spaces the attempts."""
import os
import subprocess
import tempfile

from harness import DDP_LAUNCH, check, check_events_schema, run_script_worker, run_tests, restarts

# Each attempt: read the checkpoint iteration, write it + ADVANCE while ATTEMPT < ADVANCE_UNTIL, then
# fail unless the attempt is SUCCEED_AT.
CHECKPOINT_WORKER = """
import os, sys
path = os.environ["CKPT"]
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
try:
    it = int(open(path).read())
except OSError:
    it = 0
if attempt < int(os.environ.get("ADVANCE_UNTIL", "1000")):
    with open(path + ".tmp", "w") as f:
        f.write(f"{it + 10}\\n")
    os.replace(path + ".tmp", path)
print(f"attempt {attempt} at iteration {it}", flush=True)
sys.exit(0 if attempt == int(os.environ.get("SUCCEED_AT", "-1")) else 1)
"""

# Reports a step past the last attempt's (steps mode), then fails until SUCCEED_AT. (It lives a
# moment after its step line, as a training loop does: the supervisor weighs the steps it read by
# the time the group is gone, and a line still in the pipe at the exit may be read after.)
STEP_WORKER = """
import os, sys, time
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
print(f"@ddp-metric step={(attempt + 1) * 10} loss=0.5", flush=True)
time.sleep(0.3)
sys.exit(0 if attempt == int(os.environ["SUCCEED_AT"]) else 1)
"""

CRASH_WORKER = """
import sys
print("crashing before any step", flush=True)
sys.exit(1)
"""


def of(events, kind):
    return [e for e in events if e["event"] == kind]


def with_env(**kw):
    old = {k: os.environ.get(k) for k in kw}
    os.environ.update({k: str(v) for k, v in kw.items()})
    return old


def restore(old):
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@restarts
def test_no_progress_loop_ends_after_n_with_exit_code_3():
    with tempfile.TemporaryDirectory() as d:
        ckpt = os.path.join(d, "iteration")  # evidence that never advances: the last checkpoint stays 7
        with open(ckpt, "w") as f:
            f.write("7\n")
        r, events = run_script_worker(d, "crash.py", CRASH_WORKER, 2, "--max-restarts", "10",
                                      "--max-no-progress-restarts", "2", "--checkpoint-file", ckpt)
        check(r.returncode == 3, f"exit code {r.returncode}, not 3: {r.stderr[-2000:]}")
        restarts = of(events, "restarting")
        check([e["no_progress_restarts"] for e in restarts] == [1, 2], f"restarting events: {restarts}")
        check(all(not e["progress"] and e["restarts_left"] == 10 - e["attempt"] for e in restarts), str(restarts))
        fin = of(events, "finished")[-1]
        check(fin["gave_up"] == "no_progress" and fin["attempts"] == 3 and fin["exit_code"] == 3, str(fin))
        check("no progress in 3 attempts in a row" in r.stderr and "--max-no-progress-restarts 2" in r.stderr,
              f"the reason is not said: {r.stderr[-2000:]}")
        check_events_schema(events)


@restarts
def test_no_evidence_restarts_up_to_max_restarts_as_torchrun():
    # No --checkpoint-file and no step line ever: nothing shows a loop, so the default
    # --max-no-progress-restarts 3 does not end it; --max-restarts 4 is spent and the job exits 1.
    with tempfile.TemporaryDirectory() as d:
        r, events = run_script_worker(d, "crash.py", CRASH_WORKER, 2, "--max-restarts", "4")
        check(r.returncode == 1, f"exit code {r.returncode}, not 1: {r.stderr[-2000:]}")
        check(len(of(events, "restarting")) == 4, f"restarting events: {of(events, 'restarting')}")
        fin = of(events, "finished")[-1]
        check(fin["gave_up"] == "max_restarts" and fin["attempts"] == 5, str(fin))


@restarts
def test_budget_spent_first_keeps_exit_1():
    with tempfile.TemporaryDirectory() as d:
        r, events = run_script_worker(d, "crash.py", CRASH_WORKER, 1, "--max-restarts", "2")
        check(r.returncode == 1, f"exit code {r.returncode}: {r.stderr[-2000:]}")
        check(of(events, "finished")[-1]["gave_up"] == "max_restarts", str(of(events, "finished")))


@restarts
def test_checkpoint_progress_continues_past_n():
    with tempfile.TemporaryDirectory() as d:
        ckpt = os.path.join(d, "iteration.txt")
        old = with_env(CKPT=ckpt, SUCCEED_AT=4)
        try:
            r, events = run_script_worker(d, "ckpt.py", CHECKPOINT_WORKER, 1, "--max-restarts", "10",
                                          "--max-no-progress-restarts", "1", "--checkpoint-file", ckpt)
        finally:
            restore(old)
        check(r.returncode == 0, f"exit code {r.returncode}: {r.stderr[-2000:]}")
        restarts = of(events, "restarting")
        check([e["checkpoint"] for e in restarts] == [10, 20, 30, 40], f"checkpoints: {restarts}")
        check(all(e["progress"] and e["no_progress_restarts"] == 0 for e in restarts), str(restarts))
        check_events_schema(events)


@restarts
def test_step_progress_continues_past_n():
    with tempfile.TemporaryDirectory() as d:
        old = with_env(SUCCEED_AT=3)
        try:
            r, events = run_script_worker(d, "steps.py", STEP_WORKER, 2, "--max-restarts", "10",
                                          "--max-no-progress-restarts", "0")
        finally:
            restore(old)
        check(r.returncode == 0, f"exit code {r.returncode}: {r.stderr[-2000:]}")
        restarts = of(events, "restarting")
        check([e["step"] for e in restarts] == [10, 20, 30] and all(e["progress"] for e in restarts), str(restarts))


@restarts
def test_restart_budget_progress_counts_only_restarts_without_progress():
    for mode, code, attempts in (("progress", 1, 5), ("count", 1, 2)):
        with tempfile.TemporaryDirectory() as d:
            ckpt = os.path.join(d, "iteration.txt")
            old = with_env(CKPT=ckpt, ADVANCE_UNTIL=3)  # attempts 0, 1, 2 advance; 3 and 4 do not
            try:
                r, events = run_script_worker(d, "ckpt.py", CHECKPOINT_WORKER, 1, "--max-restarts", "1",
                                              "--restart-budget", mode, "--checkpoint-file", ckpt)
            finally:
                restore(old)
            fin = of(events, "finished")[-1]
            check(r.returncode == code and fin["attempts"] == attempts and fin["gave_up"] == "max_restarts",
                  f"--restart-budget {mode}: exit {r.returncode}, {fin}: {r.stderr[-1500:]}")
            if mode == "progress":
                left = [e["restarts_left"] for e in of(events, "restarting")]
                check(left == [1, 1, 1, 0], f"restarts_left per restart: {left}")


@restarts
def test_min_restart_interval_spaces_the_attempts():
    with tempfile.TemporaryDirectory() as d:
        r, events = run_script_worker(d, "crash.py", CRASH_WORKER, 1, "--max-restarts", "1",
                                      "--min-restart-interval", "2s")
        check(r.returncode == 1, f"exit code {r.returncode}: {r.stderr[-2000:]}")
        started = [e["time"] for e in of(events, "rank_started")]
        check(len(started) == 2 and started[1] - started[0] >= 1.95,
              f"attempts started {started[1] - started[0]:.2f} s apart, not 2 s")
        restarting = of(events, "restarting")[0]
        check(restarting["delay_s"] > 1.0, str(restarting))
        check("(--min-restart-interval)" in r.stderr, r.stderr[-1500:])
    with tempfile.TemporaryDirectory() as d:
        # Without it the first restart is immediate (within the pipes' drain). Cold: a warm restart
        # right after the launch waits for the warm process's `import torch` (1-2 s here), which is
        # not what this measures.
        r, events = run_script_worker(d, "crash.py", CRASH_WORKER, 1, "--max-restarts", "1", "--warm-start", "off")
        started = [e["time"] for e in of(events, "rank_started")]
        check(of(events, "restarting")[0]["delay_s"] == 0, str(of(events, "restarting")))
        check(started[1] - started[0] < 1.5, f"a restart without the flag waited {started[1] - started[0]:.2f} s")


def test_bad_values_are_refused_naming_the_flag():
    with tempfile.TemporaryDirectory() as d:
        for flags, word in ((["--max-no-progress-restarts", "-1"], "--max-no-progress-restarts"),
                            (["--restart-budget", "often"], "--restart-budget"),
                            (["--min-restart-interval", "soon"], "--min-restart-interval")):
            r = subprocess.run([DDP_LAUNCH, "run", *flags, "--no-python", "/bin/true"], capture_output=True,
                               text=True, timeout=60)
            check(r.returncode == 2 and word in r.stderr, f"{flags}: exit {r.returncode}: {r.stderr[-600:]}")


if __name__ == "__main__":
    run_tests([
        test_no_progress_loop_ends_after_n_with_exit_code_3,
        test_budget_spent_first_keeps_exit_1,
        test_no_evidence_restarts_up_to_max_restarts_as_torchrun,
        test_checkpoint_progress_continues_past_n,
        test_step_progress_continues_past_n,
        test_restart_budget_progress_counts_only_restarts_without_progress,
        test_min_restart_interval_spaces_the_attempts,
        test_bad_values_are_refused_naming_the_flag,
    ])
