"""A worker with a grandchild (`sleep`), optionally deaf to SIGTERM; prints both pids.

--dataloader: also "trains" through a torch DataLoader with 2 worker processes (more grandchildren,
which only notice their parent's death at their own watchdog's next look) and prints their pids.
--daemon: also double-forks a `setsid` daemon (its own session and process group: killing the
worker's group does not reach it) and prints its pid."""
import glob
import os
import signal
import subprocess
import sys
import time


def children(pid):
    out = set()
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(path) as f:
                out |= {int(p) for p in f.read().split()}
        except FileNotFoundError:
            pass  # that thread ended since the glob
    return out


if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, lambda *_: print("ignoring SIGTERM", flush=True))
child = subprocess.Popen(["sleep", "300"])
if "--daemon" in sys.argv:
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, str(os.getpid()).encode())
            os.close(w)
            os.execvp("sleep", ["sleep", "301"])
        os._exit(0)
    os.close(w)
    daemon = int(os.read(r, 32))
    os.wait()
    print(f"daemon {daemon} sid {os.getsid(daemon)}", flush=True)
print(f"pids {os.getpid()} {child.pid}", flush=True)
if "--dataloader" in sys.argv:
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset):
        def __len__(self):
            return 10**6

        def __getitem__(self, i):
            time.sleep(0.05)
            return i

    batches = iter(DataLoader(Slow(), num_workers=2, batch_size=1))
    next(batches)
    loaders = sorted(children(os.getpid()) - {child.pid})
    print("dataloader " + " ".join(map(str, loaders)), flush=True)
    while True:
        next(batches)  # training
if "--exit" in sys.argv:
    sys.exit(0)
time.sleep(300)
