"""Fixture of the `windows` tests: makes the tests' Wine prefix once (~10 s on first use) and
checks the .exe exists, so each test starts Wine in a ready prefix."""
import os
import subprocess
import sys
import time

from wine import EXE, WINE

start = time.monotonic()
if not os.path.exists(EXE):
    sys.exit(f"{EXE} is missing: build it with ./packaging/build-windows.sh")
prefix = os.environ["WINEPREFIX"]
fresh = not os.path.exists(os.path.join(prefix, "system.reg"))
r = subprocess.run([WINE, "cmd.exe", "/c", "exit 0"], capture_output=True, text=True, timeout=300)
if r.returncode != 0:
    sys.exit(f"Wine could not run cmd.exe in {prefix}: exit {r.returncode}\n{r.stderr}")
print(f"Wine prefix {prefix} {'made' if fresh else 'ready'} in {time.monotonic() - start:.1f}s")
