"""A worker (no torch) for the memory-limit test: --hog-rank allocates --megabytes in 8 MiB chunks,
touching every page; the other ranks wait to be stopped."""
import argparse
import os
import time

ap = argparse.ArgumentParser()
ap.add_argument("--hog-rank", type=int, default=-1)
ap.add_argument("--megabytes", type=int, default=512)
args = ap.parse_args()

rank = int(os.environ["RANK"])
print(f"rank {rank} pid {os.getpid()}", flush=True)
if rank == args.hog_rank:
    chunks = []
    for i in range(args.megabytes // 8):
        chunks.append(b"x" * (8 << 20))
    print(f"rank {rank} allocated {args.megabytes} MiB without being stopped", flush=True)
time.sleep(60)
