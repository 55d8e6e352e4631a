#!/usr/bin/env python3
"""Dynamic-rendezvous benchmark runner.

1. Join: `rdzv_bench` — K nodes joining one round at once on loopback (the real host, simulated
   joiners), K = 8, 64, 512; goal: 512 in under 1 s. Side by side with torch 1.13's own c10d dynamic
   rendezvous at the same K (`torch_rdzv_bench.py`, run with /usr/bin/python3: one thread per
   simulated node); the two take turns per K, who goes first alternates; a torch run not done within
   `--torch-give-up` seconds is reported so and torch is not run at larger K.
2. Store host death: the same three supervisors, the one hosting the rendezvous store SIGKILLed; the
   time until both survivors have stopped their workers and exited 1; goal: heartbeat timeout + < 1 s.
3. Death → restart: three real supervisors on loopback (`--rdzv-backend c10d`, `/bin/sleep` as the
   worker), one SIGKILLed; the time from the kill to the survivors' workers of the next round
   started (from their --events), for a given heartbeat timeout; goal: heartbeat timeout + < 1 s.

Usage: /usr/bin/python3 bench/run_rdzv_bench.py --build-dir build [--reps 3] [--heartbeat 2] [--nodes 8 64 512]
       [--torch-give-up 120] [--only join|host-death|death]
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


HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PYTHON = "/usr/bin/python3"  # the interpreter with torch 1.13


def json_lines(cmd, timeout):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    out = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 and not out:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return out


def join_table(bindir, ks, reps, give_up):
    print("| nodes K | ours median ms (min–max) | ours CPU s | torch 1.13 median ms (min–max) | torch CPU s | "
          "torch ÷ ours (time) | goal (ours) | met |")
    print("|---|---|---|---|---|---|---|---|")
    torch_failed = None
    for i, k in enumerate(ks):
        def ours():
            return json_lines([os.path.join(bindir, "rdzv_bench"), "--nodes", str(k), "--reps", str(reps), "--json"],
                              600)[0]

        def theirs():
            if torch_failed:
                return {"error": f"not run (K={torch_failed} did not finish)"}
            return json_lines([TORCH_PYTHON, os.path.join(HERE, "torch_rdzv_bench.py"), "--nodes", str(k), "--reps",
                               str(reps), "--give-up", str(give_up)], give_up * reps + 300)[0]

        if i % 2 == 0:
            o, t = ours(), theirs()
        else:
            t, o = theirs(), ours()
        if "error" in t and not torch_failed:
            torch_failed = k
        ms = lambda r: f"{r['median_s'] * 1e3:.1f} ({r['min_s'] * 1e3:.1f}–{r['max_s'] * 1e3:.1f})"
        ratio = f"{t['median_s'] / o['median_s']:.0f}×" if "error" not in t else "—"
        goal = "< 1 s" if k == 512 else ""
        met = ("yes" if o["median_s"] < 1 else "no") if k == 512 else ""
        theirs_ms, cpu = (ms(t), f"{t['cpu_s']:.2f}") if "error" not in t else (t["error"], "—")
        print(f"| {k} | {ms(o)} | {o['cpu_s']:.3f} | {theirs_ms} | {cpu} | {ratio} | {goal} | {met} |", flush=True)


def host_death_once(launch, heartbeat):
    """The supervisor hosting the rendezvous store SIGKILLed: seconds until each survivor exited (and its code)."""
    ep = f"127.0.0.1:{free_port()}"
    tmp = tempfile.mkdtemp(prefix="ddp-rdzv-bench-")
    run_id = f"rdzvbenchh{os.getpid()}"
    procs = []
    try:
        conf = f"last_call_timeout=1,heartbeat_timeout={heartbeat},join_timeout=600"
        paths = []
        for name in ("a", "b", "c"):
            ev = os.path.join(tmp, f"{name}.events")
            paths.append(ev)
            procs.append(subprocess.Popen(
                [launch, "run", "--rdzv-backend", "c10d", "--rdzv-endpoint", ep, "--rdzv-id", run_id,
                 "--nnodes", "2:3", "--nproc-per-node", "2", "--local-addr", name, "--rdzv-conf", conf,
                 "--events", ev, "--no-python", "--shutdown-grace", "5", "/bin/sleep", "600"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, f"{name}.err"), "w")))
            wait_for(ev, lambda e: e.get("event") == "started", 30, f"{name} started")  # a hosts
        for ev in paths:
            wait_for(ev, lambda e: e.get("event") == "rank_started" and e.get("attempt") == 0, 60, "round 0 workers")
        time.sleep(heartbeat / 2)
        killed = time.monotonic()
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        took, codes = [], []
        for p in procs[1:]:
            codes.append(p.wait(timeout=heartbeat + 60))
            took.append(time.monotonic() - killed)
        return max(took), codes
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        for name in os.listdir(tempfile.gettempdir()):
            if name.startswith(f"ddp-launch-{run_id}-"):
                p = os.path.join(tempfile.gettempdir(), name)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.remove(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--heartbeat", type=float, default=2.0)
    ap.add_argument("--nodes", type=int, nargs="+", default=[8, 64, 512])
    ap.add_argument("--torch-give-up", type=float, default=120)
    ap.add_argument("--only", choices=["join", "death", "host-death"])
    args = ap.parse_args()
    bindir = os.path.join(args.build_dir, "bin")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}\n")
    if args.only != "death":
        print("## K nodes joining one round at once (loopback): ours and torch 1.13's c10d rendezvous\n")
        join_table(bindir, args.nodes, args.reps, args.torch_give_up)
        print()
    if args.only == "join":
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        return
    if args.only in (None, "host-death"):
        print(f"## the store's host SIGKILLed → survivors stopped and exited (heartbeat timeout {args.heartbeat:g} s, "
              "join timeout 600 s)\n")
        print("| run | kill → last survivor exited s | exit codes | goal (heartbeat timeout + 1 s) | met |")
        print("|---|---|---|---|---|")
        for i in range(args.reps):
            took, codes = host_death_once(os.path.join(bindir, "ddp-launch"), args.heartbeat)
            goal = args.heartbeat + 1
            print(f"| {i + 1} | {took:.2f} | {', '.join(map(str, codes))} | < {goal:g} s | "
                  f"{'yes' if took < goal and codes == [1, 1] else 'no'} |", flush=True)
        print()
        if args.only == "host-death":
            print(f"load average at the end: {os.getloadavg()[0]:.1f}")
            return
    print(f"## node death → survivors' workers restarted (heartbeat timeout {args.heartbeat:g} s)\n")
    print("| run | kill → declared dead s | declared dead → workers restarted s | kill → workers restarted s | "
          "goal (heartbeat timeout + 1 s) | met |")
    print("|---|---|---|---|---|---|")
    for i in range(args.reps):
        restart, dead = death_once(os.path.join(bindir, "ddp-launch"), args.heartbeat)
        goal = args.heartbeat + 1
        print(f"| {i + 1} | {dead:.2f} | {restart - dead:.3f} | {restart:.2f} | < {goal:g} s | "
              f"{'yes' if restart < goal else 'no'} |", flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
