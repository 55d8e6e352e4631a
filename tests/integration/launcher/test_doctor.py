"""`ddp-launch doctor` against real processes: a port this test holds, interpreters with and without
torch, a stale FileStore file (diagnosed, never removed), NVML absent, a low open-file limit, and
the --json form. Only one run imports torch (slow); the others point --python at /bin/false."""
import json
import os
import re
import resource
import shutil
import socket
import struct
import subprocess
import tempfile

from harness import DDP_LAUNCH, PYTHON, check, free_port, run_tests

LINE = re.compile(r"^(ok|warn|fail) {2,}(\w+): (.+)$")
NO_NVML = "/nonexistent/libnvidia-ml.so.1"


def doctor(*args, env_extra=None, drop=(), preexec_fn=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["DDP_NVML_LIBRARY"] = NO_NVML
    env.update(env_extra or {})
    return subprocess.run([DDP_LAUNCH, "doctor", *args], capture_output=True, text=True, timeout=timeout, env=env,
                          preexec_fn=preexec_fn)


def lines_of(r):
    """{check: [(status, text)]} from the text output; every line but the summary must be a check line."""
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("doctor: "):
            continue
        m = LINE.match(line)
        check(m, f"not a check line: {line!r} (stdout {r.stdout!r}, stderr {r.stderr!r})")
        out.setdefault(m.group(2), []).append((m.group(1), m.group(3)))
    return out


def one(lines, name):
    check(name in lines and len(lines[name]) == 1, f"expected one {name} line, got {lines.get(name)}")
    return lines[name][0]


def filestore_bytes(records):
    """A c10d FileStore log (spec §11.1): u32 LE key length | key | u32 LE value length | value."""
    out = b""
    for k, v in records:
        out += struct.pack("<I", len(k)) + k + struct.pack("<I", len(v)) + v
    return out


def python_without_torch():
    """The first python3 on PATH outside /usr/bin and /bin (pyenv's here); None when there is none."""
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if os.path.realpath(d) not in ("/usr/bin", "/bin", "/usr/local/bin"))
    return shutil.which("python3", path=path)


def test_healthy_machine_json_has_one_entry_per_check():
    with tempfile.TemporaryDirectory() as d:
        absent = os.path.join(d, "rdzv")
        r = doctor("--json", "--port", str(free_port()), "--python", PYTHON, "--filestore", absent,
                   drop=("OMP_NUM_THREADS",))
        check(r.returncode == 0, f"exit {r.returncode}: {r.stdout} {r.stderr}")
        out = json.loads(r.stdout)
        names = [c["check"] for c in out["checks"]]
        check(sorted(names) == sorted(["port", "filestore", "gpu", "omp", "nofile", "python"]),
              f"checks: {names}")
        by = {c["check"]: c for c in out["checks"]}
        for c in out["checks"]:
            check(c["status"] in ("ok", "warn", "fail"), f"status {c['status']!r}")
            check(LINE.match(c["line"]), f"line {c['line']!r}")
        check(out["exit_code"] == 0 and out["fail"] == 0, f"summary: {out}")
        check(by["port"]["status"] == "ok", f"port: {by['port']}")
        py = by["python"]
        check(py["status"] == "ok", f"python: {py}")
        check(re.fullmatch(r"1\.13\.\S+", py["details"]["torch"]), f"torch version: {py['details']}")
        check(py["details"]["torch"] in py["finding"] and "gloo" in py["finding"], f"python finding: {py['finding']}")
        check(by["filestore"]["status"] == "ok" and absent in by["filestore"]["finding"], f"{by['filestore']}")
        check(by["gpu"]["status"] == "warn" and NO_NVML in by["gpu"]["finding"], f"gpu: {by['gpu']}")
        check("OMP_NUM_THREADS is unset" in by["omp"]["finding"] and "to 1" in by["omp"]["finding"],
              f"omp: {by['omp']}")
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        nofile = by["nofile"]["details"]
        check(nofile["soft"] == soft and nofile["hard"] == hard, f"nofile {nofile}, expected soft {soft} hard {hard}")


def test_busy_port_fails_naming_this_process():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = doctor("--port", str(port), "--python", "/bin/false")
    check(r.returncode == 1, f"exit {r.returncode}: {r.stdout} {r.stderr}")
    status, text = one(lines_of(r), "port")
    check(status == "fail", f"port: {status} {text}")
    check(f"pid {os.getpid()} " in text and str(port) in text, f"holder not named: {text}")
    check("ddp-launch run" in text and "free port" in text, f"no fix given: {text}")


def test_false_and_torchless_python_fail_with_the_fix():
    r = doctor("--port", str(free_port()), "--python", "/bin/false")
    check(r.returncode == 1, f"exit {r.returncode}: {r.stdout} {r.stderr}")
    lines = lines_of(r)
    status, text = one(lines, "python")
    check(status == "fail" and "/bin/false" in text and "exited with code 1" in text, f"python: {status} {text}")
    check("--python /usr/bin/python3" in text, f"no fix: {text}")
    check(one(lines, "port")[0] == "ok", f"free port: {lines['port']}")
    bare = python_without_torch()
    if bare is None:
        print("(no python3 without torch on PATH: that half is skipped)")
        return
    r = doctor("--port", str(free_port()), "--python", bare)
    status, text = one(lines_of(r), "python")
    check(r.returncode == 1 and status == "fail", f"{bare}: exit {r.returncode}, {status} {text}")
    check("No module named 'torch'" in text and "--python /usr/bin/python3" in text, f"python: {text}")


def test_default_interpreter_is_the_one_run_chooses():
    # Without --python and $PYTHON_EXEC, doctor checks the interpreter `run` would start: here the
    # active virtualenv's python, which answers run's torch probe (find_spec) and fails doctor's.
    with tempfile.TemporaryDirectory() as venv:
        os.makedirs(os.path.join(venv, "bin"))
        fake = os.path.join(venv, "bin", "python")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\ncase "$2" in *find_spec*) exit 0;; esac\nexit 7\n')
        os.chmod(fake, 0o755)
        r = doctor("--json", "--port", str(free_port()), env_extra={"VIRTUAL_ENV": venv},
                   drop=("PYTHON_EXEC", "CONDA_PREFIX"))
        by = {c["check"]: c for c in json.loads(r.stdout)["checks"]}
        py = by["python"]
        check(py["details"]["interpreter"] == fake, f"doctor checked {py['details']} instead of {fake}")
        check(py["status"] == "fail" and "exited with code 7" in py["finding"], f"python: {py}")
        # $PYTHON_EXEC still wins, as in run.
        r = doctor("--port", str(free_port()), env_extra={"VIRTUAL_ENV": venv, "PYTHON_EXEC": "/bin/false"})
        status, text = one(lines_of(r), "python")
        check(status == "fail" and "/bin/false" in text and fake not in text, f"python: {status} {text}")


def test_stale_filestore_is_named_and_kept():
    with tempfile.TemporaryDirectory() as d:
        stale = os.path.join(d, "rdzv")
        data = filestore_bytes([(b"/a", b"1")])
        with open(stale, "wb") as f:
            f.write(data)
        notes = os.path.join(d, "notes.txt")
        with open(notes, "w") as f:
            f.write("not a filestore\n")
        r = doctor("--port", str(free_port()), "--python", "/bin/false", "--filestore", "file://" + stale,
                   "--filestore", notes, "--json")
        check(r.returncode == 1, f"exit {r.returncode}: {r.stdout} {r.stderr}")
        fs = [c for c in json.loads(r.stdout)["checks"] if c["check"] == "filestore"]
        check(len(fs) == 2, f"filestore entries: {fs}")
        check(fs[0]["status"] == "fail" and stale in fs[0]["finding"] and "stale" in fs[0]["finding"], f"{fs[0]}")
        check("ddp-launch clean" in fs[0]["action"], f"no fix: {fs[0]}")
        check(fs[0]["details"]["keys"] == 1, f"keys: {fs[0]['details']}")
        check(fs[1]["status"] == "fail" and notes in fs[1]["finding"], f"{fs[1]}")
        with open(stale, "rb") as f:
            check(f.read() == data, "doctor changed or removed the stale FileStore file")
        check(os.path.exists(notes), "doctor removed a file that is not a FileStore")


def test_omp_nofile_and_usage():
    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    r = doctor("--port", str(free_port()), "--python", "/bin/false", env_extra={"OMP_NUM_THREADS": "3"},
               preexec_fn=low_limit)
    lines = lines_of(r)
    status, text = one(lines, "omp")
    check(status == "ok" and "OMP_NUM_THREADS=3" in text and "unchanged" in text, f"omp: {status} {text}")
    status, text = one(lines, "nofile")
    check(status == "warn" and "soft 256, hard 256" in text and "limits.conf" in text, f"nofile: {status} {text}")
    status, text = one(lines, "gpu")
    check(status == "warn" and "GPU checks are off" in text and NO_NVML in text, f"gpu: {status} {text}")
    r = doctor("--port", str(free_port()), "--python", "/bin/false", env_extra={"OMP_NUM_THREADS": "many"})
    status, text = one(lines_of(r), "omp")
    check(status == "warn" and "'many'" in text, f"omp: {status} {text}")
    r = doctor("--port", "70000")
    check(r.returncode == 2 and "70000" in r.stderr, f"--port 70000: exit {r.returncode}: {r.stderr}")
    r = doctor("--no-such-flag")
    check(r.returncode == 2, f"--no-such-flag: exit {r.returncode}: {r.stderr}")


def test_hung_python_is_killed_at_the_timeout():
    with tempfile.TemporaryDirectory() as d:
        hang = os.path.join(d, "python-that-hangs")
        pidfile = os.path.join(d, "pid")
        with open(hang, "w") as f:
            f.write(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 60\n")
        os.chmod(hang, 0o755)
        r = doctor("--port", str(free_port()), "--python", hang, "--python-timeout", "1", timeout=30)
        status, text = one(lines_of(r), "python")
        check(r.returncode == 1 and status == "fail", f"exit {r.returncode}: {status} {text}")
        check("within 1 s" in text and "import torch" in text and "--python-timeout" in text, f"python: {text}")
        pid = int(open(pidfile).read())
        check(not os.path.exists(f"/proc/{pid}"), f"the hung interpreter (pid {pid}) was left running")


if __name__ == "__main__":
    run_tests([
        test_busy_port_fails_naming_this_process,
        test_false_and_torchless_python_fail_with_the_fix,
        test_default_interpreter_is_the_one_run_chooses,
        test_stale_filestore_is_named_and_kept,
        test_omp_nofile_and_usage,
        test_hung_python_is_killed_at_the_timeout,
        test_healthy_machine_json_has_one_entry_per_check,
    ])
