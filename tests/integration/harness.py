"""Shared helpers for integration tests: start our store, find free ports, run torch clients.

Every wait here has a timeout that says what it was waiting for.
"""
import contextlib
import os
import queue
import select
import socket
import subprocess
import sys
import threading
import time

DDP_LAUNCH = os.environ.get("DDP_LAUNCH", "build/bin/ddp-launch")
PYTHON = os.environ.get("DDP_TEST_PYTHON", "/usr/bin/python3")


class TestFailure(AssertionError):
    pass


def check(cond, what):
    if not cond:
        raise TestFailure(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StoreProcess:
    """`ddp-launch store --port 0` as a child; .port once it printed port=<n>."""

    def __init__(self, *extra, host="127.0.0.1", timeout=10.0):
        self.proc = subprocess.Popen(
            [DDP_LAUNCH, "store", "--host", host, "--port", "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout
        line = ""
        while True:
            # select before readline: a store that hangs before printing must not block the test.
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                break
            line = self.proc.stdout.readline()
            if line.startswith("port=") or not line:
                break
        if not line.startswith("port="):
            self.proc.kill()
            err = self.proc.stderr.read()
            raise TestFailure(f"store did not print port=<n> within {timeout}s; stderr: {err}")
        self.port = int(line.strip().split("=", 1)[1])
        self.host = host

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.stderr.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class LineReader:
    """Collects a child's stream line by line on a thread, so tests can wait for a line with a timeout."""

    def __init__(self, stream):
        self.lines = []
        self._q = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream):
        for line in stream:
            self._q.put(line)
        self._q.put(None)

    def wait_for(self, needle, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"no line containing {needle!r} ({what}) within {timeout}s; "
                                  f"saw: {''.join(self.lines)!r}")
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise TestFailure(f"stream ended without a line containing {needle!r} ({what}); "
                                  f"saw: {''.join(self.lines)!r}")
            self.lines.append(line)
            if needle in line:
                return line

def run_tests(tests):
    """Runs test functions in order; prints a line per test and a closing 'N passed, N failed'."""
    passed = failed = 0
    for t in tests:
        start = time.monotonic()
        try:
            t()
        except Exception as e:  # noqa: BLE001 - report every failure kind the same way
            failed += 1
            print(f"FAIL {t.__name__} ({time.monotonic() - start:.2f}s): {type(e).__name__}: {e}", flush=True)
        else:
            passed += 1
            print(f"ok   {t.__name__} ({time.monotonic() - start:.2f}s)", flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
