"""A worker with a grandchild (`sleep`), optionally deaf to SIGTERM; prints both pids."""
import os
import signal
import subprocess
import sys
import time

if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, lambda *_: print("ignoring SIGTERM", flush=True))
child = subprocess.Popen(["sleep", "300"])
print(f"pids {os.getpid()} {child.pid}", flush=True)
time.sleep(300)
