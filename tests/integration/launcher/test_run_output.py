"""Per-rank output: the log files hold the worker's bytes exactly (long lines, binary, NUL, a last
line without newline), torchrun's -r/--redirects and -t/--tee masks decide which streams get a file,
and messages with a NUL byte reach the console, the failure summary and the events whole."""
import os
import subprocess
import tempfile

from harness import DDP_LAUNCH, PYTHON, check, read_events, run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "output_worker.py")


def launch(*args, timeout=60):
    return subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, *args], capture_output=True, timeout=timeout)


def only_run_dir(log_dir):
    dirs = [os.path.join(log_dir, n) for n in os.listdir(log_dir) if os.path.isdir(os.path.join(log_dir, n))]
    check(len(dirs) == 1, f"expected one run directory in {log_dir}: {dirs}")
    return dirs[0]


def expected(stream_name, rank):
    long_line = (f"{stream_name} rank {rank} " + "x" * (300 * 1024)).encode() + b"\n"
    return long_line + b"bin\x00ary \xff\xfe\x01 bytes\n" + f"{stream_name} rank {rank} last line without newline".encode()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def test_log_files_hold_the_workers_bytes_exactly():
    for mode in (["--redirects", "3"], ["--tee", "3"]):
        with tempfile.TemporaryDirectory() as d:
            r = launch("--nproc-per-node", "2", *mode, "--log-dir", d, WORKER, "--pattern", "long")
            check(r.returncode == 0, f"{mode}: exit {r.returncode}: {r.stderr[-2000:]!r}")
            run = only_run_dir(d)
            for rank in (0, 1):
                for name, stream in (("stdout.log", "out"), ("stderr.log", "err")):
                    got = read_bytes(os.path.join(run, "attempt_0", str(rank), name))
                    want = expected(stream, rank)
                    lines_got, lines_want = got.count(b"\n"), want.count(b"\n")
                    check(got == want, f"{mode} rank {rank} {name}: {len(got)} bytes, {lines_got} newlines; "
                          f"expected {len(want)} bytes, {lines_want} newlines")
            if mode[0] == "--tee":
                # The console may show the long line in pieces; the binary line and the last one arrive whole.
                check(b"[rank 1]: bin\x00ary \xff\xfe\x01 bytes\n" in r.stdout, f"console: {r.stdout[-300:]!r}")
                check(b"[rank 0]: err rank 0 last line without newline\n" in r.stderr, f"console: {r.stderr[-300:]!r}")
                check(r.stdout.count(b"x") == 2 * 300 * 1024, "the console lost part of the long lines")


def test_redirects_mask_0_leaves_a_rank_on_the_console_only():
    # torch 1.13 (elastic/multiprocessing/__init__.py): a stream gets stdout.log/stderr.log only when
    # its redirect or tee bit is set; tee is a redirect plus a tail of the file.
    with tempfile.TemporaryDirectory() as d:
        r = launch("--nproc-per-node", "2", "--redirects", "0:3,1:0", "--log-dir", d, WORKER, "--pattern", "rank")
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
        run = only_run_dir(d)
        rank0, rank1 = (os.path.join(run, "attempt_0", str(k)) for k in (0, 1))
        check(read_bytes(os.path.join(rank0, "stdout.log")) == b"out from rank 0\n", "rank 0 stdout.log")
        check(read_bytes(os.path.join(rank0, "stderr.log")) == b"err from rank 0\n", "rank 0 stderr.log")
        for name in ("stdout.log", "stderr.log"):
            check(not os.path.exists(os.path.join(rank1, name)), f"rank 1 (mask 0) has a {name}")
        check(b"[rank 1]: out from rank 1" in r.stdout and b"[rank 1]: err from rank 1" in r.stderr,
              f"rank 1 is not on the console: {r.stdout!r} {r.stderr!r}")
        check(b"from rank 0" not in r.stdout + r.stderr, f"redirected rank 0 on the console: {r.stdout!r}")
    with tempfile.TemporaryDirectory() as d:
        # tee stdout of rank 0 only: its file and the console; its stderr and rank 1 on the console only
        r = launch("--nproc-per-node", "2", "--tee", "0:1", "--log-dir", d, WORKER, "--pattern", "rank")
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
        run = only_run_dir(d)
        check(read_bytes(os.path.join(run, "attempt_0", "0", "stdout.log")) == b"out from rank 0\n", "tee file")
        check(not os.path.exists(os.path.join(run, "attempt_0", "0", "stderr.log")), "rank 0 stderr.log (not teed)")
        check(not os.path.exists(os.path.join(run, "attempt_0", "1", "stdout.log")), "rank 1 stdout.log (mask 0)")
        check(b"[rank 0]: out from rank 0" in r.stdout and b"[rank 0]: err from rank 0" in r.stderr,
              f"console: {r.stdout!r} {r.stderr!r}")


def test_nul_bytes_do_not_cut_messages():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        r = launch("--nproc-per-node", "1", "--events", ev, WORKER, "--pattern", "nul-error")
        check(r.returncode == 1, f"exit {r.returncode}: {r.stderr!r}")
        check(b"[rank 0]: stderr before\x00after the NUL" in r.stderr, f"console line: {r.stderr!r}")
        check(b"error file: RuntimeError: before\x00after the NUL" in r.stderr, f"summary: {r.stderr!r}")
        check(b"      stderr before\x00after the NUL" in r.stderr, f"summary's stderr tail: {r.stderr!r}")
        root = [e for e in read_events(ev) if e["event"] == "root_cause"]
        check(len(root) == 1 and root[0]["error"].startswith("RuntimeError: before\x00after the NUL"),
              f"root_cause event: {root}")


def test_an_error_file_with_raw_nul_and_non_utf8_bytes_is_quoted_whole():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        r = launch("--nproc-per-node", "1", "--events", ev, WORKER, "--pattern", "raw-error")
        check(r.returncode == 1, f"exit {r.returncode}: {r.stderr!r}")
        check(b"before\x00after the NUL \xff\xfe and the rest" in r.stderr, f"summary: {r.stderr!r}")
        events = read_events(ev)
        check(events[-1]["event"] == "finished", f"the supervisor did not finish its events: {events[-2:]}")
        root = [e for e in events if e["event"] == "root_cause"]
        check(len(root) == 1 and "after the NUL \ufffd\ufffd and the rest" in root[0]["error"],
              f"root_cause event: {root}")


run_tests([
    test_log_files_hold_the_workers_bytes_exactly,
    test_redirects_mask_0_leaves_a_rank_on_the_console_only,
    test_nul_bytes_do_not_cut_messages,
    test_an_error_file_with_raw_nul_and_non_utf8_bytes_is_quoted_whole,
])
