#!/usr/bin/env python3
"""Hang, stack and node-loss benchmark (issue 13's numbers), printing markdown tables.

1. Detection latency: a 2-rank gloo job (tests/integration/launcher/hang_step_worker.py) whose rank
   1 sleeps forever at step 5 while rank 0 blocks in that step's all_reduce, under
   `run --hang-timeout T` for each T. Measured from the wall time rank 1's hang began (the worker
   writes it) to the supervisor's "hang detected" line on its stderr (timestamped as it arrives).
   The peer: torch itself finds no hang at all until the collective's timeout (gloo and NCCL:
   `timeout=` of init_process_group, 30 min / 10 min by default) — not run.
2. Stack collection for N ranks (default 8): from the "hang detected" line to the hang_detected
   event (written once every rank's stacks are in the run directory), for Python ranks (SIGABRT:
   the interpreter's faulthandler dumps every thread to stderr) and for native ranks (one gdb per
   rank, all at once; tests/integration/launcher/hang_native.cpp).
3. Node loss → new round, ours against torch 1.13's torchrun (bench/torchrun_shim.py) in the same
   run, taking turns: three launchers on loopback (`--nnodes 2:3 --nproc-per-node 2`, c10d
   rendezvous, `last_call_timeout=1`, everything else default, --max-restarts 3), every rank a gloo
   all_reduce loop (bench/node_loss_worker.py). One non-hosting node is lost whole: its launcher
   and its ranks SIGKILLed at once. Measured from the kill to the last surviving rank of the new
   round (world size 4) started, and to its process group ready (training can go on).

Usage: /usr/bin/python3 bench/run_hang_bench.py --build-dir build [--reps 3] [--timeouts 2 5 10]
       [--ranks 8] [--only detect|stacks|node-loss] [--no-torchrun]
"""
import argparse
import glob
import re
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = "/usr/bin/python3"  # the interpreter with torch 1.13
STEP_WORKER = os.path.join(ROOT, "tests", "integration", "launcher", "hang_step_worker.py")
LOSS_WORKER = os.path.join(HERE, "node_loss_worker.py")
SHIM = os.path.join(HERE, "torchrun_shim.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_events(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


class StampedStderr:
    """Reads a process's stderr in a thread, stamping each line with the wall time it arrived."""

    def __init__(self, proc):
        self.lines = []
        self.thread = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self.thread.start()

    def _read(self, pipe):
        for line in pipe:
            self.lines.append((time.time(), line))

    def first(self, text):
        return next(((t, line) for t, line in self.lines if text in line), (None, None))

    def text(self):
        return "".join(line for _, line in self.lines)


def run_hung_job(argv, timeout, what):
    """Runs one `ddp-launch run` that hangs; returns (detected wall time, hang_detected event, stderr, dir)."""
    d = tempfile.mkdtemp(prefix="ddp-hang-bench-")
    ev = os.path.join(d, "events.jsonl")
    p = subprocess.Popen(argv(d, ev), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = StampedStderr(p)
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise RuntimeError(f"{what}: not done after {timeout} s: {err.text()[-2000:]}")
    err.thread.join(timeout=10)
    detected, _ = err.first("hang detected:")
    hangs = [e for e in read_events(ev) if e["event"] == "hang_detected"]
    if detected is None or len(hangs) != 1:
        raise RuntimeError(f"{what}: no hang detected (exit {p.returncode}): {err.text()[-3000:]}")
    return detected, hangs[0], err.text(), d


def cleanup_run(d, hang):
    if hang.get("stacks_file"):  # the kept run directory of the hung attempt
        shutil.rmtree(os.path.dirname(os.path.dirname(hang["stacks_file"])), ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)


def detect_once(launch, timeout_s):
    def argv(d, ev):
        return [launch, "run", "--python", PYTHON, "--nproc-per-node", "2", "--events", ev, "--shutdown-grace", "3",
                "--hang-timeout", f"{timeout_s:g}", "--on-hang", "fail", STEP_WORKER, "--hang-rank", "1",
                "--hang-mark", os.path.join(d, "mark")]

    detected, hang, _, d = run_hung_job(argv, timeout_s + 120, f"--hang-timeout {timeout_s:g}")
    try:
        began = float(open(os.path.join(d, "mark")).read())
        return detected - began, hang["silent_s"][0]
    finally:
        cleanup_run(d, hang)


def stacks_once(launch, bindir, ranks, native):
    def argv(d, ev):
        common = [launch, "run", "--nproc-per-node", str(ranks), "--events", ev, "--shutdown-grace", "3",
                  "--hang-timeout", "3", "--on-hang", "fail"]
        if native:
            return common + ["--no-python", os.path.join(bindir, "hang-native")]
        return common + ["--python", PYTHON, STEP_WORKER, "--hang-rank", "1", "--hang-mark", os.path.join(d, "mark")]

    detected, hang, err, d = run_hung_job(argv, 240, f"{ranks} {'native' if native else 'Python'} ranks")
    try:
        with open(hang["stacks_file"]) as f:
            stacks = f.read()
        # One "=== rank R (local L), pid P: how ===" header per rank with a stack.
        have = len(set(re.findall(r"^=== rank (\d+) \(local", stacks, re.M)))
        return hang["time"] - detected, have, len(stacks)
    finally:
        cleanup_run(d, hang)


def fmt_s(xs, digits=2):
    return f"{statistics.median(xs):.{digits}f} ({min(xs):.{digits}f}–{max(xs):.{digits}f})"


# --- node loss ---------------------------------------------------------------------------------------

def node_logs(tmp):
    out = {}
    for path in glob.glob(os.path.join(tmp, "*.log")):
        name = os.path.basename(path)[:-4]
        with open(path) as f:
            out[name] = [json.loads(line) for line in f if line.strip()]
    return out


def wait_until(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise RuntimeError(f"timed out after {timeout} s waiting for {what}")


def port_open(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def node_loss_once(which, launch):
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="ddp-nodeloss-bench-")
    run_id = f"nodeloss{os.getpid()}{which}"
    procs = {}
    conf = "last_call_timeout=1"
    try:
        for name in ("a", "b", "c"):
            env = dict(os.environ, NODE_LOSS_LOG=os.path.join(tmp, f"{name}.log"), GLOO_SOCKET_IFNAME="lo")
            if which == "ours":
                argv = [launch, "run", "--python", PYTHON, "--rdzv-backend", "c10d", "--rdzv-endpoint",
                        f"127.0.0.1:{port}", "--rdzv-id", run_id, "--nnodes", "2:3", "--nproc-per-node", "2",
                        "--local-addr", name, "--rdzv-conf", conf, "--max-restarts", "3", LOSS_WORKER]
            else:
                argv = [PYTHON, SHIM, "--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}",
                        "--rdzv_id", run_id, "--nnodes", "2:3", "--nproc_per_node", "2",
                        "--rdzv_conf", conf, "--max_restarts", "3", LOSS_WORKER]
            procs[name] = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                           stderr=open(os.path.join(tmp, f"{name}.err"), "w"),
                                           env=env, start_new_session=True)
            if name == "a":  # a hosts the rendezvous store: it binds the endpoint before the others start
                wait_until(lambda: port_open(port), 60, "node a's rendezvous store")
        wait_until(lambda: all(len(v) >= 2 for v in node_logs(tmp).values()) and len(node_logs(tmp)) == 3, 180,
                   "round 0: every node's 2 ranks with their process group ready")
        time.sleep(1.0)
        victims = [r["pid"] for r in node_logs(tmp)["c"]]
        killed = time.time()
        os.killpg(procs["c"].pid, signal.SIGKILL)  # the launcher and whatever shares its process group
        for pid in victims:  # and its ranks, wherever they are: the whole node is gone
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        procs["c"].wait()

        def new_round():
            logs = node_logs(tmp)
            fresh = [r for n in ("a", "b") for r in logs.get(n, []) if r["ready"] > killed and r["world"] == 4]
            return fresh if len(fresh) == 4 else None

        fresh = wait_until(new_round, 240, "the survivors' 4 ranks of the next round with their process group ready")
        return max(r["started"] for r in fresh) - killed, max(r["ready"] for r in fresh) - killed
    except Exception:
        for path in sorted(glob.glob(os.path.join(tmp, "*.err"))):  # the launchers' own words
            with open(path) as f:
                print(f"--- {which} {os.path.basename(path)}:\n{f.read()[-3000:]}", flush=True)
        raise
    finally:
        for p in procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in procs.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for r in (r for v in node_logs(tmp).values() for r in v):
            try:
                os.kill(r["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
        for name in os.listdir(tempfile.gettempdir()):  # what the SIGKILLed supervisor left
            if name.startswith(f"ddp-launch-{run_id}-"):
                p = os.path.join(tempfile.gettempdir(), name)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.remove(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeouts", type=float, nargs="+", default=[2, 5, 10])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--only", choices=["detect", "stacks", "node-loss"])
    ap.add_argument("--no-torchrun", action="store_true")
    args = ap.parse_args()
    bindir = os.path.abspath(os.path.join(args.build_dir, "bin"))
    launch = os.path.join(bindir, "ddp-launch")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}\n", flush=True)

    if args.only in (None, "detect"):
        print(f"## hang detection: rank 1 of 2 hangs, rank 0 waits in all_reduce (median (min–max) of {args.reps})\n")
        print("| --hang-timeout | hang began → detected s | suspect silent when detected s | silent − timeout s | "
              "goal (timeout + 2 s) | met |")
        print("|---|---|---|---|---|---|", flush=True)
        for t in args.timeouts:
            runs = [detect_once(launch, t) for _ in range(args.reps)]
            lat = [r[0] for r in runs]
            silent = [r[1] for r in runs]
            over = [x - t for x in silent]
            print(f"| {t:g} s | {fmt_s(lat)} | {fmt_s(silent)} | {fmt_s(over)} | < {t + 2:g} s | "
                  f"{'yes' if max(lat) < t + 2 else 'no'} |", flush=True)
        print()

    if args.only in (None, "stacks"):
        print(f"## every rank's stacks before the kill: {args.ranks} ranks (median (min–max) of {args.reps})\n")
        print("| ranks | how | detected → stacks written s | ranks with a stack | stacks file bytes |")
        print("|---|---|---|---|---|", flush=True)
        for native in (False, True):
            runs = [stacks_once(launch, bindir, args.ranks, native) for _ in range(args.reps)]
            how = "native (C++): gdb per rank" if native else "Python: faulthandler"
            print(f"| {args.ranks} | {how} | {fmt_s([r[0] for r in runs], 3)} | "
                  f"{min(r[1] for r in runs)} of {args.ranks} | {statistics.median(r[2] for r in runs):.0f} |",
                  flush=True)
        print()

    if args.only in (None, "node-loss"):
        print(f"## node lost (launcher and ranks SIGKILLed) → the survivors' next round (median (min–max) of "
              f"{args.reps}; 3 nodes × 2 gloo ranks, --nnodes 2:3, last_call_timeout=1)\n")
        print("| launcher | kill → last rank of the new round started s | kill → its process group ready s |")
        print("|---|---|---|", flush=True)
        who = ["ours"] if args.no_torchrun else ["ours", "torchrun 1.13"]
        res = {w: [] for w in who}
        for i in range(args.reps):
            order = who if i % 2 == 0 else list(reversed(who))
            for w in order:
                res[w].append(node_loss_once("ours" if w == "ours" else "torch", launch))
        for w in who:
            print(f"| {w} | {fmt_s([r[0] for r in res[w]])} | {fmt_s([r[1] for r in res[w]])} |")
        if len(who) == 2:
            med = lambda w, i: statistics.median(r[i] for r in res[w])
            print(f"\ntorchrun ÷ ours (medians): kill → started {med(who[1], 0) / med('ours', 0):.1f}×, "
                  f"kill → ready {med(who[1], 1) / med('ours', 1):.1f}×")
        print()
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
