"""platform/service.hpp under Wine's service manager (services.exe): ddp-test-service.exe registered
with `sc create`, started with `sc start` (RUNNING, its body runs), stopped with `sc stop` (the stop
reaches the body through on_stop, the body's exit code is the service's: STOPPED, 1066
ERROR_SERVICE_SPECIFIC_ERROR carrying it), deleted with `sc delete`. Not tested here: a start by
hand, which Windows refuses at once (ERROR_FAILED_SERVICE_CONTROLLER_CONNECT: the NotAService
message); Wine's dispatcher waits ~16 s for a control pipe and, now and then, takes the hand-started
process for a service being started (measured: one of three). `ddp-launch.exe daemon --service` (what the installer's /SERVICE=1 registers)
uses the same call once the daemon runs on Windows (docs/windows.md)."""
import os
import re
import tempfile
import time

from harness import TestFailure, check, run_tests
from wine import WineKeptUp, run_wine_command, windows_path

BIN = os.environ.get("DDP_WINDOWS_BIN_DIR", "build-windows/bin")
SERVICE_EXE = os.path.join(BIN, "ddp-test-service.exe")


def wine(*args, timeout=120):
    return run_wine_command(*args, timeout=timeout)


def query(name):
    """`sc query NAME` as {STATE: 'RUNNING', WIN32_EXIT_CODE: '1066', ...} ({} when unknown)."""
    r = wine("sc", "query", name)
    fields = {}
    for line in r.stdout.replace("\r", "").splitlines():
        m = re.match(r"^\s*(\w+)\s*:\s*(\d+)\s*(\w*)", line)
        if m:
            fields[m.group(1)] = m.group(3) if m.group(1) == "STATE" else m.group(2)
    return fields


def wait_for(what, seconds, probe):
    deadline = time.monotonic() + seconds
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TestFailure(f"waited {seconds}s for {what}")
        time.sleep(0.3)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def test_sc_start_query_stop_delete():
    name = "ddp-svc-test"
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "state.txt")
        wine("sc", "delete", name)  # a run killed before its clean-up
        r = wine("sc", "create", name, "binPath=", f"{windows_path(SERVICE_EXE)} {name} {windows_path(state)} 7")
        check(r.returncode == 0, f"sc create: exit {r.returncode}: {r.stdout} {r.stderr}")
        try:
            check(query(name).get("STATE") == "STOPPED", f"created: {query(name)}")
            r = wine("sc", "start", name)
            check(r.returncode == 0, f"sc start: exit {r.returncode}: {r.stdout} {r.stderr}")
            wait_for("the service's body to run", 60, lambda: read(state) == "running\n")
            check(query(name).get("STATE") == "RUNNING", f"started: {query(name)}")
            r = wine("sc", "stop", name)
            check(r.returncode == 0, f"sc stop: exit {r.returncode}: {r.stdout} {r.stderr}")
            wait_for("the stop to reach the body", 60, lambda: read(state) == "running\nstopped\n")
            q = wait_for("STOPPED", 60, lambda: (lambda q: q if q.get("STATE") == "STOPPED" else None)(query(name)))
            check(q.get("WIN32_EXIT_CODE") == "1066" and q.get("SERVICE_EXIT_CODE") == "7", f"stopped: {q}")
        finally:
            r = wine("sc", "delete", name)
        check(r.returncode == 0, f"sc delete: exit {r.returncode}: {r.stdout} {r.stderr}")
        check(query(name) == {}, f"deleted, yet: {query(name)}")


if __name__ == "__main__":
    with WineKeptUp():
        run_tests([test_sc_start_query_stop_delete])
