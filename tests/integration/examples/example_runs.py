"""Helpers for the example tests: run an example under ddp-launch, read its metrics.csv, check the
report over real runs."""
import csv
import os
import subprocess
import xml.etree.ElementTree as ET

from harness import DDP_LAUNCH, PYTHON, check

EXAMPLES = os.path.join(os.environ.get("DDP_SOURCE_DIR", "."), "examples")
SVG = "{http://www.w3.org/2000/svg}"


def launch(run_dir, *args, timeout=150):
    cmd = [DDP_LAUNCH, "run", "--python", PYTHON, "--run-dir", run_dir, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    check(r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}\nstdout: {r.stdout[-3000:]}\nstderr: {r.stderr[-3000:]}")
    return r


def losses(run_dir):
    """{(attempt, rank): [(step, loss), ...]} from metrics.csv."""
    out = {}
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        for row in csv.DictReader(f):
            if row["name"] == "loss":
                out.setdefault((int(row["attempt"]), int(row["rank"])), []).append((float(row["step"]),
                                                                                   float(row["value"])))
    return out


def check_loss_falls(run_dir, what, k=5, margin=0.05):
    series = losses(run_dir)
    check(series, f"{what}: no loss rows in metrics.csv")
    for key, values in series.items():
        values.sort()
    # over the whole run, per rank: the last k steps average below the first k
    by_rank = {}
    for (attempt, rank), values in sorted(series.items()):
        for step, loss in values:
            by_rank.setdefault(rank, {})[step] = loss  # a later attempt's step replaces an earlier one
    for rank, steps in by_rank.items():
        ordered = [steps[s] for s in sorted(steps)]
        check(len(ordered) >= 2 * k, f"{what}: rank {rank} has only {len(ordered)} steps")
        first, last = sum(ordered[:k]) / k, sum(ordered[-k:]) / k
        check(last < first - margin, f"{what}: rank {rank} loss did not fall: first {k} mean {first:.4f}, "
              f"last {k} mean {last:.4f}")
    return by_rank


def check_report(run_dirs, out):
    r = subprocess.run([DDP_LAUNCH, "report", *run_dirs, "--out", out], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"report: exit {r.returncode}: {r.stderr}")
    root = ET.parse(out).getroot()
    curves = [p for p in root.iter(SVG + "path") if p.get("class") == "curve"]
    check(len(curves) == len(run_dirs), f"{len(curves)} curves for {len(run_dirs)} runs in {out}")
    return r.stdout
