"""Worker for the torchrun CLI cases: writes torch.distributed.is_torchelastic_launched() to --out_file."""
import argparse

import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--out_file", required=True)
args = parser.parse_args()
with open(args.out_file, "w") as f:
    f.write(str(dist.is_torchelastic_launched()))
