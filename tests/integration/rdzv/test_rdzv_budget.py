"""The job's one restart budget in a c10d job (issue 28): two real node supervisors on loopback, real
(light, no torch) workers that fail. The rendezvous host keeps the budget and charges one restart per
failed round, whichever node failed; when it is spent the rendezvous closes with the decision, so
both nodes end with the same exit code and the same reason (torchrun's per-agent budgets do not:
pytorch#108158)."""
import json
import os
import subprocess
import sys
import time

from harness import check, check_events_schema, free_port, run_tests, restarts
from rdzv_common import HERE, Workdir

FAST = "last_call_timeout=1,heartbeat_timeout=2,join_timeout=30,exit_barrier_timeout=30"
WORKER = os.path.join(HERE, "budget_worker.py")
DRIVER = os.path.join(os.environ.get("DDP_BIN_DIR", "build/bin"), "store-client-driver")  # our store client


def endpoint():
    return f"127.0.0.1:{free_port()}"


def events(node, name):
    return [e for e in node.events() if e.get("event") == name]


def check_same_end(nodes, code, gave_up):
    """Both nodes exit with `code`, their finished events agree, and both name the same reason."""
    for n in nodes:
        got = n.wait_exit(60, "the job to end")
        check(got == code, f"{n.name}: exit {got}, wanted {code}; stderr: {n.stderr()[-3000:]}")
        finished = events(n, "finished")
        check(finished and finished[-1]["exit_code"] == code and finished[-1]["gave_up"] == gave_up,
              f"{n.name}: finished {finished}")
        check_events_schema(n.events())
    reasons = [[e["reason"] for e in events(n, "rendezvous_closed")] for n in nodes]
    check(all(len(r) == 1 for r in reasons), f"one rendezvous_closed per node: {reasons}")
    check(reasons[0] == reasons[1], f"the same reason on both nodes: {reasons}")
    for n in nodes:
        line = f"Root cause: the rendezvous ended the job: {reasons[0][0]}"
        check(line in n.stderr(), f"{n.name}'s summary names the reason: {n.stderr()[-3000:]}")
    return reasons[0][0]


def rounds(node):
    return sorted({e["round"] for e in events(node, "rendezvous_complete")})


def read_store_budget(ep, run_id, nodes):
    """The job's budget as a store client reads it once every node is in round 1: ours
    (store-client-driver: torch's client would prefix the key with "/") gets rdzv/<run id>/budget
    from the host's store."""
    for n in nodes:
        n.wait_event("rendezvous_complete", 60, "round 1", round=1)
    host, port = ep.rsplit(":", 1)
    r = subprocess.run([DRIVER, "--host", host, "--port", port, "get",
                        "--key", f"rdzv/{run_id}/budget"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"the store holds no rdzv/{run_id}/budget: {r.stdout} {r.stderr}")
    return json.loads(r.stdout)


@restarts
def test_one_restart_for_the_job_not_one_per_node():
    """The failure alternates between the nodes: with per-node budgets (--max-restarts 1 each) the job
    ran a third round; with the job's budget it ends after the one restart it had. While round 1 runs
    (b fails in it only once the test says go), the budget is in the host's store for any client."""
    ep = endpoint()
    with Workdir() as w:
        started = time.monotonic()
        go = os.path.join(w.path, "go")
        a = w.node("a", ep, "2", [WORKER, "--fail-on", "even"], conf=FAST, extra=("--max-restarts", "1"))
        b = w.node("b", ep, "2", [WORKER, "--fail-on", "odd", "--fail-after", go], conf=FAST,
                   extra=("--max-restarts", "1"))
        try:
            budget = read_store_budget(ep, os.path.basename(w.path), (a, b))
        finally:
            with open(go, "w") as f:
                f.write("0\n")
        check(budget == {"used": 1, "max_restarts": 1, "restarts_left": 0, "round": 0},
              f"the store's copy of the job's budget after round 0 failed: {budget}")
        reason = check_same_end((a, b), 1, "max_restarts")
        check("round 1 failed on node(s) b" in reason and "--max-restarts 1" in reason, reason)
        for n in (a, b):
            check(rounds(n) == [0, 1], f"{n.name}: exactly one job-wide restart, rounds {rounds(n)}")
            restarts = events(n, "restarting")
            check(len(restarts) == 1 and restarts[0]["restarts_left"] == 0,
                  f"{n.name}: one restart, charged to the job: {restarts}")
        print(f"    both nodes ended after one restart in {time.monotonic() - started:.1f}s")


@restarts
def test_no_progress_counts_for_the_job():
    """Only b fails (every round), only a's checkpoint advances (rounds 0-2; b fails once a's is
    written). b's own budget would end the job after two failures without progress
    (--max-no-progress-restarts 1); the job progressed, so it runs until two rounds in a row pass with
    no node's checkpoint advancing: rounds 3 and 4."""
    ep = endpoint()
    with Workdir() as w:
        started = time.monotonic()
        ck_a, ck_b = os.path.join(w.path, "ckpt_a"), os.path.join(w.path, "ckpt_b")
        budget = ("--max-restarts", "10", "--max-no-progress-restarts", "1")
        a = w.node("a", ep, "2", [WORKER, "--fail-on", "none", "--checkpoint", ck_a, "--advance-until", "3"],
                   conf=FAST, extra=(*budget, "--checkpoint-file", ck_a))
        b = w.node("b", ep, "2", [WORKER, "--fail-on", "all", "--fail-after", ck_a, "--advance-until", "3"],
                   conf=FAST, extra=(*budget, "--checkpoint-file", ck_b))
        reason = check_same_end((a, b), 3, "no_progress")
        check("round 4 failed on node(s) b" in reason and "no progress in 2 attempts in a row" in reason
              and "the checkpoint file reads 3" in reason, reason)
        for n in (a, b):
            check(rounds(n) == [0, 1, 2, 3, 4], f"{n.name}: rounds {rounds(n)}")
            progress = [e["progress"] for e in events(n, "restarting")]
            check(progress == [True, True, True, False], f"{n.name}: the job's progress per restart: {progress}")
        print(f"    both nodes ended with exit code 3 after round 4 in {time.monotonic() - started:.1f}s")


TESTS = [test_one_restart_for_the_job_not_one_per_node, test_no_progress_counts_for_the_job]
run_tests([t for t in TESTS if len(sys.argv) < 2 or t.__name__ in sys.argv[1:]])
