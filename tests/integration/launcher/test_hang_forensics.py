"""Hang forensics with real ranks, through build/bin/hang-forensics-probe (it runs the ranks as the
supervisor does: our store, make_worker_launch's environment, the log router, then HangForensics):

- torch 1.13 gloo, 2 ranks: rank 1 sleeps in load_batch, rank 0 blocks in dist.all_reduce. The
  summary says rank 0 waits in all_reduce at its line and names rank 1's sleep with its source; the
  stacks file has both tracebacks; stderr redirected to a file (-r) is captured all the same.
- a native program hanging in a condition wait: gdb's frames (the rank is left running);
- the same without gdb on PATH: the worker SDK's SIGABRT backtrace names wait_for_peer;
- NCCL's flight-recorder trigger read by torch 1.13's own TCPStore client from our store.
"""
import json
import os
import struct
import subprocess
import tempfile

from harness import PYTHON, check, run_tests, stop_process

BIN = os.environ.get("DDP_BIN_DIR", "build/bin")
PROBE = os.path.join(BIN, "hang-forensics-probe")
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "hang_worker.py")


def probe(run_dir, args, env=None):
    r = subprocess.run([PROBE, "--run-dir", run_dir, *args], capture_output=True, text=True, timeout=220, env=env)
    check(r.returncode == 0, f"probe exited {r.returncode}\nstdout: {r.stdout[-3000:]}\nstderr: {r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stdout


def line_of(path, text):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise AssertionError(f"{text!r} not in {path}")


def test_gloo_rank_sleeping_while_the_other_waits_in_all_reduce():
    with tempfile.TemporaryDirectory() as run_dir:
        out, console = probe(run_dir, ["--nproc", "2", "--redirect-stderr", "--", PYTHON, WORKER])
        reduce_line = line_of(WORKER, "dist.all_reduce(batch)")
        sleep_line = line_of(WORKER, "time.sleep(3600)")
        want = (f"rank 0 waits in all_reduce (hang_worker.py:{reduce_line}); "
                f"rank 1 is in hang_worker.py:{sleep_line} load_batch: time.sleep(3600)")
        check(out["summary"] == want, f"summary {out['summary']!r}, wanted {want!r}")
        check([r["source"] for r in out["ranks"]] == ["faulthandler", "faulthandler"], str(out["ranks"]))
        check([d["signal"] for d in out["deaths"]] == [6, 6], f"the ranks did not die of SIGABRT: {out['deaths']}")
        check(out["took_ms"] < 10000, f"took {out['took_ms']} ms, over the bound")
        with open(out["stacks_file"]) as f:
            stacks = f.read()
        check(f"line {reduce_line} in main" in stacks and f"line {sleep_line} in load_batch" in stacks, stacks)
        check("distributed_c10d.py" in stacks and "in all_reduce" in stacks, stacks)
        # -r 2: the dump is in the rank's stderr.log, not on the console.
        with open(os.path.join(run_dir, "attempt_0", "1", "stderr.log")) as f:
            check("most recent call first" in f.read(), "the dump is not in rank 1's stderr.log")
        check("most recent call first" not in console, "a redirected stderr reached the console")


def test_native_hang_read_by_gdb():
    if subprocess.run(["sh", "-c", "command -v gdb"], capture_output=True).returncode != 0:
        print("     gdb not installed (packaging/install-deps.sh installs it): skipped", flush=True)
        return
    with tempfile.TemporaryDirectory() as run_dir:
        out, _ = probe(run_dir, ["--nproc", "1", "--", os.path.join(BIN, "hang-native")])
        check(out["ranks"][0]["source"] == "gdb" and out["ranks"][0]["threads"] == 2, str(out["ranks"]))
        line = line_of(os.path.join(HERE, "hang_native.cpp"), "std::fflush(stdout);") + 1  # its cv.wait
        # The source is quoted when gdb's relative path resolves (ctest runs in build/, where it was compiled).
        want = f"rank 0 is in hang_native.cpp:{line} wait_for_peer"
        check(out["summary"].startswith(want), f"summary {out['summary']!r}, wanted {want!r}")
        check(out["deaths"][0]["signal"] == 9, "gdb's rank did not live on until the probe killed it")


def test_native_hang_without_gdb_uses_the_sdk_handler():
    env = dict(os.environ, PATH="/nonexistent")
    with tempfile.TemporaryDirectory() as run_dir:
        out, _ = probe(run_dir, ["--nproc", "1", "--", os.path.join(BIN, "hang-native")], env=env)
        check(out["ranks"][0]["source"] == "SDK handler", str(out["ranks"]))
        check(out["summary"] == "rank 0 is in wait_for_peer() (hang-native)", out["summary"])
        check(out["deaths"][0]["signal"] == 6, str(out["deaths"]))


def test_flight_recorder_trigger_read_by_torch_tcpstore():
    p = subprocess.Popen([PROBE, "--serve-trigger"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = json.loads(p.stdout.readline())["port"]
        code = ("import datetime, sys; from torch.distributed import TCPStore; "
                f"s = TCPStore('127.0.0.1', {port}, 1, False, datetime.timedelta(seconds=20)); "
                "print(s.get('exception_dump').hex())")  # 1.13's Python binding has no check()
        r = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, r.stderr[-2000:])
        value = r.stdout.strip()
        check(struct.unpack("<i", bytes.fromhex(value))[0] == 1, f"value {value}: not the int 1")
    finally:
        stop_process(p, close_stdin=True)


run_tests([
    test_gloo_rank_sleeping_while_the_other_waits_in_all_reduce,
    test_native_hang_read_by_gdb,
    test_native_hang_without_gdb_uses_the_sdk_handler,
    test_flight_recorder_trigger_read_by_torch_tcpstore,
])
