#!/usr/bin/python3
"""Kill → next first step (issue 28): rank 1 of 2 SIGKILLs itself after step 3 (--max-restarts 1);
the time from that kill to the restarted group's first completed step (the later of the two ranks'
step 1, since a DDP step needs both). ddp-launch with --warm-start on, ddp-launch with --warm-start
off and torch 1.13's torchrun (bench/torchrun_shim.py, --monitor_interval 0.1), side by side, taking
turns within each repetition; medians. Scripts: bench/warm_restart_worker.py --kind torchvision
(torch + torchvision's resnet18 on FakeData) and --kind trivial (torch only).

    /usr/bin/python3 bench/run_warm_restart_bench.py --build-dir build --reps 5
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
WORKER = os.path.join(HERE, "warm_restart_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(launcher, build_dir, kind):
    worker = [WORKER, "--kind", kind]
    if launcher == "torchrun":
        return [PYTHON, os.path.join(HERE, "torchrun_shim.py"), "--nproc_per_node", "2", "--max_restarts", "1",
                "--monitor_interval", "0.1", "--master_port", str(free_port()), *worker]
    mode = "on" if launcher == "ddp-launch warm" else "off"
    return [os.path.join(build_dir, "bin", "ddp-launch"), "run", "--python", PYTHON, "--nproc-per-node", "2",
            "--max-restarts", "1", "--monitor-interval", "0.1", "--warm-start", mode, *worker]


preloaded = []  # per warm torchvision run: whether both restarted ranks found torchvision imported


def one(launcher, build_dir, kind):
    tmp = tempfile.mkdtemp(prefix="ddp-warm-bench-")
    try:
        env = dict(os.environ, BENCH_OUT=tmp, OMP_NUM_THREADS="1")
        r = subprocess.run(command(launcher, build_dir, kind), capture_output=True, text=True, timeout=600, env=env)
        if r.returncode != 0:
            print(f"  ! {launcher} {kind}: exit {r.returncode}\n{r.stderr[-2000:]}", flush=True)
            return None
        if "warm start off" in r.stderr:
            print(f"  ! {launcher} {kind}: fell back to cold", flush=True)
        lines = [line.split() for line in open(os.path.join(tmp, "steps.txt"))]
        kill = [float(t) for a, _, w, t in lines if a == "0" and w == "kill"]
        first = [float(t) for a, _, w, t in lines if a == "1" and w == "step1"]
        if not kill or len(first) < 2:
            print(f"  ! {launcher} {kind}: incomplete steps file", flush=True)
            return None
        if launcher == "ddp-launch warm" and kind == "torchvision":
            warm = [w for a, _, w, _ in lines if a == "1" and w.startswith("start-preloaded-torchvision-")]
            preloaded.append(all(w.endswith("True") for w in warm) and len(warm) == 2)
        return max(first) - kill[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kinds", default="torchvision,trivial")
    args = ap.parse_args()
    launchers = ["ddp-launch warm", "ddp-launch cold", "torchrun"]
    results = {}
    for kind in args.kinds.split(","):
        for rep in range(args.reps):
            order = launchers[rep % 3:] + launchers[:rep % 3]  # who goes first rotates
            for launcher in order:
                t = one(launcher, args.build_dir, kind)
                if t is not None:
                    results.setdefault((kind, launcher), []).append(t)
                    print(f"  {kind:12s} {launcher:16s} rep {rep}: {t:.3f} s", flush=True)
    print(f"\nkill → next first step, seconds (median of {args.reps}; load average {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} CPUs)\n")
    print("| script | ddp-launch warm | ddp-launch cold | torchrun 1.13 | warm / torchrun |")
    print("|---|---|---|---|---|")
    ok = True
    for kind in args.kinds.split(","):
        med = {l: statistics.median(results[(kind, l)]) if results.get((kind, l)) else None for l in launchers}
        cells = [f"{med[l]:.2f} (n={len(results.get((kind, l), []))})" if med[l] is not None else "—"
                 for l in launchers]
        ratio = med["ddp-launch warm"] / med["torchrun"] if med["ddp-launch warm"] and med["torchrun"] else None
        print(f"| {kind} | {' | '.join(cells)} | {f'{ratio:.2f}×' if ratio else '—'} |")
        if kind == "torchvision" and ratio is not None:
            ok = ratio <= 0.5
    if preloaded:
        print(f"\nwarm torchvision restarts that found torchvision preloaded: {sum(preloaded)} of {len(preloaded)}")
    print(f"\ngoal: warm ≤ 0.5× torchrun on the torchvision script: {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
