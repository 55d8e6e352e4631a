"""Worker for the torchrun CLI cases: every variable torchrun gives a worker must be there (a missing
one is a KeyError, so a non-zero exit); then it creates DIR/<RANK>, or with --fail raises."""
import argparse
import os
import pathlib

EXPECTED = ("LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE", "WORLD_SIZE",
            "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
            "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS", "TORCHELASTIC_ERROR_FILE",
            "TEST_SENTINEL_PARENT")

parser = argparse.ArgumentParser()
parser.add_argument("--fail", action="store_true")
parser.add_argument("--touch_file_dir")
args = parser.parse_args()
for name in EXPECTED:
    print(f"{name}={os.environ[name]}")
if args.fail:
    raise RuntimeError("--fail given: this rank fails on purpose")
pathlib.Path(args.touch_file_dir, os.environ["RANK"]).touch()
