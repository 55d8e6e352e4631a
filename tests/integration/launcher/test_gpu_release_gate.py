"""The health gate before a restart (launcher/supervisor/gpu_release_gate.hpp) with the fake
libnvidia-ml.so.1 (fake_nvml.c: devices, their memory in use and the pids with a compute context,
from $FAKE_NVML_FILE): the next attempt waits until the dead rank's pid is gone from the GPU and its
memory is back to the level before the run; when that does not happen within --gpu-release-timeout,
the restart goes ahead with a warning naming what still holds the GPU."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from harness import DDP_LAUNCH, PYTHON, check, check_events_schema, run_tests, restarts

FAKE_NVML = sys.argv[1]

# Attempt 0 "holds" GPU 0 (writes its pid and 8000 MiB into the fake NVML's file) and dies; attempt 1
# prints a step and succeeds.
WORKER = """
import os, sys
path = os.environ["FAKE_NVML_FILE"]
if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    with open(path + ".w", "w") as f:
        f.write(f"50 8000 80000 {os.getpid()}\\n")
    os.replace(path + ".w", path)
    sys.exit(1)
print("@ddp-metric step=1 loss=0.5", flush=True)
"""


def write_devices(path, line):
    with open(path + ".tmp", "w") as f:
        f.write(line + "\n")
    os.replace(path + ".tmp", path)


def events_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def run_gated(d, timeout_flag, free_after_s):
    devices, events = os.path.join(d, "devices"), os.path.join(d, "ev.jsonl")
    write_devices(devices, "0 100 80000")  # before the run: 100 MiB in use, no context
    worker = os.path.join(d, "worker.py")
    with open(worker, "w") as f:
        f.write(WORKER)
    env = dict(os.environ, DDP_NVML_LIBRARY=FAKE_NVML, FAKE_NVML_FILE=devices)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    freed = {}

    def driver():  # the "driver" frees the dead rank's memory free_after_s after its exit
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(events) and any(e["event"] == "rank_exited" for e in events_of(events)):
                time.sleep(free_after_s)
                freed["at"] = time.time()
                write_devices(devices, "0 100 80000")
                return
            time.sleep(0.01)

    t = threading.Thread(target=driver, daemon=True)
    if free_after_s is not None:
        t.start()
    # --warm-start off: a warm restart waits for the fork server's `import torch` (~1 s here) before
    # spawning, which would hide what is measured here, the gate's own wait.
    r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--max-restarts", "1", "--events", events,
                        "--warm-start", "off", "--gpu-watch-interval", "0", *timeout_flag, worker],
                       capture_output=True, text=True, env=env, timeout=120)
    if free_after_s is not None:
        t.join(5)
    return r, events_of(events), freed


@restarts
def test_restart_waits_until_the_dead_ranks_gpu_memory_is_freed():
    with tempfile.TemporaryDirectory() as d:
        r, evs, freed = run_gated(d, ["--gpu-release-timeout", "20s"], 0.8)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}")
        check("at" in freed, "the test never freed the memory")
        started = [e for e in evs if e["event"] == "rank_started"]
        check(len(started) == 2 and started[1]["time"] >= freed["at"],
              f"attempt 1 started {started[1]['time'] - freed['at']:.3f} s after the memory was freed")
        tl = [e for e in evs if e["event"] == "restart_timeline"]
        check(len(tl) == 1 and tl[0]["gpu_released"] is not None and tl[0]["gpu_released"] >= freed["at"] - 0.05,
              f"timeline: {tl}")
        check(tl[0]["group_stopped"] <= tl[0]["gpu_released"] <= tl[0]["spawn_began"], f"order: {tl[0]}")
        check("GPU memory was freed in" in r.stderr, r.stderr[-1500:])
        check("gpu memory" in tl[0]["summary"], tl[0]["summary"])
        check_events_schema(evs)


@restarts
def test_memory_not_freed_in_time_restarts_anyway_with_a_warning():
    with tempfile.TemporaryDirectory() as d:
        start = time.monotonic()
        r, evs, _ = run_gated(d, ["--gpu-release-timeout", "1s"], None)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}")
        check("GPU memory is not free after 1.0 s (--gpu-release-timeout)" in r.stderr
              and "GPU 0: pid" in r.stderr and "still holds a context" in r.stderr,
              f"no warning naming the held GPU: {r.stderr[-2000:]}")
        started = [e["time"] for e in evs if e["event"] == "rank_started"]
        check(started[1] - started[0] >= 1.0, f"restarted after {started[1] - started[0]:.2f} s, not the 1 s bound")
        del start


@restarts
def test_no_gate_without_nvml_or_with_timeout_0():
    with tempfile.TemporaryDirectory() as d:
        r, evs, _ = run_gated(d, ["--gpu-release-timeout", "0"], None)
        check(r.returncode == 0 and "GPU memory" not in r.stderr, f"exit {r.returncode}: {r.stderr[-1500:]}")
        started = [e["time"] for e in evs if e["event"] == "rank_started"]
        check(started[1] - started[0] < 1.0, f"waited {started[1] - started[0]:.2f} s with the gate off")
        tl = [e for e in evs if e["event"] == "restart_timeline"]
        check(tl and tl[0]["gpu_released"] is None, f"timeline: {tl}")


if __name__ == "__main__":
    run_tests([
        test_restart_waits_until_the_dead_ranks_gpu_memory_is_freed,
        test_memory_not_freed_in_time_restarts_anyway_with_a_warning,
        test_no_gate_without_nvml_or_with_timeout_0,
    ])
