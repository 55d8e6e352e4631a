#!/usr/bin/python3
"""Spawn time against the number of ranks: `ddp-launch run --nproc-per-node N --no-python /bin/true`
for N = 250, 500, 1000, 2000 (and torch 1.13's torchrun side by side with --torchrun), median of a
few runs. The table shows the time, the time per rank and the growth against the smallest N next to
N's own growth: linear spawning keeps the two columns equal. No timing goal; run it by hand:

    /usr/bin/python3 bench/run_spawn_bench.py --build-dir build [--reps 3] [--torchrun]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_ours(build_dir, n, tmp):
    events = os.path.join(tmp, f"events-{n}.jsonl")
    if os.path.exists(events):
        os.remove(events)
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(build_dir, "bin", "ddp-launch"), "run", "--events", events,
                        "--nproc-per-node", str(n), "--no-python", "/bin/true"], capture_output=True, text=True,
                       timeout=600)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"ddp-launch with {n} ranks: exit {r.returncode}: {r.stderr[-2000:]}")
    with open(events) as f:
        started = [json.loads(line)["time"] for line in f if '"rank_started"' in line]
    return wall, max(started) - min(started)


def run_torchrun(n):
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, os.path.join(HERE, "torchrun_shim.py"), "--no_python",
                        "--nproc_per_node", str(n), "/bin/true"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"torchrun with {n} ranks: exit {r.returncode}: {r.stderr[-2000:]}")
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build", help="where bin/ddp-launch is")
    ap.add_argument("--reps", type=int, default=3, help="runs per size (median)")
    ap.add_argument("--sizes", default="250,500,1000,2000", help="comma-separated rank counts")
    ap.add_argument("--torchrun", action="store_true", help="also torch 1.13's torchrun (bench/torchrun_shim.py)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            ours = [run_ours(args.build_dir, n, tmp) for _ in range(args.reps)]
            wall = statistics.median(w for w, _ in ours)
            spawn = statistics.median(s for _, s in ours)
            theirs = statistics.median(run_torchrun(n) for _ in range(args.reps)) if args.torchrun else None
            rows.append((n, wall, spawn, theirs))
            print(f"  {n} ranks: ours {wall:.2f} s (spawning {spawn:.2f} s)"
                  + (f", torchrun {theirs:.2f} s" if theirs is not None else ""), file=sys.stderr, flush=True)
    n0, wall0, spawn0, theirs0 = rows[0]
    print("| ranks | × ranks | ours: wall | × wall | spawning (first to last rank_started) | × spawning | "
          "ms per rank | torchrun: wall | × torchrun wall |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, wall, spawn, theirs in rows:
        t = f"{theirs:.2f} s | {theirs / theirs0:.2f}×" if theirs is not None else "— | —"
        print(f"| {n} | {n / n0:.1f}× | {wall:.2f} s | {wall / wall0:.2f}× | {spawn:.2f} s | "
              f"{spawn / spawn0 if spawn0 > 0 else float('nan'):.2f}× | {1000 * wall / n:.2f} | {t} |")


if __name__ == "__main__":
    main()
