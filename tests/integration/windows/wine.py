"""Running ddp-launch.exe (and other Windows programs) under Wine for the `windows` tests.

The environment comes from tests/integration/windows/CMakeLists.txt: DDP_LAUNCH is the .exe,
DDP_LAUNCH_PREFIX Wine's loader, WINEPREFIX the tests' own prefix (made once by wine_prefix.py).
A Windows process under Wine is a Linux process too: its Linux pid is the one Popen returns, and a
SIGINT sent to it arrives as Ctrl-C (Wine turns it into a console control event).
"""
import os
import select
import subprocess
import tempfile
import time

from harness import TestFailure

EXE = os.environ.get("DDP_LAUNCH", "build-windows/bin/ddp-launch.exe")
WINE = os.environ.get("DDP_LAUNCH_PREFIX", "/usr/lib/wine/wine64")
WINE_DIR = os.path.dirname(WINE)
# wineserver is not on PATH in Debian's wine64 package: it sits beside the loader.
WINESERVER = os.path.join(WINE_DIR, "wineserver")


def require_exe():
    if not os.path.exists(EXE):
        raise TestFailure(f"{EXE} is missing: build it with ./packaging/build-windows.sh")


def windows_path(path):
    """A Linux path as Windows programs under Wine see it (drive Z: is /)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def wine_command(*args):
    return [WINE, *args]


def exe_command(*args):
    return [WINE, EXE, *args]


def run_exe(*args, timeout=60, env=None, **kw):
    """ddp-launch.exe ARGS to its end; CompletedProcess with text output."""
    require_exe()
    try:
        return subprocess.run(exe_command(*args), capture_output=True, text=True, timeout=timeout, env=env, **kw)
    except subprocess.TimeoutExpired as e:
        raise TestFailure(f"ddp-launch.exe {' '.join(args)} did not finish within {timeout}s; "
                          f"stderr so far: {e.stderr}") from None


CHILD = os.path.join(os.environ.get("DDP_WINDOWS_BIN_DIR", os.path.dirname(EXE)), "ddp-test-child.exe")


def alive_windows(pids):
    """The Windows processes among `pids` ("PID" or "PID:START_TIME") that still run, asked of
    ddp-test-child.exe (Wine's tasklist lists nothing)."""
    if not pids:
        return []
    r = subprocess.run(wine_command(CHILD, "alive", *pids), capture_output=True, text=True, timeout=60)
    return [line.split()[0] for line in r.stdout.splitlines() if line.endswith(" alive")]


def wait_gone_windows(pids, seconds):
    """Waits up to `seconds` for the Windows processes to end; returns those still running."""
    deadline = time.monotonic() + seconds
    left = alive_windows(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = alive_windows(pids)
    return left


class WineKeptUp:
    """Holds one Windows process (ddp-test-child.exe holding a file) for the duration, so the prefix's
    wineserver and services.exe stay up between a test's short Wine commands: without one, the
    server ends with each command's last process, taking services.exe and every service it started
    with it (a service started by `sc start` would be gone by the next `sc query`), and each command
    pays for a new server. Entered once the process runs (its first line), so no Wine command races
    it to start the server; ended (our own process, by its pid) on leaving."""

    def __enter__(self):
        self.file = tempfile.NamedTemporaryFile(prefix="wine-kept-up-")
        self.proc = subprocess.Popen(wine_command(CHILD, "hold", windows_path(self.file.name), "3600000"),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        ready = select.select([self.proc.stdout], [], [], 120)[0]
        if not ready or not self.proc.stdout.readline().startswith("holding"):
            self.__exit__()
            raise TestFailure("ddp-test-child.exe hold did not start under Wine within 120s")
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait(timeout=60)
        self.file.close()


def run_wine_command(*args, timeout=120):
    """`wine ARGS` to its end, its output through files rather than pipes: a system process the
    command starts (services.exe for `sc`, explorer.exe for a window broadcast) inherits its output
    handles and, while WineKeptUp holds the server, lives on; with pipes the wait for their end
    would last as long. CompletedProcess with text output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            p = subprocess.run(wine_command(*args), stdout=out, stderr=err, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"wine {' '.join(args)} did not finish within {timeout}s") from None
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(p.args, p.returncode, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))
