"""A real torch 1.13 FileStore reader on a torn tail spins at 100% CPU holding LOCK_SH and
ignores its timeout (spec §11.4). `ddp-launch clean` must not hang behind it, must name it and
say to stop it, and must keep the file; once the spinner is gone, clean removes the file."""
import os
import tempfile
import time

from fs_helpers import Child, clean, cpu_seconds, flock_holders, torn_bytes, wait_until, write_file
from harness import PYTHON, check, run_tests

READER = """
import datetime, sys
import torch.distributed as dist
store = dist.FileStore(sys.argv[1], 2)
store.set_timeout(datetime.timedelta(seconds=3))
print("GET", flush=True)
store.get("a")
print("RETURNED", flush=True)
"""
LOCK_TIMEOUT_S = 1.0


def test_clean_names_a_spinning_reader_and_does_not_hang():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "torn")
        write_file(path, torn_bytes())
        reader = Child([PYTHON, "-c", READER, path], "torch reader")
        try:
            reader.wait_line("GET", 120, "torch to import and the reader to call get()")
            wait_until(lambda: (reader.proc.pid, "READ") in flock_holders(path), 30,
                       "the torch reader to take LOCK_SH on the torn file")
            # Past its 3 s store timeout it is still there, burning CPU.
            cpu0, t0 = cpu_seconds(reader.proc.pid), time.monotonic()
            time.sleep(4)
            share = (cpu_seconds(reader.proc.pid) - cpu0) / (time.monotonic() - t0)
            print(f"  reader CPU share over 4 s past its 3 s timeout: {share:.0%}")
            check(reader.proc.poll() is None, f"reader returned: {reader.tail()}")
            check(share > 0.1, f"reader is not spinning ({share:.0%} CPU)")

            start = time.monotonic()
            r = clean("--lock-timeout", str(LOCK_TIMEOUT_S), path, timeout=30)
            took = time.monotonic() - start
            print(f"  clean answered in {took:.2f}s")
            check(took < LOCK_TIMEOUT_S + 5, f"clean took {took:.1f}s with a {LOCK_TIMEOUT_S}s lock timeout")
            check(r.returncode == 1, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
            pid = reader.proc.pid
            check("verdict: stuck reader" in r.stdout, f"no stuck-reader verdict:\n{r.stdout}")
            check(f"pid {pid} (" in r.stdout and "holds LOCK_SH" in r.stdout and "spinning at 100% CPU" in r.stdout,
                  f"spinner not named:\n{r.stdout}")
            check(f"kill {pid}" in r.stdout and "run clean again" in r.stdout, f"no advice:\n{r.stdout}")
            check("torn tail at offset 11" in r.stdout, f"torn tail not named:\n{r.stdout}")
            check(os.path.exists(path), "clean removed the file under a live reader")

            r = clean("--dry-run", path, timeout=30)
            check(r.returncode == 1 and "stuck reader" in r.stdout, f"dry run disagrees:\n{r.stdout}")
        finally:
            reader.kill()
        r = clean(path)
        check(r.returncode == 0 and not os.path.exists(path), f"after the spinner is gone:\n{r.stdout}{r.stderr}")


run_tests([test_clean_names_a_spinning_reader_and_does_not_hang])
