"""Two torch 2.x ranks (in a Debian chroot) form a gloo process group through `ddp-launch store`
as the agent store (env://, TORCHELASTIC_USE_AGENT_STORE=True, TORCHELASTIC_RESTART_COUNT=0) and
all_reduce; then the keys the attempt leaves behind show why each attempt needs a fresh store.

usage: test_gloo_group.py torch-2.6|torch-2.14
"""
import sys

from chroot import HERE, finish, require_root, result_line, start_in_root
from harness import StoreProcess, TestFailure, check, run_tests

ROOT = sys.argv[1]
WORLD = 2
_results = None


def results():
    global _results
    if _results is None:
        require_root(ROOT)
        with StoreProcess() as store:
            procs = []
            for rank in range(WORLD):
                env = {
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(store.port),
                    "WORLD_SIZE": str(WORLD), "RANK": str(rank), "LOCAL_RANK": str(rank),
                    "LOCAL_WORLD_SIZE": str(WORLD), "GROUP_RANK": "0",
                    "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "0",
                    "PYTHONPATH": "/opt/ddp-shims/nolibuv", "OMP_NUM_THREADS": "1",
                }
                procs.append(start_in_root(ROOT, "python3", f"{HERE}/gloo_rank.py", env=env))
            _results = []
            for rank, proc in enumerate(procs):
                rc, out, err = finish(proc, f"rank {rank} in {ROOT}")
                if rc != 0:
                    for p in procs:
                        p.kill()
                    raise TestFailure(f"rank {rank} in {ROOT} exited {rc}; stderr tail: {err[-2000:]}")
                _results.append(result_line(out, err, f"rank {rank} in {ROOT}"))
        print(f"# {ROOT}: torch {_results[0]['torch_version']}", flush=True)
    return _results


def test_all_reduce_agrees_through_our_store():
    sums = [r["sum"] for r in results()]
    check(sums == [3.0] * WORLD, f"all_reduce of rank+1 over {WORLD} ranks gave {sums}, expected 3.0 each")


def test_keys_left_by_the_attempt_have_no_attempt_prefix():
    # torch 1.13 put its keys under /worker/attempt_<n>/; 2.x writes plain keys and expects a fresh
    # store per attempt. A restarted group meeting this store finds init/ already at 2 and the dead
    # ranks' gloo addresses under the very keys it waits for: tried by hand with 2.6, the rank that
    # started first read its peer's stale address and failed in gloo connectFullMesh, and its peer
    # then hung until its timeout. So the supervisor must reset the store between attempts.
    r0 = results()[0]
    check(r0["rank_keys_present"], "the ranks' gloo address keys are not in the store after the group formed")
    check(not r0["attempt_prefixed_keys_present"], "2.x unexpectedly used a /worker/attempt_0 prefix")
    check(r0["num_keys"] == WORLD + 1, f"expected {WORLD} rank keys + init/, the store holds {r0['num_keys']} keys")
    if "list_keys" in r0:
        expected = [f"default_pg/0//cpu//0/{r}" for r in range(WORLD)]
        check(r0["list_keys"] == expected, f"list_keys {r0['list_keys']}, expected {expected}")


run_tests([
    test_all_reduce_agrees_through_our_store,
    test_keys_left_by_the_attempt_have_no_attempt_prefix,
])
