#!/usr/bin/env python3
"""Dynamic-rendezvous benchmark runner.

1. Join: `rdzv_bench` — K nodes joining one round at once on loopback (the real host, simulated
   joiners), K = 8, 64, 512; goal: 512 in under 1 s.
2. Death → restart: three real supervisors on loopback (`--rdzv-backend c10d`, `/bin/sleep` as the
   worker), one SIGKILLed; the time from the kill to the survivors' workers of the next round
   started (from their --events), for a given heartbeat timeout; goal: heartbeat timeout + < 1 s.

Usage: bench/run_rdzv_bench.py --build-dir build [--reps 3] [--heartbeat 2]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def events(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def wait_for(path, pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for e in events(path):
            if pred(e):
                return e
        time.sleep(0.02)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what} in {path}")


def death_once(launch, heartbeat):
    ep = f"127.0.0.1:{free_port()}"
    tmp = tempfile.mkdtemp(prefix="ddp-rdzv-bench-")
    procs = []
    try:
        conf = f"last_call_timeout=1,heartbeat_timeout={heartbeat},join_timeout=60"
        paths = []
        for name in ("a", "b", "c"):
            ev = os.path.join(tmp, f"{name}.events")
            paths.append(ev)
            procs.append(subprocess.Popen(
                [launch, "run", "--rdzv-backend", "c10d", "--rdzv-endpoint", ep, "--rdzv-id", f"rdzvbench{os.getpid()}",
                 "--nnodes", "2:3", "--nproc-per-node", "2", "--local-addr", name, "--rdzv-conf", conf,
                 "--events", ev, "--no-python", "--shutdown-grace", "5", "/bin/sleep", "600"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, f"{name}.err"), "w")))
            # a hosts the rendezvous (the one killed is c): it binds the endpoint before the others start.
            wait_for(ev, lambda e: e.get("event") == "started", 30, f"{name} started")
        for ev in paths:
            wait_for(ev, lambda e: e.get("event") == "rank_started" and e.get("attempt") == 0, 60, "round 0 workers")
        time.sleep(heartbeat / 2)
        killed = time.time()
        procs[2].send_signal(signal.SIGKILL)
        procs[2].wait()
        started = []
        for ev in paths[:2]:
            e = wait_for(ev, lambda e: e.get("event") == "rank_started" and e.get("attempt") == 1,
                         heartbeat + 30, "the survivors' workers of round 1")
            rc = wait_for(ev, lambda e: e.get("event") == "rendezvous_complete" and e.get("round") == 1, 5, "round 1")
            assert rc["world_size"] == 4, rc
            started.append(e["time"])
        # Whoever bound the endpoint first hosts: the node_lost event is in its stream.
        deadline = time.monotonic() + 5
        lost = None
        while lost is None and time.monotonic() < deadline:
            lost = next((e for ev in paths[:2] for e in events(ev) if e.get("event") == "node_lost"), None)
            time.sleep(0.02)
        if lost is None:
            raise RuntimeError("no node_lost event on either survivor within 5 s")
        return max(started) - killed, lost["time"] - killed
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        for name in os.listdir(tempfile.gettempdir()):  # what the SIGKILLed supervisor left
            if name.startswith(f"ddp-launch-rdzvbench{os.getpid()}-"):
                p = os.path.join(tempfile.gettempdir(), name)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.remove(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--heartbeat", type=float, default=2.0)
    args = ap.parse_args()
    bindir = os.path.join(args.build_dir, "bin")
    print("## K nodes joining one round at once (loopback)\n")
    r = subprocess.run([os.path.join(bindir, "rdzv_bench"), "--reps", str(args.reps)], capture_output=True,
                       text=True, timeout=600)
    print(r.stdout + r.stderr)
    print(f"## node death → survivors' workers restarted (heartbeat timeout {args.heartbeat:g} s)\n")
    print("| run | kill → declared dead s | declared dead → workers restarted s | kill → workers restarted s | "
          "goal (heartbeat timeout + 1 s) | met |")
    print("|---|---|---|---|---|---|")
    for i in range(args.reps):
        restart, dead = death_once(os.path.join(bindir, "ddp-launch"), args.heartbeat)
        goal = args.heartbeat + 1
        print(f"| {i + 1} | {dead:.2f} | {restart - dead:.3f} | {restart:.2f} | < {goal:g} s | "
              f"{'yes' if restart < goal else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
