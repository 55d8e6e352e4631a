"""Running ddp-launch.exe (and other Windows programs) under Wine for the `windows` tests.

The environment comes from tests/integration/windows/CMakeLists.txt: DDP_LAUNCH is the .exe,
DDP_LAUNCH_PREFIX Wine's loader, WINEPREFIX the tests' own prefix (made once by wine_prefix.py).
A Windows process under Wine is a Linux process too: its Linux pid is the one Popen returns, and a
SIGINT sent to it arrives as Ctrl-C (Wine turns it into a console control event).
"""
import os
import subprocess

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


def windows_processes():
    """(pid, command line) of every Windows process in the prefix, from Wine's tasklist."""
    r = subprocess.run(wine_command("tasklist.exe"), capture_output=True, text=True, timeout=60)
    return r.stdout
