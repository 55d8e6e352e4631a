"""Helpers shared by the client tests: the driver binary, a torch 1.13 server, line readers.

Every wait here has a timeout that says what it was waiting for.
"""
import os
import subprocess

from harness import PYTHON, LineReader, TestFailure, stop_process  # noqa: F401 (LineReader re-exported)

BIN_DIR = os.environ.get("DDP_BIN_DIR", "build/bin")
DRIVER = os.path.join(BIN_DIR, "store-client-driver")
GLOO_ALLREDUCE = os.path.join(BIN_DIR, "gloo-allreduce")


def run_driver(*args, timeout=120, env=None):
    """Runs store-client-driver to completion; returns (returncode, stdout, stderr)."""
    try:
        r = subprocess.run([DRIVER, *args], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        raise TestFailure(f"store-client-driver {' '.join(args)} still running after {timeout}s; "
                          f"stdout: {e.stdout!r}") from None
    return r.returncode, r.stdout, r.stderr


TORCH_SERVER = """
import datetime, sys
import torch.distributed as dist
store = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=60))
print(f"port={store.port}", flush=True)
sys.stdin.read()  # serve until the test closes our stdin
"""


class TorchServer:
    """torch 1.13's own TCPStore server in a /usr/bin/python3 child; .port once it is listening."""

    def __init__(self, timeout=180.0):
        # Importing torch takes tens of seconds on a loaded machine, hence the generous timeout.
        self.proc = subprocess.Popen([PYTHON, "-c", TORCH_SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out = LineReader(self.proc.stdout)
        line = self.out.wait_for("port=", timeout, "torch TCPStore server announcing its port")
        self.port = int(line.strip().split("=", 1)[1])

    def stop(self):
        stop_process(self.proc, close_stdin=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
