#!/usr/bin/env python3
"""Scaling benchmark (the seed article's table): the same global work at world size 1, 2, …

Runs both example trainers under `ddp-launch run --global-batch B` at every world size (the global
batch fixed, so the per-rank batch shrinks as ranks are added and the learning rate stays put; the
same number of steps), --reps times each (world sizes and programs take turns, the order reversed
every other repetition), and writes

  <out>/results.csv     program, world_size, oversubscribed, reps, seconds, train_s (medians),
                        seconds_min/max, train_s_min/max, speedup, efficiency, final_loss,
                        samples_per_s, load_before/load_after (1-minute load average, median)
  <out>/results.md      the same as a Markdown table, with the machine and the settings
  <out>/loss_curves.csv program, world_size, step, loss (mean over ranks, first repetition)
  <out>/loss_curves.svg the curves side by side (loss parity), one panel per program

Programs: the C++ `resnet-trainer` (worker/examples, gradients averaged by the worker SDK) and its
Python twin `examples/train_ddp.py` (torch's DistributedDataParallel, a DataLoader with
--py-workers worker processes per rank: 0, one process per rank like the C++ trainer, and 1 by
default, each its own row and panel). Both print `@ddp-metric step=… loss=…` lines (the loss
averaged over --log-every steps) and, per rank, `final … seconds=…`.

- job time: the launcher's wall clock, start to all ranks done (process start, torch import,
  rendezvous included); training time: the slowest rank's own `seconds=` (from before it joins the
  process group to its end: no process start, no import).
- speedup = T(1) / T(W) of the training time (of the job time when a program prints none),
  efficiency = speedup / W. World sizes above the CPU count are marked oversubscribed.

    bench/scaling/run_scaling.py --build-dir build --reps 3 --out bench/scaling/results
    bench/scaling/run_scaling.py --smoke --out /tmp/x     # tiny settings, for ctest
"""
import argparse
import csv
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loss_chart import mean_curve, parse_metrics, svg_chart  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY_TWIN = os.path.join(ROOT, "examples", "train_ddp.py")
FINAL = re.compile(r"^\[rank (\d+)\]: final .*\bseconds=([0-9.]+)", re.M)


def run_one(launcher, program, world, args, scratch):
    run_dir = tempfile.mkdtemp(prefix=f"w{world}-", dir=scratch)
    cmd = [launcher, "run", "--nproc-per-node", str(world), "--global-batch", str(args.global_batch),
           "--run-dir", run_dir]
    if program["python"]:
        cmd += ["--python", args.python, program["path"]]
    else:
        cmd += ["--no-python", program["path"]]
    cmd += program["args"](run_dir)
    env = dict(os.environ)
    for k in ("DDP_PER_RANK_BATCH", "DDP_GLOBAL_BATCH", "DDP_LR_SCALE", "DDP_LR_WARMUP_STEPS"):
        env.pop(k, None)  # the launcher's --global-batch sets them
    env["OMP_NUM_THREADS"] = str(args.threads_per_rank)
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{program['name']} at world size {world} ran past --timeout {args.timeout:g} s: "
                         f"{' '.join(cmd)}")
    seconds = time.monotonic() - start
    if r.returncode != 0:
        raise SystemExit(f"{program['name']} at world size {world} failed (exit {r.returncode}):\n"
                         f"{' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    m = parse_metrics(r.stdout)
    if sorted(m) != list(range(world)):
        raise SystemExit(f"{program['name']} at world size {world}: @ddp-metric lines from ranks {sorted(m)}, "
                         f"expected 0..{world - 1}:\n{r.stdout[-2000:]}")
    # Loss per logged step, mean over ranks (each rank's loss is over its share of the global batch).
    curve = mean_curve(m)
    rate = sum(m[rank][-1].get("samples_per_s", 0.0) for rank in m)
    # The program's own time from before the process group to its end, when every rank prints one.
    own = {int(rank): float(s) for rank, s in FINAL.findall(r.stdout)}
    train_s = max(own.values()) if sorted(own) == list(range(world)) else None
    return {"seconds": seconds, "train_s": train_s, "curve": curve, "final_loss": curve[-1][1],
            "samples_per_s": rate, "load_before": load_before, "load_after": os.getloadavg()[0]}


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--world-sizes", default="1,2", help="comma-separated (default 1,2: this machine has 2 cores)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--global-batch", type=int, default=64)
    ap.add_argument("--log-every", type=int, default=5)
    ap.add_argument("--reps", type=int, default=1, help="runs per program and world size; the table shows medians")
    ap.add_argument("--threads-per-rank", type=int, default=1, help="OMP_NUM_THREADS of each rank")
    ap.add_argument("--py-workers", default="0,1",
                    help="DataLoader worker processes per rank of the Python twin; a list runs the twin once per "
                         "value (default 0,1: one process per rank like the C++ trainer, and with a worker)")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch, for the Python twin")
    ap.add_argument("--programs", default="cpp,python", help="cpp, python or both")
    ap.add_argument("--smoke", action="store_true", help="tiny model and data, a few steps: seconds, for ctest")
    ap.add_argument("--timeout", type=float, default=900, help="per run, seconds")
    args = ap.parse_args()

    launcher = os.path.join(args.build_dir, "bin", "ddp-launch")
    trainer = os.path.join(args.build_dir, "bin", "resnet-trainer")
    worlds = [int(w) for w in args.world_sizes.split(",")]
    for w in worlds:
        if args.global_batch % w:
            raise SystemExit(f"--global-batch {args.global_batch} does not split over {w} ranks")
    common = ["--steps", str(args.steps), "--log-every", str(args.log_every)]
    cpp_args = common + (["--image-size", "16", "--width", "4", "--classes", "8", "--dataset-size", "256"]
                         if args.smoke else [])
    py_args = common + ["--checkpoint-every", "0"] + (["--dataset-size", "256"] if args.smoke else [])
    py_workers = [int(n) for n in args.py_workers.split(",")]
    programs = []
    wanted = args.programs.split(",")
    unknown = set(wanted) - {"cpp", "python"}
    if unknown:
        raise SystemExit(f"--programs: unknown {sorted(unknown)}; give cpp, python or cpp,python")
    if not os.access(launcher, os.X_OK):
        raise SystemExit(f"{launcher} is not built: cmake --build {args.build_dir} --target ddp-launch")
    if "cpp" in wanted:
        if not os.access(trainer, os.X_OK):
            raise SystemExit(f"{trainer} is not built (it needs libtorch-dev; see worker/README.md)")
        programs.append({"name": "C++ resnet-trainer", "path": trainer, "python": False,
                         "args": lambda run_dir: cpp_args})
    if "python" in wanted:
        for n in py_workers:
            name = "Python DDP twin" + (f", {n} DataLoader worker{'s' if n != 1 else ''}/rank" if len(py_workers) > 1
                                        else "")
            programs.append({"name": name, "path": PY_TWIN, "python": True,
                             "args": lambda run_dir, n=n: py_args + ["--workers", str(n), "--checkpoint",
                                                                     os.path.join(run_dir, "ckpt.pt")]})

    cpus = os.cpu_count() or 1
    os.makedirs(args.out, exist_ok=True)
    results = {}  # (program, world) -> [run results]
    combos = [(p, w) for p in programs for w in worlds]
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="ddp-launch-scaling-") as scratch:
        for rep in range(args.reps):
            for prog, w in (combos if rep % 2 == 0 else combos[::-1]):
                print(f"[{rep + 1}/{args.reps}] {prog['name']}: world size {w}, global batch {args.global_batch}, "
                      f"{args.steps} steps (load {os.getloadavg()[0]:.1f}) ...", file=sys.stderr, flush=True)
                res = run_one(launcher, prog, w, args, scratch)
                results.setdefault((prog["name"], w), []).append(res)
                train = "" if res["train_s"] is None else f", training {res['train_s']:.1f} s"
                print(f"  job {res['seconds']:.1f} s{train}, final loss {res['final_loss']:.4f}",
                      file=sys.stderr, flush=True)
    finished = datetime.datetime.now(datetime.timezone.utc)

    rows, curves = [], {}
    for prog in programs:
        base = None
        for w in worlds:
            runs = results[(prog["name"], w)]
            seconds, train_s = median([r["seconds"] for r in runs]), median([r["train_s"] for r in runs])
            t = train_s if train_s is not None else seconds
            base = base or t * worlds[0]  # T(1), or T(w0)·w0 when 1 is not run
            speedup = base / t
            trains = [r["train_s"] for r in runs if r["train_s"] is not None]
            rows.append({
                "program": prog["name"], "world_size": w, "oversubscribed": int(w > cpus), "reps": len(runs),
                "seconds": round(seconds, 2), "seconds_min": round(min(r["seconds"] for r in runs), 2),
                "seconds_max": round(max(r["seconds"] for r in runs), 2),
                "train_s": "" if train_s is None else round(train_s, 2),
                "train_s_min": round(min(trains), 2) if trains else "",
                "train_s_max": round(max(trains), 2) if trains else "",
                "speedup": round(speedup, 2), "efficiency": round(speedup / w, 2),
                "final_loss": round(runs[0]["final_loss"], 4),
                "samples_per_s": round(median([r["samples_per_s"] for r in runs]), 1),
                "load_before": round(median([r["load_before"] for r in runs]), 1),
                "load_after": round(median([r["load_after"] for r in runs]), 1)})
            curves.setdefault(prog["name"], {})[w] = runs[0]["curve"]

    fields = list(rows[0])
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    with open(os.path.join(args.out, "loss_curves.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["program", "world_size", "step", "loss"])
        for prog, by_world in curves.items():
            for world, curve in sorted(by_world.items()):
                for step, loss in curve:
                    writer.writerow([prog, world, step, f"{loss:.5f}"])

    def span(r, key):
        if r[key] == "":
            return "–"
        if r["reps"] == 1:
            return f"{r[key]:.1f}"
        return f"{r[key]:.1f} ({r[key + '_min']:.1f}–{r[key + '_max']:.1f})"

    loads = [x for runs in results.values() for r in runs for x in (r["load_before"], r["load_after"])]
    md = [f"Measured {started:%Y-%m-%d %H:%M}–{finished:%H:%M} UTC on {cpus} CPUs, 1-minute load average "
          f"{min(loads):.1f}–{max(loads):.1f} over the runs (the last column: medians per cell). {args.steps} steps, "
          f"global batch {args.global_batch} (`ddp-launch run --global-batch`), OMP_NUM_THREADS="
          f"{args.threads_per_rank} per rank, {args.py_workers} DataLoader worker(s) per rank in the Python twin, "
          f"{'tiny smoke settings, ' if args.smoke else ''}median of {args.reps} run(s)"
          f"{' (min–max in brackets)' if args.reps > 1 else ''}; speedup and efficiency from the training time.",
          "",
          "| program | ranks | job time (s) | training time (s) | speedup | efficiency | final loss "
          "| samples/s (all ranks) | load before → after |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ranks = f"{r['world_size']}" + (f" (oversubscribed: {cpus} CPUs)" if r["oversubscribed"] else "")
        md.append(f"| {r['program']} | {ranks} | {span(r, 'seconds')} | {span(r, 'train_s')} | {r['speedup']:.2f}× | "
                  f"{r['efficiency']:.0%} | {r['final_loss']:.4f} | {r['samples_per_s']:.0f} | "
                  f"{r['load_before']:.1f} → {r['load_after']:.1f} |")
    text = "\n".join(md) + "\n"
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(text)
    svg = os.path.join(args.out, "loss_curves.svg")
    svg_chart({prog: {f"{w} rank{'s' if w > 1 else ''}{' (oversubscribed)' if w > cpus else ''}": c
                      for w, c in by_world.items()}
               for prog, by_world in curves.items()}, svg, f"global batch {args.global_batch}")
    print(text)
    print(f"chart: {svg}")


if __name__ == "__main__":
    main()
