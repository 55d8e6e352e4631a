"""StoreClient connecting: a client started before its server retries until the server appears;
with no server, or a server that never answers the handshake, it fails within the connect
timeout with an error that names the endpoint."""
import os
import socket
import subprocess
import time

from client_common import DRIVER, LineReader, run_driver
from harness import DDP_LAUNCH, TestFailure, check, free_port, run_tests

SLACK_MS = 1000  # scheduling on a loaded machine; the client itself never sleeps past its deadline


def test_client_started_first_connects_once_the_server_appears():
    for dialect in ("c", "a"):
        port = free_port()
        env = dict(os.environ, DDP_LOG_LEVEL="debug")
        client = subprocess.Popen([DRIVER, "--port", str(port), "--dialect", dialect,
                                   "--connect-timeout-ms", "60000", "connect"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        server = None
        try:
            # The client must be knocking on a closed port before the server exists.
            LineReader(client.stderr).wait_for("not reachable", 60, f"dialect {dialect} client retrying")
            server = subprocess.Popen([DDP_LAUNCH, "store", "--port", str(port)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                client.wait(timeout=60)
            except subprocess.TimeoutExpired:
                raise TestFailure(f"dialect {dialect}: client still not done 60s after the server started") from None
            out = client.stdout.read()
            check(client.returncode == 0 and out.startswith("connected ms="),
                  f"dialect {dialect}: client did not connect once the server appeared: rc={client.returncode} {out}")
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
            if server:
                server.terminate()
                server.wait(timeout=10)


def test_no_server_times_out_naming_the_endpoint():
    for dialect in ("c", "a"):
        port = free_port()
        start = time.monotonic()
        rc, out, _ = run_driver("--port", str(port), "--dialect", dialect, "--connect-timeout-ms", "1500", "connect",
                                timeout=60)
        wall = time.monotonic() - start
        check(rc == 1 and out.startswith("error ms="), f"dialect {dialect}: expected a connect error, got rc={rc} {out}")
        took = int(out.split()[1].split("=")[1])
        check(1500 <= took <= 1500 + SLACK_MS, f"dialect {dialect}: gave up after {took} ms for a 1500 ms timeout")
        check(f"127.0.0.1:{port}" in out, f"error does not name the endpoint: {out}")
        check("1500 ms" in out and "refused" in out, f"error does not say how long or why: {out}")
        check(wall < 30, f"the driver took {wall:.1f}s in all")


def test_silent_server_fails_the_dialect_c_handshake_in_time():
    # Something accepts connections but never answers (e.g. a torch 1.13 server, which would read
    # VALIDATE as the start of a huge SET): the handshake must not hang past the connect timeout.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    try:
        rc, out, _ = run_driver("--port", str(port), "--dialect", "c", "--connect-timeout-ms", "1500", "connect",
                                timeout=60)
    finally:
        listener.close()
    check(rc == 1, f"expected a handshake failure, got rc={rc} {out}")
    took = int(out.split()[1].split("=")[1])
    check(1500 <= took <= 1500 + SLACK_MS, f"gave up after {took} ms for a 1500 ms timeout")
    check(f"127.0.0.1:{port}" in out and "handshake" in out and "torch 1.13" in out,
          f"error does not name the endpoint and the likely cause: {out}")


def start_store(port):
    """`ddp-launch store` on a fixed port; returns the process once it printed port=<n>."""
    proc = subprocess.Popen([DDP_LAUNCH, "store", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    LineReader(proc.stdout).wait_for(f"port={port}", 30, f"store on port {port} announcing itself")
    return proc


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=10)


def test_client_survives_a_server_restart_between_calls():
    # The first call after the restart is a SET, which has no reply: without noticing the dead
    # connection before sending, the value would silently vanish.
    for dialect in ("c", "a"):
        port = free_port()
        server = start_store(port)
        client = subprocess.Popen([DRIVER, "--port", str(port), "--dialect", dialect, "restart"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = LineReader(client.stdout)
        try:
            out.wait_for("ready", 30, f"dialect {dialect} client connected")
            stop(server)
            server = start_store(port)
            client.stdin.write("go\n")
            client.stdin.flush()
            line = out.wait_for("after-restart", 30, f"dialect {dialect} client's calls after the restart")
            check(line.strip() == "after-restart 2", f"dialect {dialect}: {line!r}")
            client.wait(timeout=10)
            check(client.returncode == 0, f"dialect {dialect}: driver exited {client.returncode}")
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
            stop(server)


run_tests([
    test_client_started_first_connects_once_the_server_appears,
    test_no_server_times_out_naming_the_endpoint,
    test_silent_server_fails_the_dialect_c_handshake_in_time,
    test_client_survives_a_server_restart_between_calls,
])
