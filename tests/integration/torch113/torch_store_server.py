"""Hosts torch 1.13's own TCPStore server (the reference the differential test compares us with).

Prints port=<n> once listening, then serves until its stdin closes. Run with /usr/bin/python3.
"""
import datetime
import sys

import torch.distributed as dist

host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
store = dist.TCPStore(host, 0, None, True, datetime.timedelta(seconds=60))
print(f"port={store.port}", flush=True)
sys.stdin.read()
