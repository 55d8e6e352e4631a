"""A worker for test_full_disk.py: writes more than its log directory's disk holds (stdout, stderr and
metric lines), then waits until the supervisor's events file (outside that disk) reports the failed
writes, proving it was said while the rank ran and that the rank was not held up; then says its last
stderr words and exits 0.

argv: EVENTS_FILE MEGABYTES
"""
import sys
import time

events, megabytes = sys.argv[1], int(sys.argv[2])
line = "x" * 1000
for i in range(megabytes * 1000):
    print(f"out {i:07d} {line}")
    if i % 2 == 0:
        print(f"err {i:07d} {line}", file=sys.stderr)
    if i % 10 == 0:
        print(f"@ddp-metric step={i} loss={1.0 / (i + 1):.6f}")
sys.stdout.flush()
sys.stderr.flush()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    with open(events) as f:
        text = f.read()
    if text.count('"write_failed"') >= 2:
        break
    time.sleep(0.1)
else:
    print("the failed writes were not reported while the rank ran", file=sys.stderr, flush=True)
    sys.exit(3)
print("last words 1: the disk was full", file=sys.stderr)
print("last words 2: exiting 0", file=sys.stderr, flush=True)
