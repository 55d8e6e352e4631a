"""Env-contract parity with torchrun: the same 2-rank worker under torch 1.13's torchrun and under
`ddp-launch run`, each rank dumping its environment; compared key by key.

Run-specific values (the store port, the error-file directory) are compared by shape only. Every
variable name torchrun adds to the worker's environment must be one that ddp-launch adds too."""
import json
import os
import re
import subprocess
import tempfile

from harness import DDP_LAUNCH, PYTHON, check, free_port, run_tests, restarts

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("DDP_SOURCE_DIR", os.path.normpath(os.path.join(HERE, "..", "..", "..")))
SHIM = os.path.join(SOURCE_DIR, "bench", "torchrun_shim.py")  # torch 1.13's torchrun on Python 3.11
WORKER = os.path.join(HERE, "allreduce_worker.py")
RUN_ID = "parity7"

# Same value under both launchers.
SAME_VALUE = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
              "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "TORCHELASTIC_RESTART_COUNT",
              "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
              "NCCL_ASYNC_ERROR_HANDLING", "OMP_NUM_THREADS"]
# Run-specific: present in both, checked by shape.
SAME_SHAPE = {
    "MASTER_PORT": lambda v, rank, attempt: re.fullmatch(r"[1-9][0-9]*", v) and int(v) < 65536,
    "TORCHELASTIC_ERROR_FILE": lambda v, rank, attempt: v.endswith(f"/attempt_{attempt}/{rank}/error.json"),
}


def parent_env(**overrides):
    """The launchers' own environment: ours, minus everything either launcher sets or reads."""
    env = {k: v for k, v in os.environ.items()
           if k not in SAME_VALUE and k not in SAME_SHAPE and not k.startswith(("PET_", "TORCHELASTIC_"))
           and k not in ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "LOGLEVEL", "PYTHON_EXEC")}
    env.update(overrides)
    return env


def dump_envs(cmd, env, out_dir):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"{cmd[:3]} exited {r.returncode}\nstdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-3000:]}")
    envs = []
    for rank in (0, 1):
        with open(os.path.join(out_dir, f"rank{rank}.json")) as f:
            envs.append(json.load(f))
    return envs


def run_both(parent, flags=(), worker_args=()):
    with tempfile.TemporaryDirectory() as trun_dir, tempfile.TemporaryDirectory() as ours_dir:
        trun = dump_envs([PYTHON, SHIM, "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                          str(free_port()), "--rdzv_id", RUN_ID, "--monitor_interval", "0.1", *flags,
                          WORKER, "--dump-env", trun_dir, *worker_args], parent, trun_dir)
        ours = dump_envs([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--rdzv-id", RUN_ID,
                          *flags, WORKER, "--dump-env", ours_dir, *worker_args], parent, ours_dir)
    return trun, ours


def compare(parent, trun, ours, attempt):
    problems = []
    for rank in (0, 1):
        t, o = trun[rank], ours[rank]
        added_t = {k for k in t if k not in parent or parent[k] != t[k]}
        added_o = {k for k in o if k not in parent or parent[k] != o[k]}
        for name in sorted(added_t - added_o):
            problems.append(f"rank {rank}: torchrun sets {name}={t[name]!r}, ddp-launch does not "
                            f"(ours should set it in launcher/workers/worker_env.cpp make_worker_launch)")
        for name in SAME_VALUE:
            if t.get(name) != o.get(name):
                problems.append(f"rank {rank}: {name}: torchrun {t.get(name)!r}, ddp-launch {o.get(name)!r}")
        for name, ok in SAME_SHAPE.items():
            for who, e in (("torchrun", t), ("ddp-launch", o)):
                if name not in e or not ok(e[name], rank, attempt):
                    problems.append(f"rank {rank}: {who} {name}={e.get(name)!r} has not the expected shape")
        extra = sorted(added_o - added_t)
        if rank == 0 and extra:
            print(f"     names only ddp-launch adds: {', '.join(extra)}", flush=True)
    check(not problems, "environment differs from torchrun's:\n  " + "\n  ".join(problems))


def test_defaults_match_torchrun():
    parent = parent_env()
    trun, ours = run_both(parent)
    compare(parent, trun, ours, attempt=0)
    check(ours[0]["OMP_NUM_THREADS"] == "1" and ours[0]["TORCHELASTIC_USE_AGENT_STORE"] == "True",
          "the defaults under test were not exercised")


@restarts
def test_user_values_and_restarted_attempt_match_torchrun():
    # The user's own OMP_NUM_THREADS and NCCL_ASYNC_ERROR_HANDLING pass through unchanged; rank 1 fails
    # on attempt 0, so the environment compared is the restarted attempt's.
    parent = parent_env(OMP_NUM_THREADS="3", NCCL_ASYNC_ERROR_HANDLING="0")
    trun, ours = run_both(parent, ["--max_restarts", "1"], ["--fail-rank", "1"])
    compare(parent, trun, ours, attempt=1)
    check(ours[1]["TORCHELASTIC_RESTART_COUNT"] == "1", "the restarted attempt was not the one compared")


run_tests([
    test_defaults_match_torchrun,
    test_user_values_and_restarted_attempt_match_torchrun,
])
