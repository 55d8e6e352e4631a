"""`ddp-launch env`: two real torch 1.13 ranks meet through init_method="env://" against a standalone
`ddp-launch store`, each with an environment made of nothing but the exports `ddp-launch env`
printed (env -i; the shell evals them, as the docs say). Without the two torch-internal variables,
rank 0 tries to host the store itself and fails on the port the running store holds: that is why
they are printed."""
import os
import subprocess

from harness import DDP_LAUNCH, PYTHON, StoreProcess, check, run_tests

INIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchrun_cli", "init_method_check.py")


def rank_command(port, rank, unset=""):
    script = (f'eval "$({DDP_LAUNCH} env --store 127.0.0.1:{port} --rank {rank} --world-size 2)"; {unset} '
              f'exec {PYTHON} {INIT} --init_method env://')
    return ["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c", script]


def test_two_ranks_meet_with_only_the_printed_exports():
    with StoreProcess() as store:
        ranks = [subprocess.Popen(rank_command(store.port, r), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for r in (0, 1)]
        outs = []
        try:
            for p in ranks:
                outs.append(p.communicate(timeout=120))
        finally:
            for p in ranks:
                if p.poll() is None:
                    p.kill()
        for r, (p, (out, err)) in enumerate(zip(ranks, outs)):
            check(p.returncode == 0 and "Done" in out, f"rank {r}: rc={p.returncode}\n{out}\n{err[-2000:]}")


def test_without_the_torch_internal_variables_rank_0_cannot_use_the_running_store():
    with StoreProcess() as store:
        r = subprocess.run(rank_command(store.port, 0, "unset TORCHELASTIC_USE_AGENT_STORE TORCHELASTIC_RESTART_COUNT;"),
                           capture_output=True, text=True, timeout=120)
        check(r.returncode != 0 and "Address already in use" in r.stderr,
              f"rank 0 with torch's four variables only: rc={r.returncode}\n{r.stderr[-2000:]}")


def test_exports_and_errors():
    r = subprocess.run([DDP_LAUNCH, "env", "--store", "10.1.2.3:29500", "--rank", "3", "--world-size", "8",
                        "--local-rank", "1", "--local-world-size", "4"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"rc={r.returncode} {r.stderr}")
    for line in ("export MASTER_ADDR=10.1.2.3", "export MASTER_PORT=29500", "export WORLD_SIZE=8", "export RANK=3",
                 "export LOCAL_RANK=1", "export LOCAL_WORLD_SIZE=4", "export TORCHELASTIC_USE_AGENT_STORE=True",
                 "export TORCHELASTIC_RESTART_COUNT=0"):
        check(line in r.stdout, f"{line!r} missing from:\n{r.stdout}")
    r = subprocess.run([DDP_LAUNCH, "env", "--store", "127.0.0.1:29500", "--rank", "2", "--world-size", "2"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "--rank 2 is outside 0..1" in r.stderr, f"rc={r.returncode} {r.stderr}")
    check(r.stdout == "", f"exports printed despite the error: {r.stdout}")


if __name__ == "__main__":
    run_tests([test_two_ranks_meet_with_only_the_printed_exports,
               test_without_the_torch_internal_variables_rank_0_cannot_use_the_running_store, test_exports_and_errors])
