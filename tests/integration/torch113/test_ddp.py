"""Real DDP through our store: 2 and 4 torch 1.13 worker processes (gloo, CPU) rendezvous with
init_process_group("gloo", init_method="env://") at `ddp-launch store` as the agent store,
all_reduce, and train a few DDP steps. All ranks must agree on the final parameters, and those must
match one process doing the same training."""
import json
import os

from harness import StoreProcess, check, run_tests
from procs import Child
from raw_store import RawConnection, check_request

# Workers wait for "go" after importing torch, so the rendezvous clock starts only once every rank
# is ready; an import alone has taken 30 s on a loaded 2-core machine.
IMPORT_TIMEOUT_S = 180
RUN_TIMEOUT_S = 60  # init (30 s timeout inside the worker) + all_reduce + training, per rank
MAX_DEVIATION = 1e-5
ATTEMPT_PREFIX = b"//worker/attempt_0/default_pg"  # 1.13's agent-store keys (spec §7.2)


class Group:
    """One DDP job: our store plus `world` worker processes, started together so torch imports of
    both jobs overlap."""

    def __init__(self, world):
        self.world = world
        self.store = StoreProcess()
        self.workers = [Child("ddp_worker.py", env=self.worker_env(rank)) for rank in range(world)]

    def worker_env(self, rank):
        env = dict(os.environ)
        env.update({
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(self.world),
            "LOCAL_WORLD_SIZE": str(self.world),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(self.store.port),
            "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "0",
            "GLOO_SOCKET_IFNAME": "lo",  # the host name may not resolve to a usable address here
            "OMP_NUM_THREADS": "1",
        })
        return env

    def run(self):
        try:
            for w in self.workers:
                w.read_line(IMPORT_TIMEOUT_S, "'imported' (torch import)")
            for w in self.workers:
                w.send("go")
            results = [json.loads(w.read_prefixed("result=", RUN_TIMEOUT_S, "result= line")) for w in self.workers]
            for rank, w in enumerate(self.workers):
                rc = w.wait(RUN_TIMEOUT_S, "after printing its result")
                check(rc == 0, f"rank {rank} exited {rc}; stderr:\n{w.stderr_tail()}")
            return results, self.store_evidence()
        finally:
            for w in self.workers:
                w.stop()
            self.store.stop()

    def store_evidence(self):
        """What the job left in our store: proof the ranks met there and not somewhere else."""
        with RawConnection("127.0.0.1", self.store.port) as raw:
            return {
                "init": raw.add(b"init/", 0),
                "barrier": raw.add(ATTEMPT_PREFIX + b"/store_based_barrier_key:1", 0),
                "rank_keys": raw.request(check_request(
                    [ATTEMPT_PREFIX + f"/0/0/{r}".encode() for r in range(self.world)]), 1),
            }


def run_group(world):
    results, evidence = groups[world].run()
    print(f"  {world} ranks: " + "; ".join(
        f"rank {r['rank']} allreduce={r['allreduce']:g} checksum={r['checksum'][:16]} "
        f"deviation={r['deviation']:.2e}" for r in results), flush=True)
    check(sorted(r["rank"] for r in results) == list(range(world)), f"ranks reported: {[r['rank'] for r in results]}")
    expected_sum = world * (world + 1) / 2
    for r in results:
        check(r["allreduce"] == expected_sum,
              f"rank {r['rank']} all_reduce gave {r['allreduce']}, expected {expected_sum}")
        check(r["deviation"] <= MAX_DEVIATION,
              f"rank {r['rank']} parameters deviate {r['deviation']} from a single-process run")
        check(r["moved"] > 1e-3, f"rank {r['rank']} parameters barely changed ({r['moved']}): no training happened")
    checksums = {r["checksum"] for r in results}
    check(len(checksums) == 1, f"ranks disagree on their final parameters: {checksums}")
    check(evidence["init"] == world, f"init/ counter in our store is {evidence['init']}, expected {world}")
    check(evidence["barrier"] == world, f"store-based barrier count in our store is {evidence['barrier']}")
    check(evidence["rank_keys"] == "00", f"the ranks' gloo address keys are not all in our store: {evidence}")


def test_ddp_2_ranks_through_our_store():
    run_group(2)


def test_ddp_4_ranks_through_our_store():
    run_group(4)


groups = {2: Group(2), 4: Group(4)}  # started together: both jobs' torch imports overlap
run_tests([test_ddp_2_ranks_through_our_store, test_ddp_4_ranks_through_our_store])
