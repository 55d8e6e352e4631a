"""StoreClient against live servers: every operation in dialects C, A and B on `ddp-launch store`, and
in dialect A on torch 1.13's own server. The driver checks each answer; a timed-out wait must
leave the connection usable and undisturbed by the server's late wake-up."""
from client_common import TorchServer, run_driver
from harness import StoreProcess, check, run_tests

SECTIONS = ["set_get", "add", "compare_set", "check", "wait", "wait_timeout_then_connection_works",
            "get_timeout", "num_keys_delete", "multi", "append", "ping"]


def drive(port, dialect):
    rc, out, err = run_driver("--port", str(port), "--dialect", dialect, "ops")
    check(rc == 0 and "all ok" in out, f"driver (dialect {dialect}) failed, rc={rc}\nstdout: {out}\nstderr: {err}")
    for name in SECTIONS:
        check(f"ok {name}\n" in out, f"section {name} did not run: {out}")


def test_dialect_c_against_our_store():
    with StoreProcess() as store:
        drive(store.port, "c")


def test_dialect_a_against_our_store():
    with StoreProcess() as store:
        drive(store.port, "a")


def test_dialect_a_against_our_store_keeping_stale_waits():
    # With torch's own corrupting behaviour switched back on, only the client's reconnect keeps
    # the late STOP_WAITING away from the next reply.
    with StoreProcess("--keep-stale-waits") as store:
        drive(store.port, "a")


def test_dialect_b_against_our_store():
    with StoreProcess("--legacy-dialect", "b") as store:
        drive(store.port, "b")


def test_dialect_a_against_torch_113_server():
    with TorchServer() as server:
        drive(server.port, "a")


run_tests([
    test_dialect_c_against_our_store,
    test_dialect_a_against_our_store,
    test_dialect_a_against_our_store_keeping_stale_waits,
    test_dialect_b_against_our_store,
    test_dialect_a_against_torch_113_server,
])
