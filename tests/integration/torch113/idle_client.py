"""A torch 1.13 TCPStore client that connects, then idles until told to use the store.

Run with /usr/bin/python3 idle_client.py HOST PORT. Prints "connected" once constructed (it then has
its main and its callback connection open, spec §3.1), waits for "use" on stdin, does a set/get and
prints "got=<value>", then waits for stdin to close.
"""
import datetime
import sys

import torch.distributed as dist

host, port = sys.argv[1], int(sys.argv[2])
store = dist.TCPStore(host, port, None, False, datetime.timedelta(seconds=10))
print("connected", flush=True)
if sys.stdin.readline().strip() == "use":
    store.set("after_idle", "still works")
    print(f"got={store.get('after_idle')!r}", flush=True)
    sys.stdin.read()
