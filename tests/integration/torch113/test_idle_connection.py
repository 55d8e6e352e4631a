"""Spec §3.1: a torch 1.13 client keeps a second, idle "callback" connection open for its whole
life. Our store must never close it first: a FIN makes the client's callback thread busy-loop
(about one CPU-second per second) and an RST aborts the client process."""
import os
import subprocess
import time

from harness import StoreProcess, check, run_tests
from procs import Child

IMPORT_TIMEOUT_S = 180  # an import of torch has taken 30 s on a loaded 2-core machine
IDLE_S = 2.0
MAX_IDLE_CPU_S = 0.2  # idle is ~0; the FIN busy-loop burns ~IDLE_S
REPLY_TIMEOUT_S = 15


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def tcp_states(port, side):
    """(state, local, peer) of every TCP socket whose `side` ("sport" or "dport") is `port`."""
    out = subprocess.run(["ss", "-Htn", "state", "all", f"( {side} = :{port} )"],
                         capture_output=True, text=True, timeout=10, check=True).stdout
    rows = (line.split() for line in out.splitlines())
    return sorted((cols[0], plain(cols[3]), plain(cols[4])) for cols in rows if cols)


def plain(address):
    # torch's client socket is AF_INET6, so ss shows its side as [::ffff:127.0.0.1]:port.
    return address.replace("[::ffff:", "").replace("]", "")


def test_idle_callback_connection_stays_open_and_quiet():
    with StoreProcess() as store, Child("idle_client.py", "127.0.0.1", str(store.port)) as client:
        client.read_line(IMPORT_TIMEOUT_S, "'connected' (torch import + TCPStore construction)")
        before_client = tcp_states(store.port, "dport")
        check([s for s, _, _ in before_client] == ["ESTAB", "ESTAB"],
              f"a 1.13 client should hold exactly 2 established connections, ss shows {before_client}")
        cpu_before = cpu_seconds(client.proc.pid)
        time.sleep(IDLE_S)  # the idle period is what is under test
        idle_cpu = cpu_seconds(client.proc.pid) - cpu_before
        after_client = tcp_states(store.port, "dport")
        after_server = tcp_states(store.port, "sport")
        print(f"  client CPU over {IDLE_S}s idle: {idle_cpu:.3f}s; client side {after_client}; "
              f"server side {[s for s, _, _ in after_server]}", flush=True)
        check(idle_cpu <= MAX_IDLE_CPU_S,
              f"client used {idle_cpu:.2f} CPU-s in {IDLE_S}s idle: its callback thread is spinning")
        check(after_client == before_client,
              f"client connections changed while idle: {before_client} -> {after_client}")
        listening = [row for row in after_server if row[0] == "LISTEN"]
        accepted = sorted((s, peer, local) for s, local, peer in after_server if s != "LISTEN")
        check(len(listening) == 1 and accepted == after_client,
              f"server side does not mirror the client's two open connections: {after_server}")
        client.send("use")
        got = client.read_prefixed("got=", REPLY_TIMEOUT_S, "set/get result after idling")
        check(got == "b'still works'", f"client after idling got {got}")


run_tests([test_idle_callback_connection_stays_open_and_quiet])
