#!/usr/bin/env python3
"""Scaling benchmark (the seed article's table): the same global work at world size 1, 2, …

Runs each example under `ddp-launch run` at every world size with the global batch fixed (so the
per-rank batch shrinks as ranks are added and the learning rate stays put), then writes

  <out>/results.csv     program, world_size, seconds, train_s, speedup, efficiency, final_loss,
                        samples_per_s
  <out>/results.md      the same as a Markdown table
  <out>/loss_curves.csv program, world_size, step, loss (mean over ranks)
  <out>/loss_curves.svg the curves side by side (loss parity), one panel per program

Programs: the C++ resnet-trainer (worker/examples) and, when it exists, its Python twin
(examples/resnet_ddp.py with torch's DistributedDataParallel). Time is the job's wall clock as the
launcher runs it (start to all ranks done, launcher included); speedup = T(1) / T(W),
efficiency = speedup / W.

    bench/scaling/run_scaling.py --build-dir build --out bench/scaling/results
    bench/scaling/run_scaling.py --smoke --out /tmp/x     # tiny settings, for ctest
"""
import argparse
import csv
import os
import subprocess
import sys
import re
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loss_chart import mean_curve, parse_metrics, svg_chart  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY_TWIN = os.path.join(ROOT, "examples", "resnet_ddp.py")


def run_one(launcher, program, world, args, timeout):
    cmd = [launcher, "run", "--nproc-per-node", str(world)]
    if program["python"]:
        cmd += ["--python", args.python, program["path"]]
    else:
        cmd += ["--no-python", program["path"]]
    cmd += program["args"]
    env = dict(os.environ)
    env.pop("DDP_PER_RANK_BATCH", None)
    env["DDP_GLOBAL_BATCH"] = str(args.global_batch)  # what `run --global-batch B` exports
    env["OMP_NUM_THREADS"] = str(args.threads_per_rank)
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    seconds = time.monotonic() - start
    if r.returncode != 0:
        raise SystemExit(f"{program['name']} at world size {world} failed (exit {r.returncode}):\n"
                         f"{' '.join(cmd)}\n{r.stderr[-4000:]}")
    m = parse_metrics(r.stdout)
    if sorted(m) != list(range(world)):
        raise SystemExit(f"{program['name']} at world size {world}: metric lines from ranks {sorted(m)}")
    # Loss per logged step, mean over ranks (each rank's loss is over its share of the global batch).
    curve = mean_curve(m)
    rate = sum(m[rank][-1].get("samples_per_s", 0.0) for rank in m)
    # The program's own time from its start to its end (no launcher, no process start), when it prints one.
    own = [float(x) for x in re.findall(r"^\[rank \d+\]: final .*\bseconds=([0-9.]+)", r.stdout, re.M)]
    train_s = max(own) if len(own) == world else None
    return {"seconds": seconds, "train_s": train_s, "curve": curve, "final_loss": curve[-1][1],
            "samples_per_s": rate}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--world-sizes", default="1,2", help="comma-separated (default 1,2: this machine has 2 cores)")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--global-batch", type=int, default=64)
    ap.add_argument("--log-every", type=int, default=5)
    ap.add_argument("--threads-per-rank", type=int, default=1, help="OMP_NUM_THREADS of each rank")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch, for the Python twin")
    ap.add_argument("--programs", default="cpp,python", help="cpp, python or both (python only if it exists)")
    ap.add_argument("--smoke", action="store_true", help="tiny model and data, a few steps: seconds, for ctest")
    ap.add_argument("--timeout", type=float, default=900, help="per run, seconds")
    args = ap.parse_args()

    launcher = os.path.join(args.build_dir, "bin", "ddp-launch")
    trainer = os.path.join(args.build_dir, "bin", "resnet-trainer")
    worlds = [int(w) for w in args.world_sizes.split(",")]
    for w in worlds:
        if args.global_batch % w:
            raise SystemExit(f"--global-batch {args.global_batch} does not split over {w} ranks")
    model = ["--steps", str(args.steps), "--log-every", str(args.log_every)]
    if args.smoke:
        model += ["--image-size", "16", "--width", "4", "--classes", "8", "--dataset-size", "256"]
    programs = []
    wanted = args.programs.split(",")
    if "cpp" in wanted:
        if not os.access(trainer, os.X_OK):
            raise SystemExit(f"{trainer} is not built (it needs libtorch-dev; see worker/README.md)")
        programs.append({"name": "C++ resnet-trainer", "path": trainer, "python": False, "args": model})
    if "python" in wanted and os.path.exists(PY_TWIN):
        programs.append({"name": "Python DDP twin", "path": PY_TWIN, "python": True, "args": model})
    elif "python" in wanted:
        print(f"note: {os.path.relpath(PY_TWIN, ROOT)} not found; C++ only", file=sys.stderr)

    os.makedirs(args.out, exist_ok=True)
    rows, curves = [], {}
    for prog in programs:
        base = None
        for w in worlds:
            print(f"{prog['name']}: world size {w}, global batch {args.global_batch}, {args.steps} steps ...",
                  file=sys.stderr, flush=True)
            res = run_one(launcher, prog, w, args, args.timeout)
            base = base or res["seconds"] * worlds[0]  # T(1), or T(w0)·w0 when 1 is not run
            speedup = base / res["seconds"]
            rows.append({"program": prog["name"], "world_size": w, "seconds": round(res["seconds"], 2),
                         "train_s": "" if res["train_s"] is None else round(res["train_s"], 2),
                         "speedup": round(speedup, 2), "efficiency": round(speedup / w, 2),
                         "final_loss": round(res["final_loss"], 4),
                         "samples_per_s": round(res["samples_per_s"], 1)})
            curves.setdefault(prog["name"], {})[w] = res["curve"]
            print(f"  {res['seconds']:.1f} s, final loss {res['final_loss']:.4f}", file=sys.stderr, flush=True)

    fields = ["program", "world_size", "seconds", "train_s", "speedup", "efficiency", "final_loss", "samples_per_s"]
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(args.out, "loss_curves.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["program", "world_size", "step", "loss"])
        for prog, by_world in curves.items():
            for world, curve in sorted(by_world.items()):
                for step, loss in curve:
                    w.writerow([prog, world, step, f"{loss:.5f}"])
    table = ["| program | ranks | job time (s) | of which training (s) | speedup | efficiency | final loss "
             "| samples/s (all ranks) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        train = "–" if r["train_s"] == "" else f"{r['train_s']:.1f}"
        table.append(f"| {r['program']} | {r['world_size']} | {r['seconds']:.1f} | {train} | {r['speedup']:.2f}× | "
                     f"{r['efficiency']:.0%} | {r['final_loss']:.4f} | {r['samples_per_s']:.0f} |")
    md = "\n".join(table) + "\n"
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(md)
    svg = os.path.join(args.out, "loss_curves.svg")
    svg_chart({prog: {f"{w} rank{'s' if w > 1 else ''}": c for w, c in by_world.items()}
               for prog, by_world in curves.items()}, svg, f"global batch {args.global_batch}")
    print(md)
    print(f"chart: {svg}")


if __name__ == "__main__":
    main()
