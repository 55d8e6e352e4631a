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

from harness import DDP_LAUNCH, PYTHON, LineReader, check, free_port, run_tests, read_events, alive, check_events_schema, restarts

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "allreduce_worker.py")
TREE = os.path.join(HERE, "tree_worker.py")
IMAGENET = os.path.join(HERE, "imagenet_style_worker.py")


def launch(*args, events=None, timeout=90):
    cmd = [DDP_LAUNCH, "run", "--python", PYTHON]
    if events:
        cmd += ["--events", events]
    r = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout)
    return r


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
        check_events_schema(events)  # docs/events.schema.json describes what the supervisor writes
        check(all(x["v"] == 1 for x in events), f"schema version in every event: {events}")
        port = events[0]["master_port"]
        check(all(json.load(open(os.path.join(d, f"rank{r}.json")))["MASTER_PORT"] == str(port) for r in (0, 1)),
              "MASTER_PORT is not the agent store's port")


@restarts
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
        check("root_cause" in [x["event"] for x in events], f"a root_cause for the failed attempt: {events}")
        check_events_schema(events)  # the failure's events too: rank_exited with a code, root_cause


def test_failed_rank_without_budget_fails_naming_rank_and_code():
    r = launch("--nproc-per-node", "2", "--shutdown-grace", "5", WORKER, "--fail-rank", "1")
    check(r.returncode == 1, f"exit {r.returncode}")
    check(re.search(r"Root cause: rank 1 .*exited with code 3", r.stderr), f"summary: {r.stderr}")
    check("rank failing on purpose" in r.stderr, "the failing rank's last stderr lines are missing")


def test_rendezvous_watchdog_names_the_rank_that_never_arrived():
    with tempfile.TemporaryDirectory() as d:
        ev = os.path.join(d, "events.jsonl")
        start = time.monotonic()
        # 15 s: rank 0 must import torch and connect first (slow on a loaded machine)
        r = launch("--nproc-per-node", "2", "--rdzv-timeout", "15", "--shutdown-grace", "2", WORKER,
                   "--stuck-rank", "1", events=ev, timeout=90)
        elapsed = time.monotonic() - start
        check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
        check(elapsed < 45, f"took {elapsed:.1f}s with a 15 s rendezvous timeout")
        check("rendezvous not complete after 15 s: 1 of 2 ranks reached the store" in r.stderr,
              f"watchdog message: {r.stderr}")
        check(re.search(r"rank 1 \(pid \d+\) never connected", r.stderr), f"missing rank not named: {r.stderr}")
        check("stuck before init_process_group" in r.stderr, "the missing rank's last output is not shown")
        timeouts = [x for x in read_events(ev) if x["event"] == "rendezvous_timeout"]
        check(len(timeouts) == 1 and timeouts[0]["missing_local_ranks"] == [1], f"events: {timeouts}")
        check_events_schema(read_events(ev))


def test_ctrl_c_during_rendezvous_stops_at_once():
    # Rank 1 never reaches the store, so rank 0 sits inside init_process_group (C++, deaf to
    # KeyboardInterrupt): the first Ctrl-C is forwarded, the second kills without waiting the grace.
    sup = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--shutdown-grace", "60",
                            WORKER, "--stuck-rank", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    LineReader(sup.stdout).wait_for("[rank 0]: entering init_process_group", 90, "rank 0 reaching the rendezvous")
    time.sleep(1.0)  # rank 0 is now waiting in the rendezvous (rank 1 never comes)
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


def start_tree(*extra, worker_args=(), dataloader=False, timeout=30):
    """Starts a 2-rank tree_worker job; returns the supervisor, every pid the workers reported
    (workers, their `sleep`, DataLoader workers with --dataloader) and the events file."""
    d = tempfile.mkdtemp()
    ev = os.path.join(d, "events.jsonl")
    sup = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--events", ev, "--nproc-per-node", "2",
                            *extra, TREE, *(["--ignore-term"] if "--shutdown-grace" in extra else []),
                            *(["--dataloader"] if dataloader else []), *worker_args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = LineReader(sup.stdout)
    deadline = time.monotonic() + timeout

    def reported(kind):
        return [[int(p) for p in line.split(kind, 1)[1].split()] for line in reader.lines if f"]: {kind} " in line]

    while len(reported("pids")) < 2 or (dataloader and len(reported("dataloader")) < 2):
        reader.wait_for("", deadline - time.monotonic(), "the workers reporting their pids")
    pids = [p for group in reported("pids") + reported("dataloader") for p in group]
    check(len(pids) == (8 if dataloader else 4), f"pids reported: {pids}")
    sup.reader, sup.events = reader, ev
    return sup, pids


def test_sigkilled_supervisor_leaves_no_worker_or_grandchild():
    # Mid-training: each rank iterates a DataLoader with 2 worker processes and has a child `sleep`.
    sup, pids = start_tree(dataloader=True, timeout=90)
    sup.kill()
    sup.wait(timeout=10)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.02)
    survivors = [p for p in pids if alive(p)]
    for p in survivors:
        os.kill(p, signal.SIGKILL)
    check(not survivors, f"still alive 1 s after the supervisor was SIGKILLed: {survivors} (of {pids})")
    # Its temporary run directory (/tmp/ddp-launch-<run id>-<pid>: no successor could find it) goes too.
    run_dir = next(e["run_dir"] for e in read_events(sup.events) if e.get("event") == "started")
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and os.path.exists(run_dir):
        time.sleep(0.02)
    check(not os.path.exists(run_dir), f"the SIGKILLed supervisor's temporary run directory stayed: {run_dir}")


def test_sigterm_forwarded_and_straggler_killed_after_grace():
    sup, pids = start_tree("--shutdown-grace", "1")
    start = time.monotonic()
    sup.send_signal(signal.SIGTERM)
    err = sup.stderr.read()
    sup.wait(timeout=30)
    elapsed = time.monotonic() - start
    out = "\n".join(sup.reader.lines)
    while out.count("ignoring SIGTERM") < 2:
        try:
            out += sup.reader.wait_for("", 5, "the workers' last output")
        except AssertionError:
            break
    check(sup.returncode == 128 + signal.SIGTERM, f"exit {sup.returncode}")
    check(out.count("ignoring SIGTERM") == 2, f"workers did not get SIGTERM: {out!r}")
    check(0.9 <= elapsed < 5, f"stragglers killed after {elapsed:.2f}s, grace was 1 s")
    check("Stopped by SIGTERM" in err, f"summary: {err}")
    check(not [p for p in pids if alive(p)], "processes left behind")


def test_extra_handled_signal_is_forwarded():
    # --signals-to-handle SIGUSR1 (Slurm's preemption warning): forwarded to every worker group,
    # whose default action ends the workers; the supervisor exits 128+SIGUSR1.
    sup, pids = start_tree("--signals-to-handle", "SIGUSR1,SIGTERM")
    sup.send_signal(signal.SIGUSR1)
    sup.wait(timeout=30)
    check(sup.returncode == 128 + signal.SIGUSR1, f"exit {sup.returncode}: {sup.stderr.read()}")
    exits = [x for x in read_events(sup.events) if x["event"] == "rank_exited"]
    check(sorted(x["signal"] for x in exits) == ["SIGUSR1", "SIGUSR1"], f"rank_exited events: {exits}")
    check(not [p for p in pids if alive(p)], "processes left behind")


def test_busy_master_port_names_holder_within_a_second():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        for store in ("agent", "rank0"):  # we host the store, or the script's rank 0 will
            start = time.monotonic()
            r = launch("--nproc-per-node", "1", "--store", store, "--master-port", str(port), WORKER, timeout=30)
            elapsed = time.monotonic() - start
            check(r.returncode != 0, f"--store {store}: started on a busy port")
            check(elapsed < 1.0, f"--store {store}: took {elapsed:.2f}s")
            check(f"pid {os.getpid()}" in r.stderr and str(port) in r.stderr,
                  f"--store {store}: the error does not name the holder: {r.stderr}")
            # The fix it suggests is a flag of `run` (not the store command's --port 0).
            check("--port 0" not in r.stderr and "--master-port" in r.stderr,
                  f"--store {store}: the hint does not name a flag of run: {r.stderr}")
    finally:
        holder.close()


@restarts
def test_imagenet_style_script_trains_through_argv_placeholders():
    # Initialised like PyTorch's ImageNet example (argv, not env://); rank 0 hosts the store. Given
    # with torchrun's underscore spellings and a PET_* override, as a torchrun user would.
    env = dict(os.environ, PET_NPROC_PER_NODE="2")
    r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--store", "rank0", "--max_restarts", "0",
                        "--shutdown_grace", "5", IMAGENET, "--dist-url", "{dist_url}", "--dist-backend", "{backend}",
                        "--world-size", "{world_size}", "--rank", "{rank}", "--epochs", "4"],
                       capture_output=True, text=True, timeout=120, env=env)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    losses = {(int(m[0]), int(m[1])): float(m[2])
              for m in re.findall(r"\]: rank (\d) epoch (\d) loss ([0-9.]+)", r.stdout)}
    check(len(losses) == 8, f"expected 4 epochs of 2 ranks: {r.stdout}")
    for rank in (0, 1):
        check(losses[(rank, 3)] < losses[(rank, 0)], f"rank {rank} did not learn: {losses}")
    sums = re.findall(r"rank \d of 2 trained checksum (\S+)", r.stdout)
    check(len(sums) == 2 and sums[0] == sums[1], f"the ranks' parameters differ (gradients not averaged): {sums}")


def test_error_file_message_and_traceback_in_the_summary():
    r = launch("--nproc-per-node", "2", "--shutdown-grace", "5", WORKER, "--raise-rank", "1")
    check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
    check(re.search(r"Root cause: rank 1 \(local 1\) on node \d+ \(\S+\), pid \d+: exited with code 1 at \d\d:\d\d:\d\d",
                    r.stderr), f"root-cause line: {r.stderr}")
    check("error file: ValueError: bad batch at step 7 on rank 1" in r.stderr, f"error file message: {r.stderr}")
    check(re.search(r"allreduce_worker.py\", line \d+, in main", r.stderr), f"no traceback: {r.stderr}")


def test_the_rank_that_failed_is_the_root_cause_not_the_one_that_lost_it():
    # Rank 1 raises (its @record error file first), closes its gloo connections and lingers; rank 0
    # fails in all_reduce on "Connection closed by peer" (or "reset by peer") and is reaped first. The summary names
    # rank 1 by its error file, and rank 0 as having lost a peer.
    r = launch("--nproc-per-node", "2", "--shutdown-grace", "30", WORKER, "--lose-peer-rank", "1", timeout=150)
    check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
    check(re.search(r"Connection (closed|reset) by peer", r.stderr), f"rank 0 did not fail on the connection: {r.stderr}")
    check(re.search(r"Root cause: rank 1 \(local 1\) .*: killed by SIGTERM at", r.stderr),
          f"rank 1 (failed first, stopped by the teardown while it lingered) is not the root cause: {r.stderr}")
    check("error file: ValueError: bad batch at step 7 on rank 1" in r.stderr, f"error file message: {r.stderr}")
    check(re.search(r"Rank: rank 0 \(local 0\) .*: exited with code 1 \(lost a peer\)", r.stderr),
          f"rank 0 not reported as having lost its peer: {r.stderr}")


def test_no_python_module_and_nproc_choices():
    r = subprocess.run([DDP_LAUNCH, "run", "--nproc-per-node", "2", "--no-python", "sh", "-c",
                        'echo "rank $RANK of $WORLD_SIZE"'], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and "[rank 1]: rank 1 of 2" in r.stdout, f"--no-python: {r.returncode} {r.stdout} "
          f"{r.stderr}")
    r = launch("--nproc-per-node", "1", "-m", "platform")
    check(r.returncode == 0 and "[rank 0]: Linux" in r.stdout, f"-m: {r.returncode} {r.stdout} {r.stderr}")
    r = subprocess.run([DDP_LAUNCH, "run", "--nproc-per-node", "auto", "--no-python", "sh", "-c",
                        'echo "world $WORLD_SIZE"'], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and f"world {os.cpu_count()}" in r.stdout, f"auto without GPUs: {r.stdout} {r.stderr}")
    r = launch("--nproc-per-node", "gpu", WORKER, timeout=30)
    check(r.returncode == 2 and "no GPU found" in r.stderr, f"gpu without GPUs: {r.returncode} {r.stderr}")
    r = launch("--nproc-per-node", "1", "--shutdown-gracee", "5", WORKER, timeout=30)
    check(r.returncode == 2 and "unknown option '--shutdown-gracee'" in r.stderr, f"a mistyped option: "
          f"{r.returncode} {r.stderr}")


def test_slow_console_does_not_stall_the_workers():
    # Nobody reads the supervisor's stdout (a stuck terminal): the worker still prints its 32 MB
    # and finishes; the console gets what fits and a count of the lines it dropped.
    with tempfile.TemporaryDirectory() as d:
        script, done = os.path.join(d, "chatty.py"), os.path.join(d, "done")
        with open(script, "w") as f:
            f.write("import sys\nfor i in range(400000): print('x' * 80)\nopen(sys.argv[1], 'w').close()\n")
        with open(os.path.join(d, "err"), "w") as err:
            sup = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "1", script, done],
                                   stdout=subprocess.PIPE, stderr=err)
            deadline = time.monotonic() + 60
            while not os.path.exists(done) and time.monotonic() < deadline and sup.poll() is None:
                time.sleep(0.05)
            finished = os.path.exists(done)
            out = sup.stdout.read().decode()
            sup.wait(timeout=30)
        check(finished, "the worker did not get through its output within 60 s while the console was stuck")
        check(sup.returncode == 0, f"exit {sup.returncode}: {open(os.path.join(d, 'err')).read()}")
        check(re.search(r"console too slow, \d+ lines dropped", out), "no count of the dropped lines")


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
    test_extra_handled_signal_is_forwarded,
    test_busy_master_port_names_holder_within_a_second,
    test_imagenet_style_script_trains_through_argv_placeholders,
    test_error_file_message_and_traceback_in_the_summary,
    test_the_rank_that_failed_is_the_root_cause_not_the_one_that_lost_it,
    test_no_python_module_and_nproc_choices,
    test_slow_console_does_not_stall_the_workers,
    test_two_supervisors_as_two_nodes,
])
