#!/usr/bin/python3
"""torch 1.13's torchrun, made to run on Python 3.11, for side-by-side comparisons with ddp-launch.

On Python 3.11, iterating an IntFlag no longer yields its zero member, so torch 1.13's
Std.from_str("0") returns None and torchrun fails in to_map() with the default --redirects/--tee.
This maps None to Std.NONE and then runs torchrun unchanged:

    /usr/bin/python3 bench/torchrun_shim.py --nproc_per_node 2 train.py
"""
import sys

import torch.distributed.elastic.multiprocessing as elastic_mp
import torch.distributed.elastic.multiprocessing.api as elastic_mp_api
from torch.distributed.elastic.multiprocessing.api import Std

_to_map_unpatched = elastic_mp_api.to_map


def _to_map(val_or_map, local_world_size):
    if not isinstance(val_or_map, (dict, Std)):
        val_or_map = Std.NONE
    return _to_map_unpatched(val_or_map, local_world_size)


elastic_mp_api.to_map = _to_map
elastic_mp.to_map = _to_map  # start_processes() holds its own reference

from torch.distributed.run import main  # noqa: E402  (after the patch)

sys.exit(main())
