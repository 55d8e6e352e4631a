"""GPU watch with a fake libnvidia-ml.so.1 (fake_nvml.c, built by the tests; its devices come from
$FAKE_NVML_FILE) loaded through the same dlopen path as the real one ($DDP_NVML_LIBRARY): samples
reach the event stream and metrics.csv, a rank whose GPU stays low gets ONE actionable warning, a
busy one none; no NVML means no watch and no complaint."""
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

from harness import DDP_LAUNCH, LineReader, check, check_events_schema, free_port, run_tests

FAKE_NVML = sys.argv[1]


def write_devices(path, *utils):
    with open(path + ".tmp", "w") as f:
        for u in utils:
            f.write(f"{u} 1024 16384\n")
    os.replace(path + ".tmp", path)


def test_low_gpu_warns_once_and_samples_are_recorded():
    with tempfile.TemporaryDirectory() as d:
        devices, run_dir, events = os.path.join(d, "devices"), os.path.join(d, "run"), os.path.join(d, "ev.jsonl")
        write_devices(devices, 95, 35)  # GPU 0 busy, GPU 1 starved
        flag = os.path.join(d, "stop")
        env = dict(os.environ, DDP_NVML_LIBRARY=FAKE_NVML, FAKE_NVML_FILE=devices)
        env.pop("CUDA_VISIBLE_DEVICES", None)
        # The workers wait for the test to say stop (a file), at most 60 s.
        worker = f"for i in $(seq 600); do [ -e {flag} ] && exit 0; sleep 0.1; done; exit 1"
        p = subprocess.Popen([DDP_LAUNCH, "run", "--no-python", "--nproc-per-node", "2", "--run-dir", run_dir,
                              "--events", events, "--gpu-watch-interval", "100ms", "--gpu-low-util", "50",
                              "--gpu-low-window", "1s", "/bin/sh", "-c", worker],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            err = LineReader(p.stderr)
            warning = err.wait_for("warning: GPU", 30, "the low-utilisation warning")
            check("GPU 1 (rank 1) at 35 % for 1 s: raise the per-rank batch (--per-rank-batch) or DataLoader workers"
                  in warning, f"warning text: {warning}")
            write_devices(devices, 95, 90)  # now busy: samples follow
            time.sleep(0.6)
            write_devices(devices, 95, 10)  # low again for longer than the window: no second warning
            time.sleep(1.6)
            open(flag, "w").close()
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        rest = p.stderr.read() if not p.stderr.closed else ""
        check(p.returncode == 0, f"exit {p.returncode}")
        stderr = "".join(err.lines) + rest
        check(stderr.count("warning: GPU") == 1, f"not exactly one warning: {stderr}")
        evs = [json.loads(line) for line in open(events)]
        samples = [e for e in evs if e["event"] == "gpu_sample"]
        low = [e for e in evs if e["event"] == "gpu_low_util"]
        check(len(low) == 1 and low[0]["rank"] == 1 and low[0]["device"] == "1", f"low events: {low}")
        check_events_schema(evs)  # gpu_sample and gpu_low_util as docs/events.schema.json has them
        utils1 = [e["util"] for e in samples if e["rank"] == 1]
        check(35 in utils1 and 90 in utils1 and 10 in utils1, f"rank 1 samples: {utils1}")
        check(all(e["util"] == 95 and e["mem_total_mib"] == 16384 for e in samples if e["rank"] == 0), "rank 0 samples")
        with open(os.path.join(run_dir, "metrics.csv")) as f:
            rows = list(csv.DictReader(f))
        util = {(r["rank"], float(r["value"])) for r in rows if r["name"] == "gpu_util"}
        check(("0", 95.0) in util and ("1", 35.0) in util, f"gpu_util rows: {sorted(util)}")
        check(any(r["name"] == "gpu_mem_used_mib" and float(r["value"]) == 1024 for r in rows), "memory rows")


def test_cuda_visible_devices_order_maps_local_ranks():
    with tempfile.TemporaryDirectory() as d:
        devices, events = os.path.join(d, "devices"), os.path.join(d, "ev.jsonl")
        write_devices(devices, 11, 22, 33)
        env = dict(os.environ, DDP_NVML_LIBRARY=FAKE_NVML, FAKE_NVML_FILE=devices, CUDA_VISIBLE_DEVICES="2,0")
        r = subprocess.run([DDP_LAUNCH, "run", "--no-python", "--nproc-per-node", "2", "--events", events,
                            "--gpu-watch-interval", "100ms", "/bin/sleep", "0.5"],
                           capture_output=True, text=True, env=env, timeout=30)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        samples = {(e["rank"], e["device"], e["util"]) for e in map(json.loads, open(events))
                   if e["event"] == "gpu_sample"}
        check(samples == {(0, "2", 33), (1, "0", 11)}, f"samples {samples}")


def test_no_nvml_no_watch():
    with tempfile.TemporaryDirectory() as d:
        events = os.path.join(d, "ev.jsonl")
        env = dict(os.environ, DDP_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
        r = subprocess.run([DDP_LAUNCH, "run", "--no-python", "--events", events, "--gpu-watch-interval", "100ms",
                            "/bin/sleep", "0.3"], capture_output=True, text=True, env=env, timeout=30)
        check(r.returncode == 0 and "GPU watch" not in r.stderr, f"exit {r.returncode}: {r.stderr}")
        check(not any(json.loads(line)["event"].startswith("gpu") for line in open(events)), "gpu events without NVML")
        doc = subprocess.run([DDP_LAUNCH, "doctor", "--json"], capture_output=True, text=True, env=env, timeout=120)
        gpu = next(c for c in json.loads(doc.stdout)["checks"] if c["check"] == "gpu")
        check("GPU watch" in gpu["finding"] and "not available" in gpu["finding"], f"doctor: {gpu}")


def test_dynamic_rendezvous_samples_carry_the_rounds_global_rank():
    # Two one-rank nodes under --rdzv-backend c10d: each node's rank is its round's node rank, not
    # the rank 0 its own flags would plan. The samples (and a warning) must say so.
    with tempfile.TemporaryDirectory() as d:
        devices = os.path.join(d, "devices")
        write_devices(devices, 20)
        env = dict(os.environ, DDP_NVML_LIBRARY=FAKE_NVML, FAKE_NVML_FILE=devices)
        env.pop("CUDA_VISIBLE_DEVICES", None)
        endpoint = f"127.0.0.1:{free_port()}"
        nodes = []
        for name in ("alpha", "beta"):
            events = os.path.join(d, f"{name}.jsonl")
            cmd = [DDP_LAUNCH, "run", "--no-python", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
                   "--rdzv-id", "gpu", "--nnodes", "2", "--nproc-per-node", "1", "--local-addr", name,
                   "--rdzv-conf", "last_call_timeout=1,heartbeat_timeout=2,join_timeout=60,exit_barrier_timeout=60",
                   "--events", events, "--gpu-watch-interval", "100ms", "--gpu-low-util", "50",
                   "--gpu-low-window", "300ms", "/bin/sh", "-c", "sleep 1.5"]
            nodes.append((name, events, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                         text=True, env=env)))
        results = {}
        try:
            for name, events, p in nodes:
                _, err = p.communicate(timeout=90)
                results[name] = (p.returncode, err, [json.loads(line) for line in open(events)])
        finally:
            for _, _, p in nodes:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        node_ranks = set()
        for name, (code, err, evs) in results.items():
            check(code == 0, f"{name} exited {code}: {err[-3000:]}")
            node_rank = next(e for e in evs if e["event"] == "rendezvous_complete")["node_rank"]
            node_ranks.add(node_rank)
            ranks = {e["rank"] for e in evs if e["event"] == "gpu_sample"}
            check(ranks == {node_rank}, f"{name} is rank {node_rank} but its GPU samples say {ranks}")
            low = [e["rank"] for e in evs if e["event"] == "gpu_low_util"]
            check(low == [node_rank], f"{name} (rank {node_rank}): low-utilisation events for ranks {low}")
            check(f"(rank {node_rank}) at 20 %" in err, f"{name}: warning without its rank {node_rank}: {err[-2000:]}")
        check(node_ranks == {0, 1}, f"node ranks {node_ranks}")


run_tests([
    test_low_gpu_warns_once_and_samples_are_recorded,
    test_cuda_visible_devices_order_maps_local_ranks,
    test_no_nvml_no_watch,
    test_dynamic_rendezvous_samples_carry_the_rounds_global_rank,
])
