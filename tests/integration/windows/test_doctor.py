"""`ddp-launch.exe doctor` under Wine: a busy store port fails naming the port and the fix, a stale
FileStore (file:///Z:/… URL) is diagnosed and left in place, the open-file check says Windows has
no such limit, the GPU check names nvml.dll, the host name resolves to this machine's addresses,
and --json carries every check."""
import json
import os
import sys
import tempfile

from harness import BusyPort, check, run_tests
from wine import run_exe, windows_path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "filestore"))
from fs_helpers import killed_rendezvous_bytes, write_file  # noqa: E402


def doctor_json(*args):
    r = run_exe("doctor", "--json", "--python-timeout", "5", *args, timeout=120)
    check(r.returncode in (0, 1), f"exit {r.returncode}: {r.stderr}")
    out = json.loads(r.stdout)
    return r, {c["check"]: c for c in out["checks"]}


def test_busy_port_fails_with_the_fix():
    with BusyPort() as port:
        r, checks = doctor_json("--port", str(port))
    c = checks["port"]
    check(c["status"] == "fail" and f"port {port} is in use" in c["finding"], f"port check: {c}")
    check("--master-port" in c["action"] and "netstat -ano" in c["action"], f"no fix named: {c}")
    check(r.returncode == 1, "a failed check must fail doctor")


def test_stale_filestore_is_diagnosed_and_kept():
    with tempfile.TemporaryDirectory(prefix="ddp-win-doc-") as tmp:
        path = os.path.join(tmp, "rdzv")
        write_file(path, killed_rendezvous_bytes())
        url = "file:///" + windows_path(path).replace("\\", "/")
        _, checks = doctor_json("--filestore", url)
        c = checks["filestore"]
        check(c["status"] != "ok" and "stale" in c["finding"], f"filestore check: {c}")
        check("ddp-launch clean" in c["action"], f"no fix named: {c}")
        check(os.path.exists(path), "doctor removed the file")


def test_windows_specific_findings():
    _, checks = doctor_json()
    check(checks["nofile"]["status"] == "ok" and "Windows" in checks["nofile"]["finding"], checks["nofile"])
    gpu = checks["gpu"]
    check(gpu["status"] == "warn" and "nvml.dll" in gpu["finding"], f"gpu check: {gpu}")
    check("python" in checks and "omp" in checks, f"checks: {sorted(checks)}")
    # The host name gloo resolves (pytorch#80638: an address no interface holds is error 10049).
    # Wine gives the Linux host's name; here it resolves to addresses this machine holds.
    host = checks["hostname"]
    check(host["details"]["name"] and host["details"]["addresses"], f"hostname check: {host}")
    check(host["status"] == "ok" and "held by this machine" in host["finding"], f"hostname check: {host}")
    check(all(a["local"] for a in host["details"]["addresses"]), f"hostname check: {host}")


run_tests([
    test_busy_port_fails_with_the_fix,
    test_stale_filestore_is_diagnosed_and_kept,
    test_windows_specific_findings,
])
