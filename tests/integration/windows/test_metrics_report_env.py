"""`ddp-launch.exe run --metric`, `report` and `env` under Wine (the Windows build has RE2 now:
cmake/windows-deps.cmake). A 2-rank cmd.exe job's own progress lines become metrics.csv rows through
a --metric pattern, --duplicate-stdout-filters copies its matching lines, a bad pattern is refused
as on Linux (RE2's error, not "not in this build"); `report` summarises and charts the run; `env`
prints the env:// contract for cmd.exe (applied by cmd.exe itself) and for sh, with which two torch
1.13 ranks join a `ddp-launch.exe store` and all-reduce."""
import csv
import os
import subprocess
import tempfile
import xml.etree.ElementTree as ET

from harness import StoreProcess, check, run_tests
from wine import run_exe, wine_command, windows_path

SVG = "{http://www.w3.org/2000/svg}"
PYTHON = os.environ.get("DDP_TEST_PYTHON", "/usr/bin/python3")  # has torch 1.13


def metric_rows(run_dir):
    with open(os.path.join(run_dir, "metrics.csv"), newline="") as f:
        return list(csv.DictReader(f))


def test_metric_patterns_fill_metrics_csv_and_report_reads_it():
    with tempfile.TemporaryDirectory(prefix="ddp-win-metric-") as tmp:
        run_dir = os.path.join(tmp, "pattern")
        r = run_exe("run", "--nproc-per-node", "2", "--run-dir", windows_path(run_dir),
                    "--metric", r"loss=Loss\s+([0-9.]+)", "--duplicate-stdout-filters", "Loss",
                    "--no-python", "cmd.exe", "/c", "echo Loss 2.25& echo noise& echo Loss 0.%RANK%5", timeout=120)
        check(r.returncode == 0, f"exit {r.returncode}; stderr: {r.stderr}")
        loss = sorted((int(x["rank"]), float(x["step"]), float(x["value"]))
                      for x in metric_rows(run_dir) if x["name"] == "loss")
        check(loss == [(0, 1, 2.25), (0, 2, 0.05), (1, 1, 2.25), (1, 2, 0.15)], f"loss rows: {loss}")
        # --duplicate-stdout-filters: the matching lines of both ranks, not the noise.
        with open(os.path.join(run_dir, "attempt_0", "filtered_stdout.log")) as f:
            filtered = sorted(line.rstrip() for line in f.read().replace("\r", "").splitlines())
        check(filtered == ["[rank 0]: Loss 0.05", "[rank 0]: Loss 2.25", "[rank 1]: Loss 0.15",
                           "[rank 1]: Loss 2.25"], f"filtered_stdout.log: {filtered}")

        chart = os.path.join(tmp, "chart.svg")
        rep = run_exe("report", windows_path(run_dir), "--out", windows_path(chart), timeout=60)
        check(rep.returncode == 0, f"report exit {rep.returncode}: {rep.stderr}")
        lines = rep.stdout.replace("\r", "").splitlines()
        check(lines[0].split()[:3] == ["run", "world", "steps"], f"summary header: {rep.stdout}")
        row = next((line for line in lines if line.startswith("pattern")), "")
        check(row.split()[1:5] == ["2", "2", "2.25", "0.1"], f"summary of the run: {rep.stdout}")
        root = ET.parse(chart).getroot()
        curves = [p for p in root.iter(SVG + "path") if p.get("class") == "curve"]
        check(root.tag == SVG + "svg" and len(curves) == 1, f"{len(curves)} curves in {chart}")

        rep = run_exe("report", windows_path(tmp), timeout=60)
        check(rep.returncode == 2 and "has no metrics.csv" in rep.stderr, f"report of a non-run: {rep.stderr}")


def test_a_bad_pattern_is_refused_with_re2s_reason():
    r = run_exe("run", "--metric", r"loss=Loss\s+([0-9.]+", "--no-python", "cmd.exe", "/c", "echo x", timeout=60)
    check(r.returncode == 2 and "--metric loss" in r.stderr and "not a valid regular expression" in r.stderr,
          f"bad regex: exit {r.returncode}; stderr: {r.stderr}")
    check("not in this build" not in r.stderr, f"still refused for want of RE2: {r.stderr}")


def test_env_prints_the_contract_for_cmd():
    r = run_exe("env", "--store", "127.0.0.1:29511", "--rank", "1", "--world-size", "2", timeout=60)
    check(r.returncode == 0, f"env exit {r.returncode}: {r.stderr}")
    check('set "RANK=1"' in r.stdout, f"not cmd.exe's set lines (the Windows default): {r.stdout}")
    names = ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
             "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT"]
    with tempfile.TemporaryDirectory(prefix="ddp-win-env-") as tmp:
        bat = os.path.join(tmp, "rank.bat")
        with open(bat, "w", newline="\r\n") as f:
            f.write("@echo off\n" + r.stdout.replace("\r", "") + "echo got " + " ".join(f"{n}=%{n}%" for n in names)
                    + "\n")
        run = subprocess.run(wine_command("cmd.exe", "/c", windows_path(bat)), capture_output=True, text=True,
                             timeout=60)
    got_line = next((line for line in run.stdout.replace("\r", "").splitlines() if line.startswith("got ")), "")
    got = dict(kv.split("=", 1) for kv in got_line[4:].split())
    want = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511", "WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1",
            "LOCAL_WORLD_SIZE": "2", "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "0"}
    check(got == want, f"cmd.exe ran the exports and has {got}; stdout: {run.stdout} stderr: {run.stderr}")
    r = run_exe("env", "--shell", "cmd", "--store", "127.0.0.1:29511", "--rank", "2", "--world-size", "2", timeout=60)
    check(r.returncode == 2 and "--rank 2 is outside 0..1" in r.stderr, f"bad rank: {r.returncode} {r.stderr}")


RANK_SCRIPT = """
import datetime, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
t = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()} sum {t.item()}", flush=True)
dist.destroy_process_group()
"""


def test_env_exports_let_two_torch_ranks_join_the_exes_store():
    with StoreProcess(timeout=60) as store:
        ranks = []
        for rank in (0, 1):
            r = run_exe("env", "--shell", "sh", "--store", f"127.0.0.1:{store.port}", "--rank", str(rank),
                        "--world-size", "2", timeout=60)
            check(r.returncode == 0 and "export RANK=" in r.stdout, f"env --shell sh: {r.returncode} {r.stderr}")
            env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_PORT")}
            exports = r.stdout.replace("\r", "")
            ranks.append(subprocess.Popen(["bash", "-c", 'eval "$1"; exec "$2" -c "$3"', "rank", exports, PYTHON,
                                           RANK_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          env=env))
        outs = []
        for p in ranks:
            try:
                out, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                for q in ranks:
                    q.kill()
                raise
            outs.append((p.returncode, out, err))
    for rank, (rc, out, err) in enumerate(outs):
        check(rc == 0 and f"rank {rank} of 2 sum 3.0" in out, f"rank {rank}: exit {rc}; stdout: {out} stderr: {err}")


run_tests([
    test_metric_patterns_fill_metrics_csv_and_report_reads_it,
    test_a_bad_pattern_is_refused_with_re2s_reason,
    test_env_prints_the_contract_for_cmd,
    test_env_exports_let_two_torch_ranks_join_the_exes_store,
])
