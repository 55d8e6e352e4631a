"""`ddp-launch.exe store` under Wine: port=<n> on stdout, loopback by default, a busy port named
with the fix, Ctrl-C (SIGINT to the Wine process: a console control event) stops it with exit 0.
The protocol itself is checked against torch's own server by the torch 1.13 differential test,
run on the .exe (windows.store.differential)."""
import datetime
import signal
import time

from harness import BusyPort, StoreProcess, check, listening_addresses, run_tests
from wine import require_exe, run_exe


def test_serves_a_torch_113_client():
    import torch.distributed as dist
    require_exe()
    with StoreProcess(timeout=60) as store:
        client = dist.TCPStore("127.0.0.1", store.port, None, False, datetime.timedelta(seconds=20))
        client.set("k", "v")
        check(client.get("k") == b"v", "get after set")
        check(client.add("c", 2) == 2, "add")
        check(client.num_keys() == 2, "num_keys")


def test_binds_loopback_by_default():
    with StoreProcess(timeout=60) as store:
        local = listening_addresses(store.port)  # Wine's sockets are the host's
        check(local == [f"127.0.0.1:{store.port}"], f"listening socket not loopback-only: {local}")


def test_busy_port_is_an_error_naming_the_port_and_the_fix():
    with BusyPort() as port:
        r = run_exe("store", "--port", str(port), timeout=60)
    check(r.returncode == 1, f"exit {r.returncode} on a busy port; stderr: {r.stderr}")
    check(f"{port}" in r.stderr and "already in use" in r.stderr, f"error does not name the port: {r.stderr}")
    check("--port 0" in r.stderr, f"error does not say how to fix it: {r.stderr}")


def test_ctrl_c_stops_it_with_exit_0():
    store = StoreProcess(timeout=60)
    start = time.monotonic()
    store.proc.send_signal(signal.SIGINT)  # Wine: CTRL_C_EVENT to the console handler
    rc = store.proc.wait(timeout=20)
    err = store.proc.stderr.read()
    check(rc == 0, f"exit code {rc} on Ctrl-C; stderr: {err}")
    check("store stopping on SIGINT" in err, f"no stop message: {err}")
    check(time.monotonic() - start < 10, "slow to stop")


run_tests([
    test_serves_a_torch_113_client,
    test_binds_loopback_by_default,
    test_busy_port_is_an_error_naming_the_port_and_the_fix,
    test_ctrl_c_stops_it_with_exit_0,
])
