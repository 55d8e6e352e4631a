"""A light worker for the dynamic-rendezvous tests (no torch): prints its place in the job, then
runs until --stop-file exists (exit 0), or fails on request."""
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--stop-file", help="exit 0 once this file exists")
ap.add_argument("--fail-round", type=int, default=-1, help="local rank 0 exits 3 in this round")
ap.add_argument("--seconds", type=float, default=120, help="give up (exit 4) after this long")
args = ap.parse_args()
e = os.environ
rnd = int(e["TORCHELASTIC_RESTART_COUNT"])
print(f"world {e['WORLD_SIZE']} rank {e['RANK']} node {e['GROUP_RANK']} of {e['GROUP_WORLD_SIZE']} "
      f"round {rnd} store {e['MASTER_ADDR']}:{e['MASTER_PORT']}", flush=True)
if rnd == args.fail_round and e["LOCAL_RANK"] == "0":
    print("failing on purpose", file=sys.stderr, flush=True)
    sys.exit(3)
deadline = time.monotonic() + args.seconds
while time.monotonic() < deadline:
    if args.stop_file and os.path.exists(args.stop_file):
        sys.exit(0)
    time.sleep(0.05)
sys.exit(4)
