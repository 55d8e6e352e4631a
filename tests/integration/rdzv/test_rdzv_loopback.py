"""Dynamic rendezvous (--rdzv-backend c10d) with several supervisors on loopback: rounds, ranks,
node death and re-admission, restarts, store lifetime, the store host killed, a wrong endpoint. Light workers (no torch)
except the first test, which trains with gloo across three "nodes" of different sizes."""
import os
import signal
import sys
import time

from harness import TestFailure, check, check_events_schema, free_port, run_tests, wait_dead, restarts
from rdzv_common import HERE, LIGHT_WORKER, Workdir

FAST = "last_call_timeout=1,heartbeat_timeout=2,join_timeout=60,exit_barrier_timeout=60"
TORCH_WORKER = os.path.join(HERE, "..", "launcher", "allreduce_worker.py")


def endpoint():
    return f"127.0.0.1:{free_port()}"


def test_three_nodes_of_different_sizes_train_with_gloo():
    ep = endpoint()
    with Workdir() as w:
        nodes = [w.node(name, ep, "3", [TORCH_WORKER], nproc=nproc, conf=FAST)
                 for name, nproc in (("alpha", 1), ("beta", 2), ("gamma", 1))]
        for n in nodes:
            check(n.wait_exit(180, "the job to finish") == 0, f"{n.name} failed: {n.stderr()[-3000:]}")
        completes = [n.wait_event("rendezvous_complete", 1, "its round") for n in nodes]
        check(len({(c["round"], c["nodes"], c["world_size"]) for c in completes}) == 1,
              f"every node must see the same round: {completes}")
        check(completes[0]["world_size"] == 4 and completes[0]["nodes"] == 3, f"{completes[0]}")
        check(sorted(c["node_rank"] for c in completes) == [0, 1, 2], f"node ranks {completes}")
        out = "".join(n.stdout() for n in nodes)
        for rank in range(4):
            check(f"rank {rank} of 4 sum 10" in out, f"rank {rank}'s all_reduce missing: {out}")
        beta = nodes[1].stdout()
        check("[beta:" in beta and "[rank " not in beta, f"[host:rank] prefix expected: {beta}")


@restarts  # a membership change restarts the ranks of every node left
def test_dead_node_survivors_go_on_smaller_and_it_comes_back():
    ep = endpoint()
    with Workdir() as w:
        args = [LIGHT_WORKER, "--stop-file", w.stop_file()]
        a = w.node("a", ep, "2:3", args, conf=FAST)
        a.wait_event("started", 30, "a is up: it hosts the rendezvous (the host's death would end the job)")
        b = w.node("b", ep, "2:3", args, conf=FAST)
        c = w.node("c", ep, "2:3", args, conf=FAST)
        ranks0 = {n.name: n.wait_event("rendezvous_complete", 60, "round 0 with three nodes", round=0,
                                       nodes=3)["node_rank"] for n in (a, b, c)}
        c.kill(signal.SIGKILL)
        killed = time.monotonic()
        # Whichever of a and b bound the endpoint first hosts, and declares c dead.
        deadline = time.monotonic() + 30
        lost = None
        while lost is None:
            lost = next((e for n in (a, b) for e in n.events() if e.get("event") == "node_lost"), None)
            check(lost is not None or time.monotonic() < deadline,
                  f"c declared dead within 30 s; a: {a.stderr()[-1500:]}\nb: {b.stderr()[-1500:]}")
            time.sleep(0.05)
        check(lost["host"] == "c", f"{lost}")
        for n in (a, b):
            n.wait_event("round_ended", 30, "round 0 over", round=0)
            e = n.wait_event("rendezvous_complete", 30, "round 1 without c", round=1)
            check(e["nodes"] == 2 and e["world_size"] == 2, f"{n.name}: {e}")
            if ranks0[n.name] < 2:
                check(e["node_rank"] == ranks0[n.name], f"{n.name}: node rank {ranks0[n.name]} → {e['node_rank']}")
            n.wait_event("rank_started", 30, "workers restarted at the smaller size", attempt=1)
        print(f"    survivors restarted {time.monotonic() - killed:.1f}s after the kill (heartbeat timeout 2s)")
        # A node comes back (a new supervisor on the host that died): admitted at the next round.
        c2 = w.node("c2", ep, "2:3", args, conf=FAST)
        ranks1 = {n.name: n.wait_event("rendezvous_complete", 1, "round 1", round=1)["node_rank"] for n in (a, b)}
        for n in (a, b, c2):
            e = n.wait_event("rendezvous_complete", 60, "round 2 with the newcomer", round=2)
            check(e["nodes"] == 3 and e["world_size"] == 3, f"{n.name}: {e}")
            if n is not c2:
                check(e["node_rank"] == ranks1[n.name], f"{n.name}: stable node rank {ranks1[n.name]} → {e}")
        restarts = [e for e in a.events() if e.get("event") == "restarting"]
        check(not restarts, f"membership changes must not spend the restart budget: {restarts}")
        open(w.stop_file(), "w").close()
        for n in (a, b, c2):
            check(n.wait_exit(60, "the job to finish") == 0, f"{n.name}: {n.stderr()[-2000:]}")
        check("world 3 rank" in c2.stdout(), c2.stdout())
        for n in (a, b, c2):  # the dynamic rounds' events (node_lost, round_ended, ...) as the schema has them
            check_events_schema(n.events())


@restarts
def test_a_failed_rank_restarts_every_node_within_budget():
    ep = endpoint()
    with Workdir() as w:
        a = w.node("a", ep, "2", [LIGHT_WORKER, "--stop-file", w.stop_file()], conf=FAST,
                   extra=("--max-restarts", "1"))
        b = w.node("b", ep, "2", [LIGHT_WORKER, "--stop-file", w.stop_file(), "--fail-round", "0"], conf=FAST,
                   extra=("--max-restarts", "1"))
        for n in (a, b):
            n.wait_event("rendezvous_complete", 60, "round 1 after b's failure", round=1, nodes=2)
        for n in (a, b):  # one budget for the job (issue 28): both nodes see the one restart it cost
            n.wait_event("restarting", 5, "the job spends its budget", attempt=1, restarts_left=0)
        open(w.stop_file(), "w").close()
        for n in (a, b):
            check(n.wait_exit(60, "the job to finish") == 0, f"{n.name}: {n.stderr()[-2000:]}")
            restarts = [e for e in n.events() if e.get("event") == "restarting"]
            check(len(restarts) == 1, f"{n.name}: one restart for the job: {restarts}")


def test_budget_spent_ends_the_job_on_every_node_naming_the_node():
    ep = endpoint()
    with Workdir() as w:
        a = w.node("a", ep, "2", [LIGHT_WORKER, "--stop-file", w.stop_file()], conf=FAST)
        a.wait_event("started", 30, "a is up: it hosts the rendezvous")
        b = w.node("b", ep, "2", [LIGHT_WORKER, "--fail-round", "0"], conf=FAST)
        check(b.wait_exit(60, "b's job to fail") == 1, b.stderr()[-2000:])
        check(a.wait_exit(60, "a to learn the job is over") == 1, a.stderr()[-2000:])
        err = b.stderr()
        check("rank 1 (local 0) on node 1 (b)" in err, f"the summary names node and rank: {err[-2000:]}")
        for n in (a, b):  # the host's budget closed the round b failed: the same reason on both
            check("round 0 failed on node(s) b: restart budget spent" in n.stderr(),
                  f"{n.name} names the node whose failure spent the job's budget: {n.stderr()[-2000:]}")


def test_host_keeps_the_store_until_every_node_finished():
    ep = endpoint()
    with Workdir() as w:
        quick = os.path.join(w.path, "quick")
        open(quick, "w").close()
        host = w.node("host", ep, "2", [LIGHT_WORKER, "--stop-file", quick], conf=FAST)
        host.wait_event("started", 30, "the host is up")
        other = w.node("other", ep, "2", [LIGHT_WORKER, "--stop-file", w.stop_file()], conf=FAST)
        other.wait_event("rendezvous_complete", 60, "round 0")
        time.sleep(1.5)
        check(host.proc.poll() is None, "the host must wait for the other node, its workers done or not")
        open(w.stop_file(), "w").close()
        check(other.wait_exit(60, "the other node to finish") == 0, other.stderr()[-2000:])
        check(host.wait_exit(30, "the host to close after everyone finished") == 0, host.stderr()[-2000:])
        check("every node finished" in host.stderr(), host.stderr()[-2000:])


def test_host_past_its_exit_barrier_tells_the_others_why_its_store_goes():
    ep = endpoint()
    with Workdir() as w:
        quick = os.path.join(w.path, "quick")
        open(quick, "w").close()
        conf = "last_call_timeout=1,heartbeat_timeout=2,join_timeout=60,exit_barrier_timeout=2"
        host = w.node("host", ep, "2", [LIGHT_WORKER, "--stop-file", quick], conf=conf)
        host.wait_event("started", 30, "the host is up")
        other = w.node("other", ep, "2", [LIGHT_WORKER, "--stop-file", w.stop_file()], conf=conf)
        check(host.wait_exit(30, "the host to close after its exit barrier") == 0, host.stderr()[-2000:])
        check(other.wait_exit(15, "the other node to learn why") == 1, other.stderr()[-2000:])
        check("closed its store after waiting exit_barrier_timeout (2 s)" in other.stderr(), other.stderr()[-2000:])


def test_wrong_endpoint_is_a_clear_error_within_the_join_timeout():
    ep = endpoint()
    with Workdir() as w:
        n = w.node("lost", ep, "2", [LIGHT_WORKER], conf="join_timeout=2,is_host=false")
        rc = n.wait_exit(30, "a clear error, not a hang")
        took = time.monotonic() - n.started
        check(rc == 1, f"exit {rc}")
        err = n.stderr()
        check(f"cannot reach the rendezvous store at {ep}" in err and "--rdzv-endpoint" in err, err[-2000:])
        print(f"    failed after {took:.1f}s (join timeout 2s)")


@restarts  # a membership change restarts the ranks of every node left
def test_a_stopped_node_leaves_and_the_others_go_on_at_once():
    ep = endpoint()
    with Workdir() as w:
        args = [LIGHT_WORKER, "--stop-file", w.stop_file()]
        # A long heartbeat timeout: going on without the node must not wait for it.
        conf = "last_call_timeout=1,heartbeat_timeout=60,join_timeout=60,exit_barrier_timeout=60"
        a = w.node("a", ep, "2:3", args, conf=conf)
        a.wait_event("started", 30, "a is up: it hosts the rendezvous")
        b, c = (w.node(x, ep, "2:3", args, conf=conf) for x in ("b", "c"))
        for n in (a, b, c):
            n.wait_event("rendezvous_complete", 60, "round 0 with three nodes", round=0, nodes=3)
        c.kill(signal.SIGTERM)
        check(c.wait_exit(30, "SIGTERM stops c") == 128 + signal.SIGTERM, c.stderr()[-2000:])
        for n in (a, b):
            e = n.wait_event("rendezvous_complete", 20, "round 1 without c, well before the heartbeat timeout",
                             round=1)
            check(e["nodes"] == 2, f"{n.name}: {e}")
        open(w.stop_file(), "w").close()
        for n in (a, b):
            check(n.wait_exit(60, "the job to finish") == 0, f"{n.name}: {n.stderr()[-2000:]}")


def test_stopping_the_host_ends_the_job_everywhere_at_once():
    ep = endpoint()
    with Workdir() as w:
        args = [LIGHT_WORKER, "--stop-file", w.stop_file()]
        conf = "last_call_timeout=1,heartbeat_timeout=60,join_timeout=60,exit_barrier_timeout=60"
        a = w.node("a", ep, "2:3", args, conf=conf)
        a.wait_event("started", 30, "a is up: it hosts the rendezvous")
        b, c = (w.node(x, ep, "2:3", args, conf=conf) for x in ("b", "c"))
        for n in (a, b, c):
            n.wait_event("rendezvous_complete", 60, "round 0 with three nodes", round=0, nodes=3)
        a.proc.send_signal(signal.SIGINT)
        check(a.wait_exit(30, "SIGINT stops the host") == 128 + signal.SIGINT, a.stderr()[-2000:])
        for n in (b, c):
            check(n.wait_exit(20, "the others learn at once, not after a join timeout") == 1, n.stderr()[-2000:])
            check("the rendezvous host a left" in n.stderr(), n.stderr()[-2000:])


def test_killed_store_host_ends_the_job_on_every_node_within_the_heartbeat_timeout():
    ep = endpoint()
    with Workdir() as w:
        args = [LIGHT_WORKER, "--stop-file", w.stop_file(), "--seconds", "300"]
        # A long join timeout: before, the others waited it out (600 s by default) before failing.
        conf = "last_call_timeout=1,heartbeat_timeout=2,join_timeout=300,exit_barrier_timeout=60"
        a = w.node("a", ep, "2:3", args, conf=conf, nproc=2)
        a.wait_event("started", 30, "a is up: it hosts the rendezvous store")
        b, c = (w.node(x, ep, "2:3", args, conf=conf, nproc=2) for x in ("b", "c"))
        ranks = {n.name: n.wait_event("rendezvous_complete", 60, "round 0 with three nodes", round=0,
                                      nodes=3)["node_rank"] for n in (a, b, c)}
        for n in (a, b, c):
            n.wait_event("rank_started", 30, "its second worker", local_rank=1)
        pids = [e["pid"] for n in (a, b, c) for e in n.events() if e.get("event") == "rank_started"]
        check(len(pids) == 6, f"six workers: {pids}")
        a.kill(signal.SIGKILL)
        killed = time.monotonic()
        for n in (b, c):
            rc = n.wait_exit(2 + 10, "a clear error within the heartbeat timeout (2 s) + a few seconds")
            took = time.monotonic() - killed
            err = n.stderr()
            check(rc == 1, f"{n.name}: exit {rc}: {err[-2000:]}")
            check(f"the rendezvous store at {ep} is gone" in err, f"{n.name}: {err[-2000:]}")
            check(f"node {ranks['a']} (host a, pid {a.proc.pid})" in err, f"{n.name} names the store host: {err[-2000:]}")
            check("Restart the job on every node" in err, f"{n.name}: {err[-2000:]}")
            closed = n.wait_event("rendezvous_closed", 1, "the reason in the event stream")
            check("is gone" in closed["reason"], f"{closed}")
            print(f"    {n.name} exited {took:.1f}s after the store host was killed (heartbeat timeout 2s)")
        left = wait_dead(pids, 10)
        check(not left, f"workers left running: {left}")


def rdzv_connection_ports(pid, port):
    """Local ports of `pid`'s established connections to the rendezvous store on `port`."""
    import subprocess
    out = subprocess.run(["ss", "-tnpH", "state", "established", "dport", "=", f":{port}"], capture_output=True,
                         text=True, timeout=30).stdout
    return [line.split()[2].rsplit(":", 1)[1] for line in out.splitlines() if f"pid={pid}," in line]


def test_a_connection_reset_and_reopened_within_the_grace_is_not_a_death():
    import shutil
    import subprocess
    if os.geteuid() != 0 or not shutil.which("ss"):
        print("    skipped: resetting a connection (ss -K) needs root and iproute2's ss")
        return
    ep = endpoint()
    port = ep.rsplit(":", 1)[1]
    with Workdir() as w:
        args = [LIGHT_WORKER, "--stop-file", w.stop_file()]
        a = w.node("a", ep, "2:3", args, conf=FAST)
        a.wait_event("started", 30, "a is up: it hosts the rendezvous store")
        b = w.node("b", ep, "2:3", args, conf=FAST)
        for n in (a, b):
            n.wait_event("rendezvous_complete", 60, "round 0 with two nodes", round=0, nodes=2)
        ports = rdzv_connection_ports(b.proc.pid, port)
        check(len(ports) == 1, f"b has one connection to the rendezvous store: {ports}")
        # Reset b's connection (the kernel sends an RST both ways): the host suspects b at once; b's
        # next store call fails, it reconnects and names itself within the 1 s grace.
        r = subprocess.run(["ss", "-K", "-tn", "state", "established", "sport", "=", f":{ports[0]}", "dport", "=",
                            f":{port}"], capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, f"ss -K: {r.stderr}")
        deadline = time.monotonic() + 10
        while "store connection of node b:" not in a.stderr():
            check(time.monotonic() < deadline, f"the host saw b's connection close: {a.stderr()[-2000:]}")
            time.sleep(0.05)
        b_err = ""
        while "reachable again" not in b_err:
            check(time.monotonic() < deadline, f"b reconnected: {b_err[-2000:]}")
            time.sleep(0.05)
            b_err = b.stderr()
        time.sleep(3)  # past the grace (1 s) and the heartbeat timeout (2 s): nothing may happen
        for n in (a, b):
            names = [e.get("event") for e in n.events()]
            check("node_lost" not in names and "round_ended" not in names, f"{n.name}: {names}\n{n.stderr()[-2000:]}")
        check(rdzv_connection_ports(b.proc.pid, port) not in ([], ports), "b is on a new connection")
        open(w.stop_file(), "w").close()
        for n in (a, b):
            check(n.wait_exit(60, "the job to finish") == 0, f"{n.name}: {n.stderr()[-2000:]}")


def test_store_lost_timeout_is_the_window():
    ep = endpoint()
    with Workdir() as w:
        args = [LIGHT_WORKER, "--stop-file", w.stop_file(), "--seconds", "300"]
        conf = "last_call_timeout=1,heartbeat_timeout=2,join_timeout=300,exit_barrier_timeout=60"
        a = w.node("a", ep, "2", args, conf=conf)
        a.wait_event("started", 30, "a is up: it hosts the rendezvous store")
        b = w.node("b", ep, "2", args, conf=conf + ",store_lost_timeout=6")
        b.wait_event("rendezvous_complete", 60, "round 0", round=0)
        a.kill(signal.SIGKILL)
        killed = time.monotonic()
        # Past the heartbeat timeout b stops its workers (the host would count it dead) and keeps trying.
        b.wait_event("round_ended", 10, "b stops its workers after the heartbeat timeout", round=0)
        check(b.wait_exit(6 + 10, "the error after the 6 s window") == 1, b.stderr()[-2000:])
        took = time.monotonic() - killed
        check(took >= 4.5, f"b gave up after {took:.1f}s, well before its 6 s window")
        check("is gone: no answer for 6." in b.stderr(), b.stderr()[-2000:])
        print(f"    b exited {took:.1f}s after the kill (store_lost_timeout 6s)")


def test_bad_flags_are_usage_errors():
    import subprocess
    from harness import DDP_LAUNCH
    ep = ["--rdzv-endpoint", "127.0.0.1:1"]
    for extra, needle in (([*ep, "--nnodes", "3:2"], "MIN is larger than MAX"),
                          ([*ep, "--rdzv-conf", "join_timeot=3"], "unknown key 'join_timeot'"),
                          ([*ep, "--rdzv-conf", "join_timeout=-1"], "positive number of seconds"),
                          (["--rdzv-endpoint", "127.0.0.1:99999"], "is not a port number"),
                          ([], "needs --rdzv-endpoint")):
        args = [DDP_LAUNCH, "run", "--rdzv-backend", "c10d", *extra, "x.py"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and needle in r.stderr, f"{extra}: exit {r.returncode}, {r.stderr}")


TESTS = [
    test_bad_flags_are_usage_errors,
    test_wrong_endpoint_is_a_clear_error_within_the_join_timeout,
    test_host_keeps_the_store_until_every_node_finished,
    test_a_failed_rank_restarts_every_node_within_budget,
    test_budget_spent_ends_the_job_on_every_node_naming_the_node,
    test_dead_node_survivors_go_on_smaller_and_it_comes_back,
    test_a_stopped_node_leaves_and_the_others_go_on_at_once,
    test_stopping_the_host_ends_the_job_everywhere_at_once,
    test_a_connection_reset_and_reopened_within_the_grace_is_not_a_death,
    test_killed_store_host_ends_the_job_on_every_node_within_the_heartbeat_timeout,
    test_store_lost_timeout_is_the_window,
    test_host_past_its_exit_barrier_tells_the_others_why_its_store_goes,
    test_three_nodes_of_different_sizes_train_with_gloo,
]
# Names on the command line run only those tests.
run_tests([t for t in TESTS if len(sys.argv) < 2 or t.__name__ in sys.argv[1:]])
