"""The restart timeline (launcher/supervisor/restart_timeline.hpp) with real torch ranks: after a
rank fails, the restart_timeline event has every phase, in order (failure seen, group stopped,
spawn began, spawned, interpreter ready, store reached, first progress), and the log says "back to
training in X s: stop …, spawn …, rendezvous …, first step …"."""
import re
import tempfile

from harness import check, check_events_schema, run_script_worker, run_tests, restarts

# torch ranks meet through our store; on attempt 0 rank 1 fails after the rendezvous; attempt 1
# trains a step (a metric line) and ends.
WORKER = """
import os, sys
import torch.distributed as dist
dist.init_process_group("gloo")
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
if attempt == 0 and dist.get_rank() == 1:
    sys.exit(7)
if attempt == 0:
    import time
    time.sleep(60)  # stopped by the teardown
print(f"@ddp-metric step=1 loss=0.5", flush=True)
dist.barrier()
"""

PHASES = ["failure_seen", "group_stopped", "spawn_began", "spawned", "interpreter_ready", "store_reached",
          "first_progress"]


@restarts
def test_timeline_phases_in_order_in_the_event_and_the_log():
    with tempfile.TemporaryDirectory() as d:
        r, events = run_script_worker(d, "train.py", WORKER, 2, "--max-restarts", "1", timeout=240)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2500:]}")
        tl = [e for e in events if e["event"] == "restart_timeline"]
        check(len(tl) == 1, f"restart_timeline events: {tl}")
        t = tl[0]
        check(t["attempt"] == 1 and t["failed_attempt"] == 0, str(t))
        times = [t[p] for p in PHASES]
        check(all(x is not None for x in times), f"a phase is missing: {t}")
        check(times == sorted(times), f"phases out of order: {list(zip(PHASES, times))}")
        check(t["gpu_released"] is None, "no NVML here: no gate")
        check(abs(t["back_in_s"] - (t["first_progress"] - t["failure_seen"])) < 1e-6, str(t))
        # The failure seen is the failed rank's reap, before its teardown began.
        stopping = [e for e in events if e["event"] == "group_stopping"][0]
        check(t["failure_seen"] <= stopping["time"], f"failure seen after the teardown began: {t}")
        started = [e for e in events if e["event"] == "rank_started" and e["attempt"] == 1]
        check(all(t["spawn_began"] <= e["time"] <= t["spawned"] + 0.05 for e in started), f"{started} vs {t}")
        line = re.search(r"attempt 1: back to training in ([0-9.]+) s: stop [0-9.]+, wait [0-9.]+, spawn [0-9.]+, "
                         r"interpreter [0-9.]+, rendezvous [0-9.]+, first step [0-9.]+", r.stderr)
        check(line is not None, f"no summary line: {r.stderr[-2500:]}")
        check(t["summary"] in r.stderr, f"the event's summary is not the log's: {t['summary']}")
        check_events_schema(events)


if __name__ == "__main__":
    run_tests([test_timeline_phases_in_order_in_the_event_and_the_log])
