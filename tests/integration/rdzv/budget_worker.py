"""A worker for the job-wide restart budget tests (no torch). Local rank 0 of this node fails (exit 3)
in the rounds --fail-on picks (even, odd, all, none: TORCHELASTIC_RESTART_COUNT, the same round on
every node); otherwise it waits until its round ends (the supervisor's SIGTERM). With --checkpoint
FILE it first writes round+1 into FILE while the round is below --advance-until (the checkpoint
advances). --fail-after FILE: fail only once FILE (another node's checkpoint) holds at least
min(round+1, --advance-until), so that node's progress is in before this failure ends the round."""
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--fail-on", choices=["even", "odd", "all", "none"], required=True)
ap.add_argument("--fail-after", help="another node's checkpoint file to wait for before failing")
ap.add_argument("--checkpoint", help="the --checkpoint-file this node's supervisor reads")
ap.add_argument("--advance-until", type=int, default=0, help="write round+1 to --checkpoint in rounds below this")
ap.add_argument("--seconds", type=float, default=60, help="give up (exit 4) after this long")
args = ap.parse_args()
rnd = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
print(f"round {rnd} node {os.environ['GROUP_RANK']}", flush=True)
if os.environ["LOCAL_RANK"] != "0":
    time.sleep(args.seconds)
    sys.exit(4)
if args.checkpoint and rnd < args.advance_until:
    with open(args.checkpoint + ".tmp", "w") as f:
        f.write(f"{rnd + 1}\n")
    os.replace(args.checkpoint + ".tmp", args.checkpoint)
if args.fail_on == "all" or (args.fail_on != "none" and (rnd % 2 == 0) == (args.fail_on == "even")):
    deadline = time.monotonic() + args.seconds
    while args.fail_after and time.monotonic() < deadline:
        try:
            with open(args.fail_after) as f:
                if int(f.read()) >= min(rnd + 1, args.advance_until):
                    break
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    print(f"failing on purpose in round {rnd}", file=sys.stderr, flush=True)
    sys.exit(3)
time.sleep(args.seconds)  # the round ends when the other node fails: SIGTERM
sys.exit(4)
