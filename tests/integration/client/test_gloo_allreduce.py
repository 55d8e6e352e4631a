"""gloo-allreduce: C++ ranks meet through `ddp-launch store` (via GlooStore over StoreClient) and
agree on the right sum; a rank whose peer never comes fails in time, naming the key it waited for."""
import os
import subprocess
import time

from client_common import GLOO_ALLREDUCE
from harness import StoreProcess, TestFailure, check, run_tests

ELEMENTS = 1024


def finish(procs, timeout):
    """Waits for every process; returns [(rc, stdout, stderr)]."""
    deadline = time.monotonic() + timeout
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise TestFailure(f"gloo-allreduce ranks still running after {timeout}s") from None
        results.append((p.returncode, out, err))
    return results


def expect_right_sums(results, world_size):
    last = ELEMENTS * world_size * (world_size + 1) // 2
    for rank, (rc, out, err) in enumerate(results):
        want = f"allreduce ok rank={rank} world_size={world_size} elements={ELEMENTS} last={last}"
        check(rc == 0 and want in out, f"rank {rank}: rc={rc}, wanted {want!r}\nstdout: {out}\nstderr: {err}")


def test_two_ranks_meet_through_our_store():
    with StoreProcess() as store:
        # Rank 0 takes torchrun's environment contract, rank 1 the equivalent flags.
        env = dict(os.environ, RANK="0", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port))
        rank0 = subprocess.Popen([GLOO_ALLREDUCE, "--elements", str(ELEMENTS)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rank1 = subprocess.Popen([GLOO_ALLREDUCE, "--rank", "1", "--world-size", "2", "--master-addr", "127.0.0.1",
                                  "--master-port", str(store.port), "--elements", str(ELEMENTS)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        expect_right_sums(finish([rank0, rank1], 120), 2)


def test_two_ranks_in_dialect_a():
    with StoreProcess() as store:
        procs = [subprocess.Popen([GLOO_ALLREDUCE, "--rank", str(r), "--world-size", "2", "--master-port",
                                   str(store.port), "--dialect", "a", "--elements", str(ELEMENTS)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
        expect_right_sums(finish(procs, 120), 2)


def test_lone_rank_times_out_naming_the_missing_key():
    with StoreProcess() as store:
        start = time.monotonic()
        p = subprocess.Popen([GLOO_ALLREDUCE, "--rank", "0", "--world-size", "2", "--master-port", str(store.port),
                              "--timeout", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        [(rc, out, err)] = finish([p], 60)
        took = time.monotonic() - start
        check(rc == 1, f"a rank without its peer exited {rc}\nstdout: {out}\nstderr: {err}")
        check("gloo-allreduce/1" in err and f"127.0.0.1:{store.port}" in err and "timed out" in err,
              f"error does not name the missing key and the store: {err}")
        check(took < 2 + 15, f"took {took:.1f}s to give up on a 2 s timeout")


run_tests([
    test_two_ranks_meet_through_our_store,
    test_two_ranks_in_dialect_a,
    test_lone_rank_times_out_naming_the_missing_key,
])
