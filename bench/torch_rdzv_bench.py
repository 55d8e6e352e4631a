#!/usr/bin/python3
"""torch's own dynamic rendezvous, the peer of `rdzv_bench`: K simulated nodes joining one round at once.

torch 1.13's `DynamicRendezvousHandler` (what torchrun's agents run with `--rdzv-backend c10d`) over
`C10dRendezvousBackend` on a torch `TCPStore` server hosted in this process, as the hosting agent
does. Each simulated node is a thread with its own handler, its own `TCPStore` client connection
and its own backend, exactly what one agent holds; min = max = K, so the round closes when the K-th
node is a participant. Connections (and the handlers) are made first; the clock runs from the
release of all K threads until the last `next_rendezvous()` has returned. One JSON line per K
(median, min, max over `--reps`; the process's CPU seconds per run). A run not done after
`--give-up` seconds is reported as such (`{"nodes": K, "error": …}`) and ends the script.

Threads, not processes: K processes would each import torch (~1.5–2 s of CPU and ~150 MB here), 512
of them do not fit on this 2-core VM. The price: every node's Python work (pickling the shared state,
base64, the state machine) runs under one GIL on one core, where real agents use one core each; the
store calls release the GIL. So this over-counts torch's CPU-bound part and is fair to its waiting
(its 0–0.3 s random spread before the first round, its 1 s poll while waiting for others).

Run with the interpreter that has torch: /usr/bin/python3 bench/torch_rdzv_bench.py --nodes 8 64
"""
import argparse
import json
import os
import pickle
import resource
import statistics
import sys
import threading
import time
from datetime import timedelta

import torch.distributed as dist
from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
from torch.distributed.elastic.rendezvous.dynamic_rendezvous import DynamicRendezvousHandler, RendezvousTimeout


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class GaveUp(Exception):
    pass


def run_once(k, run_id, join_timeout, give_up):
    server = dist.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=join_timeout), wait_for_workers=False)
    port = server.port
    timeout = RendezvousTimeout(join=timedelta(seconds=join_timeout), last_call=timedelta(seconds=30),
                                heartbeat=timedelta(seconds=60))
    handlers = []
    for _ in range(k):
        store = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=join_timeout))
        backend = C10dRendezvousBackend(store, run_id)
        handlers.append(DynamicRendezvousHandler.from_backend(run_id, store, backend, k, k, timeout))
    results = [None] * k
    errors = []
    t0 = [0.0]
    barrier = threading.Barrier(k + 1, action=lambda: t0.__setitem__(0, time.monotonic()))

    def node(i):
        barrier.wait()
        try:
            _, rank, world = handlers[i].next_rendezvous()
            results[i] = (rank, world, time.monotonic())
        except Exception as e:  # noqa: BLE001 — reported, the run counts as failed
            errors.append(f"node {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=node, args=(i,), daemon=True) for i in range(k)]
    for t in threads:
        t.start()
    cpu0 = cpu_seconds()
    barrier.wait()
    deadline = time.monotonic() + give_up
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    cpu = cpu_seconds() - cpu0
    done = [r for r in results if r is not None]
    if not errors and len(done) < k and time.monotonic() >= deadline:
        try:  # how far the round got: the participants in the shared state
            probe = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=30))
            got = C10dRendezvousBackend(probe, run_id).get_state()
            participants = len(pickle.loads(got[0]).participants) if got else 0
        except Exception as e:  # noqa: BLE001 — only for the report
            participants = f"? ({e})"
        raise GaveUp(f"{len(done)} of {k} nodes had returned after {give_up:g} s, the round had {participants} "
                     f"participants ({cpu:.1f} CPU s)")
    if errors or len(done) != k:
        raise RuntimeError(f"K={k}: {len(done)} of {k} joined; {errors[:3]}")
    ranks = sorted(r[0] for r in done)
    if ranks != list(range(k)) or any(r[1] != k for r in done):
        raise RuntimeError(f"K={k}: ranks {ranks[:8]}…, worlds {set(r[1] for r in done)}")
    seconds = max(r[2] for r in done) - t0[0]
    # Stop the keep-alive timers before the next run (they would keep writing to this store).
    for h in handlers:
        h._stop_heartbeats()
    return seconds, cpu


def node_process(port, run_id, k, join_timeout):
    """One simulated node in its own process (--processes): ready, wait for go, join, print the time."""
    store = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=join_timeout))
    backend = C10dRendezvousBackend(store, run_id)
    timeout = RendezvousTimeout(join=timedelta(seconds=join_timeout), last_call=timedelta(seconds=30),
                                heartbeat=timedelta(seconds=60))
    handler = DynamicRendezvousHandler.from_backend(run_id, store, backend, k, k, timeout)
    store.add("bench/ready", 1)
    store.wait(["bench/go"])
    _, rank, world = handler.next_rendezvous()
    print(json.dumps({"rank": rank, "world": world, "end": time.time()}), flush=True)
    handler._stop_heartbeats()
    os._exit(0)


def run_processes(k, run_id, join_timeout, give_up):
    """K processes, one node each: the clock runs from `go` (all K ready) to the last join."""
    import subprocess
    server = dist.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=join_timeout), wait_for_workers=False)
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--node", str(server.port), run_id, str(k),
                               str(join_timeout)], stdout=subprocess.PIPE, text=True) for _ in range(k)]
    try:
        ready_by = time.monotonic() + 600
        while server.add("bench/ready", 0) < k:
            if time.monotonic() > ready_by:
                raise RuntimeError(f"K={k}: the node processes were not ready within 600 s")
            time.sleep(0.05)
        t0 = time.time()
        server.set("bench/go", "1")
        ends = []
        for p in procs:
            out, _ = p.communicate(timeout=give_up)
            ends.append(json.loads(out.strip().splitlines()[-1]))
        if sorted(e["rank"] for e in ends) != list(range(k)):
            raise RuntimeError(f"K={k}: ranks {sorted(e['rank'] for e in ends)[:8]}…")
        return max(e["end"] for e in ends) - t0, None  # the children's CPU would include their torch import
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--node":
        port, run_id, k, join_timeout = sys.argv[2:6]
        return node_process(int(port), run_id, int(k), float(join_timeout))
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--join-timeout", type=float, default=600)
    ap.add_argument("--give-up", type=float, default=120,
                    help="stop a run that has not finished after this many seconds (reported, and the larger K skipped)")
    ap.add_argument("--processes", action="store_true",
                    help="one process per node instead of one thread (each imports torch: K ≤ 64 here)")
    args = ap.parse_args()
    once = run_processes if args.processes else run_once
    for k in args.nodes:
        times, cpus = [], []
        for rep in range(args.reps):
            try:
                s, c = once(k, f"torchbench{os.getpid()}k{k}r{rep}", args.join_timeout, args.give_up)
            except GaveUp as e:
                print(json.dumps({"nodes": k, "error": f"not done: {e}"}), flush=True)
                # The stuck threads hold the GIL and the store: leave at once.
                sys.stdout.flush()
                os._exit(0)
            times.append(s)
            cpus.append(c)
            print(f"K={k} run {rep + 1}: {s:.3f} s, {c if c is None else round(c, 2)} CPU s", file=sys.stderr, flush=True)
        print(json.dumps({"nodes": k, "median_s": statistics.median(times), "min_s": min(times),
                          "max_s": max(times), "cpu_s": None if None in cpus else statistics.median(cpus),
                          "mode": "processes" if args.processes else "threads"}), flush=True)


if __name__ == "__main__":
    main()
