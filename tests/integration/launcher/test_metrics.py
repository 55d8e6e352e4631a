"""`ddp-launch run` batch policy and metrics, and `ddp-launch report`, end to end with real worker
processes (shell one-liners: no torch needed to print lines; the torch examples are tested in
tests/integration/examples)."""
import csv
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET

from harness import DDP_LAUNCH, check, run_tests

SVG = "{http://www.w3.org/2000/svg}"


def run(*args, timeout=60):
    return subprocess.run([DDP_LAUNCH, "run", "--no-python", *args], capture_output=True, text=True, timeout=timeout)


def sh(script):
    return ["/bin/sh", "-c", script]


def rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        return list(csv.DictReader(f))


def test_global_batch_is_split_and_announced():
    r = run("--nproc-per-node", "2", "--global-batch", "256",
            *sh('echo "per=$DDP_PER_RANK_BATCH global=$DDP_GLOBAL_BATCH lr=$DDP_LR_SCALE warm=$DDP_LR_WARMUP_STEPS"'))
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    check("batch: global 256 = 2 ranks × 128; lr × 1" in r.stderr, f"no batch announcement: {r.stderr}")
    check("The script must read these for its batch to change" in r.stderr, f"no word that the script must read them: {r.stderr}")
    for rank in (0, 1):
        check(f"[rank {rank}]: per=128 global=256 lr=1 warm=0" in r.stdout, f"rank {rank} env: {r.stdout}")


# An unchanged script parses its own -b/--lr flags: the placeholders are how the batch policy reaches it.
ARGPARSE_WORKER = """
import argparse, os
p = argparse.ArgumentParser()
p.add_argument("-b", "--batch-size", type=int, default=256)
p.add_argument("--global-batch", type=int, default=0)
p.add_argument("--lr-scale", type=float, default=1.0)
a = p.parse_args()
print(f"rank={os.environ['RANK']} batch_size={a.batch_size} global={a.global_batch} lr_scale={a.lr_scale:g}")
"""


def test_batch_placeholders_reach_a_script_that_reads_its_command_line():
    for flags, want in ((["--global-batch", "256"], "batch_size=128 global=256 lr_scale=1"),
                        (["--per-rank-batch", "48"], "batch_size=48 global=96 lr_scale=2")):
        r = run("--nproc-per-node", "2", *flags, "/usr/bin/python3", "-c", ARGPARSE_WORKER, "-b", "{per_rank_batch}",
                "--global-batch={global_batch}", "--lr-scale", "{lr_scale}")
        check(r.returncode == 0, f"{flags}: exit {r.returncode}: {r.stderr}")
        for rank in (0, 1):
            check(f"[rank {rank}]: rank={rank} {want}" in r.stdout, f"{flags}: rank {rank} got: {r.stdout}")
    r = run("--nproc-per-node", "2", "/usr/bin/python3", "-c", ARGPARSE_WORKER, "-b", "{per_rank_batch}")
    check(r.returncode == 2 and "{per_rank_batch}" in r.stderr and "--global-batch" in r.stderr,
          f"a batch placeholder without a batch flag: exit {r.returncode}: {r.stderr}")
    check("[rank" not in r.stdout, f"workers started despite the error: {r.stdout}")


def test_per_rank_batch_scales_lr_with_warmup():
    r = run("--nproc-per-node", "2", "--per-rank-batch", "32", "--lr-warmup-steps", "50",
            *sh('echo "per=$DDP_PER_RANK_BATCH global=$DDP_GLOBAL_BATCH lr=$DDP_LR_SCALE warm=$DDP_LR_WARMUP_STEPS"'))
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    check("[rank 1]: per=32 global=64 lr=2 warm=50" in r.stdout, f"env: {r.stdout}")
    check("lr × 2 (linear scaling rule), warmed up over 50 steps" in r.stderr, f"announcement: {r.stderr}")


def test_bad_batch_and_bad_metric_are_usage_errors():
    r = run("--nproc-per-node", "3", "--global-batch", "100", "/bin/true")
    check(r.returncode == 2, f"exit {r.returncode}")
    check("99 (33 per rank) or 102 (34 per rank)" in r.stderr and "--per-rank-batch 33" in r.stderr,
          f"no nearest sizes / fix: {r.stderr}")
    r = run("--metric", "loss=Loss\\s+([0-9.]+", "/bin/true")
    check(r.returncode == 2 and "--metric loss" in r.stderr and "not a valid regular expression" in r.stderr,
          f"bad regex: {r.returncode} {r.stderr}")
    r = run("--gpu-low-window", "soon", "/bin/true")
    check(r.returncode == 2 and "--gpu-low-window: must be a duration" in r.stderr and "'soon'" in r.stderr, f"bad duration: {r.returncode} {r.stderr}")


def test_metric_lines_and_patterns_to_csv_and_report():
    script = ('echo "@ddp-metric step=1 loss=2.5 samples_per_s=100"; echo "Loss 2.25"; '
              'echo "@ddp-metric step=2 loss=$((RANK+1)).0 samples_per_s=200"; echo "noise"; echo "Loss 0.75"; '
              'echo "@ddp-metric step=3 loss=0.5 samples_per_s=300" >&2')
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "sdk"), os.path.join(d, "pattern")
        r = run("--nproc-per-node", "2", "--run-dir", a, *sh(script))
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check(f"metrics in {a}/metrics.csv" in r.stderr, f"the metrics path is not printed: {r.stderr}")
        got = rows(a)
        check(list(got[0].keys()) == ["time", "attempt", "rank", "step", "name", "value"], f"columns {got[0].keys()}")
        loss = sorted((int(x["rank"]), float(x["step"]), float(x["value"])) for x in got if x["name"] == "loss")
        check(loss == [(0, 1, 2.5), (0, 2, 1.0), (0, 3, 0.5), (1, 1, 2.5), (1, 2, 2.0), (1, 3, 0.5)], f"loss {loss}")
        check(not any(x["name"] == "step" for x in got), "step became a metric of its own")
        info = json.load(open(os.path.join(a, "run.json")))
        check(info["world_size"] == 2 and info["exit_code"] == 0, f"run.json {info}")

        r = run("--run-dir", b, "--metric", r"loss=Loss\s+([0-9.]+)", *sh(script))
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        pat = [(float(x["step"]), float(x["value"])) for x in rows(b) if x["name"] == "loss"]
        # SDK lines keep their own steps; pattern matches count 1, 2 on their own
        check((1.0, 2.25) in pat and (2.0, 0.75) in pat, f"pattern rows {pat}")

        out = os.path.join(d, "chart.svg")
        rep = subprocess.run([DDP_LAUNCH, "report", a, b, "--out", out], capture_output=True, text=True, timeout=30)
        check(rep.returncode == 0, f"report exit {rep.returncode}: {rep.stderr}")
        lines = rep.stdout.splitlines()
        check(lines[0].split()[:3] == ["run", "world", "steps"], f"summary header: {rep.stdout}")
        sdk = next(line for line in lines if line.startswith("sdk"))
        check(sdk.split()[1:5] == ["2", "3", "2.5", "0.5"], f"sdk summary: {sdk}")
        check(sdk.split()[6] == "500.0", f"samples/s (ranks summed, warm-up dropped): {sdk}")
        root = ET.parse(out).getroot()
        curves = [p for p in root.iter(SVG + "path") if p.get("class") == "curve"]
        check(root.tag == SVG + "svg" and len(curves) == 2, f"{len(curves)} curves in {out}")
        legend = [t.text for t in root.iter(SVG + "text")]
        check("sdk (2 ranks)" in legend and "pattern (1 rank)" in legend, f"legend: {legend}")
        rep = subprocess.run([DDP_LAUNCH, "report", d], capture_output=True, text=True, timeout=30)
        check(rep.returncode == 2 and "has no metrics.csv" in rep.stderr, f"report of a non-run: {rep.stderr}")

        # --log-y and --x time from the command line: the axis labels say so, a log chart of a
        # non-positive value is refused naming the flag, and an unknown --x is a usage error.
        rep = subprocess.run([DDP_LAUNCH, "report", a, "--out", out, "--log-y", "--x", "time"], capture_output=True,
                             text=True, timeout=30)
        check(rep.returncode == 0, f"report --log-y --x time: exit {rep.returncode}: {rep.stderr}")
        labels = {t.get("class"): t.text for t in ET.parse(out).getroot().iter(SVG + "text") if t.get("class")}
        check(labels.get("xlabel", "").startswith("wall-clock time") and labels.get("ylabel") == "loss (log scale)",
              f"axis labels: {labels}")
        with open(os.path.join(b, "metrics.csv"), "a") as f:
            f.write("9.0,0,0,9,loss,0\n")
        rep = subprocess.run([DDP_LAUNCH, "report", b, "--out", out, "--log-y"], capture_output=True, text=True,
                             timeout=30)
        check(rep.returncode == 2 and "--log-y" in rep.stderr and "step 9" in rep.stderr, f"log of 0: {rep.stderr}")
        rep = subprocess.run([DDP_LAUNCH, "report", a, "--x", "epoch"], capture_output=True, text=True, timeout=30)
        check(rep.returncode == 2 and "--x" in rep.stderr, f"--x epoch: exit {rep.returncode} {rep.stderr}")


def test_report_png_through_rsvg_convert():
    check(shutil.which("rsvg-convert"), "rsvg-convert is not installed: run packaging/install-deps.sh (librsvg2-bin)")
    with tempfile.TemporaryDirectory() as d:
        run_dir = os.path.join(d, "run")
        r = run("--nproc-per-node", "2", "--run-dir", run_dir,
                *sh('for s in 1 2 3 4; do echo "@ddp-metric step=$s loss=$((5-s)).5"; done'))
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        svg, png = os.path.join(d, "chart.svg"), os.path.join(d, "chart.PNG")
        rep = subprocess.run([DDP_LAUNCH, "report", run_dir, "--out", svg], capture_output=True, text=True, timeout=30)
        check(rep.returncode == 0, f"svg report exit {rep.returncode}: {rep.stderr}")
        root = ET.parse(svg).getroot()
        rep = subprocess.run([DDP_LAUNCH, "report", run_dir, "--out", png], capture_output=True, text=True, timeout=60)
        check(rep.returncode == 0, f"png report exit {rep.returncode}: {rep.stderr}")
        check(f"chart: {png} (1 curve)" in rep.stdout, f"chart line: {rep.stdout}")
        with open(png, "rb") as f:
            head = f.read(24)
        check(head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"not a PNG: {head!r}")
        size = struct.unpack(">II", head[16:24])
        check(size == (int(float(root.get("width"))), int(float(root.get("height")))),
              f"PNG {size} vs SVG {root.get('width')}x{root.get('height')}")
        check(sorted(os.listdir(d)) == ["chart.PNG", "chart.svg", "run"], f"temporary files left: {os.listdir(d)}")

        # Without rsvg-convert on PATH: an error naming the package, and no chart file.
        empty = os.path.join(d, "empty-path")
        os.mkdir(empty)
        missing = os.path.join(d, "missing.png")
        rep = subprocess.run([DDP_LAUNCH, "report", run_dir, "--out", missing], capture_output=True, text=True,
                             timeout=30, env={**os.environ, "PATH": empty})
        check(rep.returncode == 1, f"exit {rep.returncode} without rsvg-convert: {rep.stderr}")
        check("rsvg-convert" in rep.stderr and "librsvg2-bin" in rep.stderr and ".svg" in rep.stderr,
              f"the error does not name the tool, the package and the SVG way out: {rep.stderr}")
        check(not os.path.exists(missing) and sorted(os.listdir(d)) == ["chart.PNG", "chart.svg", "empty-path", "run"],
              f"files left after the failed PNG: {os.listdir(d)}")


def test_report_charts_around_inf_and_nan():
    # A diverging model: `run` records inf/-inf/nan as the worker printed them, in the step and the value
    # column; report used to crash (SIGSEGV) on the first inf. Now: exit 0, the finite points charted,
    # the skipped rows counted on stderr and in the chart.
    script = ('echo "@ddp-metric step=1 loss=4"; echo "@ddp-metric step=2 loss=inf"; '
              'echo "@ddp-metric step=inf loss=3"; echo "@ddp-metric step=3 loss=-inf"; '
              'echo "@ddp-metric step=-inf loss=2"; echo "@ddp-metric step=nan loss=2"; '
              'echo "@ddp-metric step=4 loss=nan"; echo "@ddp-metric step=5 loss=1"')
    with tempfile.TemporaryDirectory() as d:
        run_dir = os.path.join(d, "diverged")
        r = run("--run-dir", run_dir, *sh(script))
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        steps = [x["step"].lower() for x in rows(run_dir) if x["name"] == "loss"]
        values = [x["value"].lower() for x in rows(run_dir) if x["name"] == "loss"]
        check({"inf", "-inf", "nan"} <= set(steps) and {"inf", "-inf", "nan"} <= set(values),
              f"run did not record the non-finite numbers: steps {steps} values {values}")
        for extra in ([], ["--x", "time"], ["--log-y"]):
            out = os.path.join(d, "chart.svg")
            rep = subprocess.run([DDP_LAUNCH, "report", run_dir, "--out", out, *extra], capture_output=True, text=True,
                                 timeout=30)
            check(rep.returncode == 0, f"report {extra}: exit {rep.returncode}: {rep.stderr}")
            check("diverged: 6 rows with an inf or nan" in rep.stderr, f"report {extra}: no count of skipped rows: "
                  f"{rep.stderr}")
            row = next(line for line in rep.stdout.splitlines() if line.startswith("diverged"))
            check(row.split()[1:5] == ["1", "5", "4", "1"], f"summary of the finite points: {row}")
            root = ET.parse(out).getroot()
            curves = [p for p in root.iter(SVG + "path") if p.get("class") == "curve"]
            check(len(curves) == 1 and curves[0].get("d").count("L") == 1, f"{extra}: curve {curves}")
            skipped = [t.text for t in root.iter(SVG + "text") if t.get("class") == "skipped"]
            check(skipped == ["6 non-finite values (inf, nan) not drawn"], f"{extra}: chart note {skipped}")


def test_temporary_run_dir_kept_only_with_metrics():
    r = run("--rdzv-id", "metricskeep", *sh('echo "@ddp-metric step=1 loss=1"'))
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    m = re.search(r"metrics in (\S+)/metrics\.csv", r.stderr)
    check(m, f"no metrics path printed: {r.stderr}")
    try:
        check(os.path.exists(os.path.join(m.group(1), "metrics.csv")), "temporary run dir removed")
    finally:
        subprocess.run(["rm", "-rf", m.group(1)])
    r = run(*sh("echo no metrics here"))
    check(r.returncode == 0 and "metrics in" not in r.stderr, f"a run without metrics kept its dir: {r.stderr}")


run_tests([
    test_global_batch_is_split_and_announced,
    test_per_rank_batch_scales_lr_with_warmup,
    test_batch_placeholders_reach_a_script_that_reads_its_command_line,
    test_bad_batch_and_bad_metric_are_usage_errors,
    test_metric_lines_and_patterns_to_csv_and_report,
    test_report_png_through_rsvg_convert,
    test_report_charts_around_inf_and_nan,
    test_temporary_run_dir_kept_only_with_metrics,
])
