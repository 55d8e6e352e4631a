"""Demo: `ddp-launch store` hosts the rendezvous; N torch processes (gloo, CPU) meet through it
and all_reduce. Later the supervisor (`ddp-launch run`) does the spawning itself."""
import argparse
import os
import subprocess
import sys
import time

WORKER = r"""
import datetime, os, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
print(f"rank {rank}/{world}: all_reduce(sum of 1..{world}) = {t.item():g}", flush=True)
dist.destroy_process_group()
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddp-launch", default="build/bin/ddp-launch")
    ap.add_argument("--ranks", type=int, default=2)
    args = ap.parse_args()

    store = subprocess.Popen([args.ddp_launch, "store", "--port", "0"], stdout=subprocess.PIPE, text=True)
    line = store.stdout.readline().strip()
    if not line.startswith("port="):
        sys.exit(f"demo: the store did not start (got {line!r})")
    port = line.split("=", 1)[1]
    print(f"demo: ddp-launch store listening on 127.0.0.1:{port}", flush=True)
    start = time.monotonic()
    workers = []
    for rank in range(args.ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank),
                   WORLD_SIZE=str(args.ranks), TORCHELASTIC_USE_AGENT_STORE="True",
                   TORCHELASTIC_RESTART_COUNT="0")
        workers.append(subprocess.Popen([sys.executable, "-c", WORKER], env=env))
    codes = []
    for w in workers:
        try:
            codes.append(w.wait(timeout=120))
        except subprocess.TimeoutExpired:
            w.kill()
            codes.append("timeout")
    store.terminate()
    store.wait(timeout=10)
    expected = args.ranks * (args.ranks + 1) // 2
    ok = all(c == 0 for c in codes)
    print(f"demo: {args.ranks} ranks, exit codes {codes}, expected sum {expected}, "
          f"{time.monotonic() - start:.1f}s -> {'OK' if ok else 'FAILED'}", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
