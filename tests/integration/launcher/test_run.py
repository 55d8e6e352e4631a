"""`ddp-launch run` end to end with real torch 1.13 workers: env contract, events, restarts,
teardown, signals, containment after a SIGKILLed supervisor, busy port, argv placeholders,
two supervisors as two nodes."""
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, LineReader, check, free_port, run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "allreduce_worker.py")
TREE = os.path.join(HERE, "tree_worker.py")


def launch(*args, events=None, timeout=90):
    cmd = [DDP_LAUNCH, "run", "--python", PYTHON]
    if events:
        cmd += ["--events", events]
    r = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout)
    return r


def read_events(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_two_ranks_succeed_with_torchrun_env_and_events():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--nproc-per-node", "2",
                            "--rdzv-id", "job42", WORKER, "--dump-env", d],
                           capture_output=True, text=True, timeout=90, env=env)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check("[rank 0]: rank 0 of 2 sum 3 attempt 0" in r.stdout, f"no prefixed rank 0 line: {r.stdout!r}")
        check("[rank 1]: rank 1 of 2 sum 3 attempt 0" in r.stdout, f"no prefixed rank 1 line: {r.stdout!r}")
        check("OMP_NUM_THREADS" in r.stderr, "the OMP_NUM_THREADS choice was not announced")
        for rank in (0, 1):
            e = json.load(open(os.path.join(d, f"rank{rank}.json")))
            expect = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
                      "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": "2",
                      "ROLE_NAME": "default", "MASTER_ADDR": "127.0.0.1", "TORCHELASTIC_RESTART_COUNT": "0",
                      "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RUN_ID": "job42",
                      "TORCHELASTIC_USE_AGENT_STORE": "True", "NCCL_ASYNC_ERROR_HANDLING": "1",
                      "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "OMP_NUM_THREADS": "1"}
            for k, v in expect.items():
                check(e.get(k) == v, f"rank {rank}: {k}={e.get(k)!r}, expected {v!r}")
            check(e["TORCHELASTIC_ERROR_FILE"].endswith(f"attempt_0/{rank}/error.json"), "error file path")
        events = read_events(ev)
        names = [x["event"] for x in events]
        check(names[0] == "started" and names[-1] == "finished", f"event order: {names}")
        check(names.count("rank_started") == 2 and names.count("rank_exited") == 2, f"events: {names}")
        check(events[-1]["exit_code"] == 0, "finished exit code")
        rdzv = [x for x in events if x["event"] == "rendezvous_complete"]
        check(len(rdzv) == 1 and rdzv[0]["world_size"] == 2 and rdzv[0]["attempt"] == 0,
              f"rendezvous_complete event: {rdzv}")
        check(names.index("rendezvous_complete") > names.index("rank_started"), f"event order: {names}")
        port = events[0]["master_port"]
        check(all(json.load(open(os.path.join(d, f"rank{r}.json")))["MASTER_PORT"] == str(port) for r in (0, 1)),
              "MASTER_PORT is not the agent store's port")


def test_failed_rank_restarts_within_budget():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        r = launch("--nproc-per-node", "2", "--max-restarts", "1", WORKER, "--fail-rank", "1", events=ev)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check("attempt 1" in r.stdout, "no attempt 1 output")
        events = read_events(ev)
        check([x["attempt"] for x in events if x["event"] == "restarting"] == [1], "restarting event")
        check([x["attempt"] for x in events if x["event"] == "rendezvous_complete"] == [0, 1],
              "one rendezvous_complete per attempt (fresh store state each time)")
        check(events[-1]["attempts"] == 2, "two attempts")


def test_failed_rank_without_budget_fails_naming_rank_and_code():
    r = launch("--nproc-per-node", "2", "--shutdown-grace", "5", WORKER, "--fail-rank", "1")
    check(r.returncode == 1, f"exit {r.returncode}")
    check(re.search(r"Root cause: rank 1 .*exited with code 3", r.stderr), f"summary: {r.stderr}")
    check("rank failing on purpose" in r.stderr, "the failing rank's last stderr lines are missing")


def test_rendezvous_watchdog_names_the_rank_that_never_arrived():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        start = time.monotonic()
        r = launch("--nproc-per-node", "2", "--rdzv-timeout", "4", "--shutdown-grace", "2", WORKER,
                   "--stuck-rank", "1", events=ev, timeout=60)
        elapsed = time.monotonic() - start
        check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
        check(elapsed < 20, f"took {elapsed:.1f}s with a 4 s rendezvous timeout")
        check("rendezvous not complete after 4 s: 1 of 2 ranks reached the store" in r.stderr,
              f"watchdog message: {r.stderr}")
        check(re.search(r"rank 1 \(pid \d+\) never connected", r.stderr), f"missing rank not named: {r.stderr}")
        check("stuck before init_process_group" in r.stderr, "the missing rank's last output is not shown")
        timeouts = [x for x in read_events(ev) if x["event"] == "rendezvous_timeout"]
        check(len(timeouts) == 1 and timeouts[0]["missing_local_ranks"] == [1], f"events: {timeouts}")


def test_ctrl_c_during_rendezvous_stops_at_once():
    # Rank 1 never reaches the store, so rank 0 sits inside init_process_group (C++, deaf to
    # KeyboardInterrupt): the first Ctrl-C is forwarded, the second kills without waiting the grace.
    sup = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--shutdown-grace", "60",
                            WORKER, "--stuck-rank", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    LineReader(sup.stdout).wait_for("stuck before init_process_group", 60, "rank 1 announcing it is stuck")
    time.sleep(1.0)  # rank 0 is now waiting in the rendezvous
    start = time.monotonic()
    sup.send_signal(signal.SIGINT)
    time.sleep(0.3)
    sup.send_signal(signal.SIGINT)
    try:
        rc = sup.wait(timeout=10)
    except subprocess.TimeoutExpired:
        sup.kill()
        raise AssertionError("still running 10 s after two Ctrl-C during rendezvous (grace is 60 s)") from None
    elapsed = time.monotonic() - start
    check(rc == 128 + signal.SIGINT, f"exit {rc}")
    check(elapsed < 5, f"took {elapsed:.1f}s to stop after the second Ctrl-C")


def start_tree(*extra):
    d = tempfile.mkdtemp()
    ev = os.path.join(d, "events.jsonl")
    sup = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--nproc-per-node", "2",
                            *extra, TREE, *(["--ignore-term"] if "--shutdown-grace" in extra else [])],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = []
    deadline = time.monotonic() + 30
    while len(pids) < 4 and time.monotonic() < deadline:
        line = sup.stdout.readline()
        m = re.search(r"pids (\d+) (\d+)", line)
        if m:
            pids += [int(m.group(1)), int(m.group(2))]
    check(len(pids) == 4, f"workers did not report their pids within 30 s (got {pids})")
    return sup, pids


def test_sigkilled_supervisor_leaves_no_worker_or_grandchild():
    sup, pids = start_tree()
    sup.kill()
    sup.wait(timeout=10)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.02)
    survivors = [p for p in pids if alive(p)]
    for p in survivors:
        os.kill(p, signal.SIGKILL)
    check(not survivors, f"still alive 1 s after the supervisor was SIGKILLed: {survivors}")


def test_sigterm_forwarded_and_straggler_killed_after_grace():
    sup, pids = start_tree("--shutdown-grace", "1")
    start = time.monotonic()
    sup.send_signal(signal.SIGTERM)
    out, err = sup.communicate(timeout=30)
    elapsed = time.monotonic() - start
    check(sup.returncode == 128 + signal.SIGTERM, f"exit {sup.returncode}")
    check(out.count("ignoring SIGTERM") == 2, f"workers did not get SIGTERM: {out!r}")
    check(0.9 <= elapsed < 5, f"stragglers killed after {elapsed:.2f}s, grace was 1 s")
    check("Stopped by SIGTERM" in err, f"summary: {err}")
    check(not [p for p in pids if alive(p)], "processes left behind")


def test_busy_master_port_names_holder_within_a_second():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    start = time.monotonic()
    r = launch("--nproc-per-node", "1", "--master-port", str(port), WORKER, timeout=30)
    elapsed = time.monotonic() - start
    holder.close()
    check(r.returncode != 0, "started on a busy port")
    check(elapsed < 1.0, f"took {elapsed:.2f}s")
    check(f"pid {os.getpid()}" in r.stderr and str(port) in r.stderr, f"error does not name the holder: {r.stderr}")


def test_imagenet_style_argv_placeholders_with_rank0_store():
    r = launch("--nproc-per-node", "2", "--store", "rank0", WORKER, "--dist-url", "{dist_url}",
               "--dist-backend", "{backend}", "--world-size", "{world_size}", "--rank", "{rank}")
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    check("rank 1 of 2 sum 3" in r.stdout, f"output: {r.stdout}")


def test_two_supervisors_as_two_nodes():
    port = free_port()
    common = ["--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", str(port)]
    node0 = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--node-rank", "0", *common, WORKER],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    node1 = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--node-rank", "1", *common, WORKER],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out1, err1 = node1.communicate(timeout=90)
    out0, err0 = node0.communicate(timeout=90)
    check(node0.returncode == 0 and node1.returncode == 0, f"exit codes {node0.returncode}/{node1.returncode}: "
          f"{err0}\n{err1}")
    host = socket.gethostname()
    for rank, out in ((0, out0), (1, out0), (2, out1), (3, out1)):
        # Several nodes: the prefix names the host too.
        check(f"[{host}:{rank}]: rank {rank} of 4 sum 10" in out, f"rank {rank} line missing: {out}")


run_tests([
    test_two_ranks_succeed_with_torchrun_env_and_events,
    test_failed_rank_restarts_within_budget,
    test_failed_rank_without_budget_fails_naming_rank_and_code,
    test_rendezvous_watchdog_names_the_rank_that_never_arrived,
    test_ctrl_c_during_rendezvous_stops_at_once,
    test_sigkilled_supervisor_leaves_no_worker_or_grandchild,
    test_sigterm_forwarded_and_straggler_killed_after_grace,
    test_busy_master_port_names_holder_within_a_second,
    test_imagenet_style_argv_placeholders_with_rank0_store,
    test_two_supervisors_as_two_nodes,
])
