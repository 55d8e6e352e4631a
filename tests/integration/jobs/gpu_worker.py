"""No torch: prints CUDA_VISIBLE_DEVICES, then waits for the gate file (argv[1]) and exits."""
import os
import sys
import time

print(f"cuda_visible_devices={os.environ.get('CUDA_VISIBLE_DEVICES')!r}", flush=True)
deadline = time.monotonic() + 300
while not os.path.exists(sys.argv[1]):
    if time.monotonic() > deadline:
        sys.exit(5)
    time.sleep(0.05)
