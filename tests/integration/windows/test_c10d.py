"""A mixed c10d rendezvous of two nodes on 127.0.0.1: a Linux node (build/bin/ddp-launch) and a
Windows node (ddp-launch.exe under Wine), one rank each, both finishing with WORLD_SIZE 2 — with
the Linux node hosting the rendezvous store and the reverse. The Windows rank gets USE_LIBUV=0
(torch's Windows wheels lack libuv) and a numeric MASTER_ADDR; the rendezvous store listens on the
address given only (Wine's sockets are the host's: `ss` sees them)."""
import os
import re
import subprocess
import tempfile
import time

from harness import TestFailure, check, free_port, listening_addresses, run_tests
from wine import CHILD, exe_command, require_exe, run_exe, windows_path

LINUX_LAUNCH = os.environ.get("DDP_LINUX_LAUNCH", "bin/ddp-launch")

# Each rank prints its view and stays a few seconds, so the stores can be looked at meanwhile.
LINUX_RANK = ["/bin/sh", "-c",
              "echo env WORLD_SIZE=$WORLD_SIZE RANK=$RANK GROUP_RANK=$GROUP_RANK MASTER_ADDR=$MASTER_ADDR "
              "MASTER_PORT=$MASTER_PORT USE_LIBUV=${USE_LIBUV:-unset}; sleep 3"]
WINDOWS_RANK = ["cmd.exe", "/c",
                "echo env WORLD_SIZE=%WORLD_SIZE% RANK=%RANK% GROUP_RANK=%GROUP_RANK% MASTER_ADDR=%MASTER_ADDR% "
                f"MASTER_PORT=%MASTER_PORT% USE_LIBUV=%USE_LIBUV% & {windows_path(CHILD)} sleep 3000"]


def rank_env(stdout, who):
    """The NAME=value pairs of the one 'env ...' line a node's rank printed."""
    found = [m.group(1) for m in re.finditer(r"\benv (WORLD_SIZE=.*)$", stdout.replace("\r", ""), re.M)]
    check(len(found) == 1, f"{who}: expected one rank line, got {found}; stdout: {stdout}")
    return dict(kv.split("=", 1) for kv in found[0].split())


def node_args(endpoint, run_id, is_host, rank):
    return ["run", "--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
            "--rdzv-id", run_id, "--rdzv-conf", f"is_host={1 if is_host else 0},join_timeout=120",
            "--no-python", *rank]


def mixed_job(windows_hosts):
    require_exe()
    check(os.path.exists(LINUX_LAUNCH), f"{LINUX_LAUNCH} is missing: build the Linux ddp-launch")
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    run_id = f"mixed{port}"
    linux = [LINUX_LAUNCH, *node_args(endpoint, run_id, not windows_hosts, LINUX_RANK)]
    windows = exe_command(*node_args(endpoint, run_id, windows_hosts, WINDOWS_RANK))
    first, second = (windows, linux) if windows_hosts else (linux, windows)
    with tempfile.TemporaryDirectory(prefix="ddp-mixed-") as tmp:
        procs = []
        try:
            procs.append(subprocess.Popen(first, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp))
            # The host's store first (Wine takes a few seconds to start), then the joining node.
            deadline = time.monotonic() + 60
            while not listening_addresses(port):
                if procs[0].poll() is not None or time.monotonic() > deadline:
                    out, err = procs[0].communicate(timeout=30)
                    raise TestFailure(f"the hosting node never listened on {endpoint}: exit {procs[0].returncode}; "
                                      f"stderr: {err[-3000:]}")
                time.sleep(0.2)
            procs.append(subprocess.Popen(second, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          cwd=tmp))
            bound = listening_addresses(port)
            # The rendezvous store listens on the endpoint's address only (torch's listens on all
            # interfaces, pytorch#173909, which is what prompts the Windows firewall).
            check(bound == [endpoint], f"the rendezvous store listens on {bound}, not on {endpoint} only")
            outputs = []
            for p in procs:
                try:
                    outputs.append(p.communicate(timeout=180))
                except subprocess.TimeoutExpired:
                    raise TestFailure(f"a node did not finish within 180 s: {p.args[:3]}") from None
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    (host_out, host_err), (join_out, join_err) = outputs
    win_out, win_err = (host_out, host_err) if windows_hosts else (join_out, join_err)
    lin_out, lin_err = (join_out, join_err) if windows_hosts else (host_out, host_err)
    check(procs[0].returncode == 0 and procs[1].returncode == 0,
          f"exits {procs[0].returncode}, {procs[1].returncode}; Windows stderr: {win_err[-3000:]}\n"
          f"Linux stderr: {lin_err[-3000:]}")
    win, lin = rank_env(win_out, "Windows node"), rank_env(lin_out, "Linux node")
    check(win["WORLD_SIZE"] == "2" and lin["WORLD_SIZE"] == "2", f"Windows rank {win}; Linux rank {lin}")
    check(sorted([win["RANK"], lin["RANK"]]) == ["0", "1"], f"ranks: Windows {win}, Linux {lin}")
    check(sorted([win["GROUP_RANK"], lin["GROUP_RANK"]]) == ["0", "1"], f"node ranks: Windows {win}, Linux {lin}")
    check(win["MASTER_ADDR"] == lin["MASTER_ADDR"] == "127.0.0.1" and win["MASTER_PORT"] == lin["MASTER_PORT"],
          f"the workers' store differs: Windows {win}, Linux {lin}")
    check(win["USE_LIBUV"] == "0", f"the Windows rank's USE_LIBUV: {win}")
    check(lin["USE_LIBUV"] == "unset", f"the Linux rank got USE_LIBUV: {lin}")


def test_linux_node_hosts_and_windows_node_joins():
    mixed_job(windows_hosts=False)


def test_windows_node_hosts_and_linux_node_joins():
    mixed_job(windows_hosts=True)


def test_windows_rank_gets_use_libuv_0_and_a_numeric_master_addr():
    echo = "echo env WORLD_SIZE=%WORLD_SIZE% MASTER_ADDR=%MASTER_ADDR% USE_LIBUV=%USE_LIBUV% DIST={dist_url}"
    r = run_exe("run", "--master-addr", "localhost", "--no-python", "cmd.exe", "/c", echo, timeout=120)
    check(r.returncode == 0, f"exit {r.returncode}; stderr: {r.stderr}")
    env = rank_env(r.stdout, "the Windows run")
    check(env["USE_LIBUV"] == "0", f"USE_LIBUV: {env}")
    check(env["MASTER_ADDR"] == "127.0.0.1", f"MASTER_ADDR is not localhost resolved once: {env}")
    check(env["DIST"].startswith("tcp://127.0.0.1:"), f"{{dist_url}} is not numeric: {env}")
    # The user's choice stands.
    r = run_exe("run", "--no-python", "cmd.exe", "/c", echo, timeout=120, env={**os.environ, "USE_LIBUV": "1"})
    check(r.returncode == 0, f"exit {r.returncode}; stderr: {r.stderr}")
    check(rank_env(r.stdout, "the Windows run")["USE_LIBUV"] == "1", f"USE_LIBUV=1 was overridden: {r.stdout}")


run_tests([
    test_windows_rank_gets_use_libuv_0_and_a_numeric_master_addr,
    test_linux_node_hosts_and_windows_node_joins,
    test_windows_node_hosts_and_linux_node_joins,
])
