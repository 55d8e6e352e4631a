"""`ddp-launch store`: port=<n> on stdout, loopback by default, a busy port named within a second,
and a real torch 1.13 client doing a round of operations."""
import datetime
import subprocess
import time

from harness import DDP_LAUNCH, BusyPort, StoreProcess, check, listening_addresses, run_tests


def test_port_zero_prints_port_and_serves_torch_113():
    import torch.distributed as dist
    with StoreProcess() as store:
        client = dist.TCPStore("127.0.0.1", store.port, None, False, datetime.timedelta(seconds=10))
        client.set("k", "v")
        check(client.get("k") == b"v", "get after set")
        check(client.add("c", 2) == 2, "add")
        check(client.num_keys() == 2, "num_keys")


def test_binds_loopback_by_default():
    with StoreProcess() as store:
        local = listening_addresses(store.port)
        check(local == [f"127.0.0.1:{store.port}"], f"listening socket not loopback-only: {local}")


def test_busy_port_error_names_the_holder_within_a_second():
    with BusyPort() as port:
        start = time.monotonic()
        r = subprocess.run([DDP_LAUNCH, "store", "--port", str(port)], capture_output=True, text=True, timeout=10)
        elapsed = time.monotonic() - start
    check(r.returncode != 0, "store started on a busy port")
    check(elapsed < 1.0, f"busy-port error took {elapsed:.2f}s")
    check(str(port) in r.stderr and "already in use" in r.stderr, f"error does not name the port: {r.stderr}")
    import os
    check(f"pid {os.getpid()}" in r.stderr, f"error does not name the holding pid: {r.stderr}")
    check("--port 0" in r.stderr, f"error does not say how to fix it: {r.stderr}")


def test_sigterm_stops_promptly():
    store = StoreProcess()
    start = time.monotonic()
    store.proc.terminate()
    rc = store.proc.wait(timeout=5)
    check(rc == 0, f"exit code {rc} on SIGTERM")
    check(time.monotonic() - start < 2, "slow to stop")


run_tests([
    test_port_zero_prints_port_and_serves_torch_113,
    test_binds_loopback_by_default,
    test_busy_port_error_names_the_holder_within_a_second,
    test_sigterm_stops_promptly,
])
