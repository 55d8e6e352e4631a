"""The job daemon of ddp-launch.exe under Wine: `daemon` on loopback TCP with its token (the Windows
build has no unix socket), `submit`/`list`/`status`/`logs`/`cancel` reaching it by --state-dir
(its api.json and token), a 2-rank cmd.exe YAML job run to SUCCEEDED by its own `ddp-launch.exe run`
supervisor (platform/windows/detached_process.cpp), the job kept across a `taskkill /F` of the daemon
(re-adopted by the next daemon on the same state store), a bad job file's file:line:column errors,
a second daemon on the same state directory refused (the Windows state-dir lock), and cancel."""
import json
import os
import subprocess
import tempfile
import time

from harness import LineReader, TestFailure, check, run_tests
from wine import alive_windows, exe_command, require_exe, run_exe, wait_gone_windows, wine_command, windows_path


class WinDaemon:
    """`ddp-launch.exe daemon --state-dir DIR` under Wine; restartable on the same state."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.state = os.path.join(tmp, "state")
        self.proc = None
        self.start()

    def start(self, timeout=90):
        require_exe()
        self.log_file = open(os.path.join(self.tmp, "daemon.log"), "a")
        self.proc = subprocess.Popen(exe_command("daemon", "--state-dir", windows_path(self.state), "--slots", "4",
                                                 "--gpus", "0"),
                                     stdout=subprocess.PIPE, stderr=self.log_file, text=True)
        self.out = LineReader(self.proc.stdout, self.proc, "ddp-launch.exe daemon")
        self.ready = self.out.wait_for("listening", timeout, "the daemon's ready line", prefix=True)

    def api(self):
        with open(os.path.join(self.state, "api.json")) as f:
            return json.load(f)

    def log(self):
        with open(os.path.join(self.tmp, "daemon.log")) as f:
            return f.read()

    def cli(self, *args, timeout=90):
        return run_exe(*args, "--state-dir", windows_path(self.state), timeout=timeout)

    def status(self, job):
        r = self.cli("status", str(job), "--json")
        check(r.returncode == 0, f"status {job}: rc {r.returncode} {r.stderr}")
        return json.loads(r.stdout)

    def wait_state(self, job, states, timeout):
        states = {states} if isinstance(states, str) else set(states)
        deadline = time.monotonic() + timeout
        while True:
            j = self.status(job)
            if j["state"] in states:
                return j
            if time.monotonic() > deadline:
                raise TestFailure(f"job {job} not {states} within {timeout}s: {j}\ndaemon log: {self.log()[-3000:]}")
            time.sleep(1)

    def taskkill(self):
        pid = self.api()["pid"]
        k = subprocess.run(wine_command("taskkill.exe", "/F", "/PID", str(pid)), capture_output=True, text=True,
                           timeout=60)
        check(k.returncode == 0, f"taskkill /F /PID {pid}: {k.stdout} {k.stderr}")
        self.proc.wait(timeout=30)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.log_file.close()


def gated_job(name, gate, ranks=2, shell=False):
    """A job of `ranks` cmd.exe ranks that print their rank and wait for `gate` (at most ~4 min);
    `shell`: the same line as the job file's `shell:` (which runs it through cmd.exe /c on Windows)."""
    # Wine's cmd.exe runs no `if … (…) else (…)` inside a for body; `if not exist` alone it does.
    wait = f"for /L %i in (1,1,240) do if not exist {windows_path(gate)} ping -n 2 127.0.0.1 >NUL"
    script = f"echo rank %RANK% of %WORLD_SIZE% & {wait}"
    run = f"shell: '{script}'" if shell else f"command: [cmd.exe, /c, '{script}']"
    return (f"name: {name}\n{run}\n"
            f"resources: {{nproc_per_node: {ranks}}}\ndistributed: {{shutdown_grace: 2s}}\n")


def submit(d, text, name="job.yaml"):
    path = os.path.join(d.tmp, name)
    with open(path, "w") as f:
        f.write(text)
    r = d.cli("submit", windows_path(path))
    check(r.returncode == 0, f"submit: rc {r.returncode} {r.stderr}\ndaemon log: {d.log()[-2000:]}")
    return int(r.stdout.strip())


def test_a_two_rank_job_survives_a_taskkill_of_the_daemon():
    with tempfile.TemporaryDirectory(prefix="ddp-win-daemon-") as tmp:
        d = WinDaemon(tmp)
        try:
            check("tcp=127.0.0.1:" in d.ready and "unix=" not in d.ready, f"ready line: {d.ready}")
            api = d.api()
            check(api["unix"] is None and api["tcp"]["host"] == "127.0.0.1", f"api.json: {api}")
            gate = os.path.join(tmp, "gate")
            job = submit(d, gated_job("win-two", gate))
            j = d.wait_state(job, "RUNNING", 120)
            supervisor = j.get("pid")
            check(isinstance(supervisor, int) and supervisor > 0, f"no supervisor pid in {j}")
            # The daemon dies hard; the supervisor (its own process group, console and Job Object
            # without KILL_ON_JOB_CLOSE) and its ranks run on.
            d.taskkill()
            check(alive_windows([str(supervisor)]), "the supervisor died with the daemon")
            d.start()
            j = d.status(job)
            check(j["state"] == "RUNNING", f"not re-adopted as RUNNING after the restart: {j}\n{d.log()[-2000:]}")
            check(j.get("pid") == supervisor, f"another supervisor: {j.get('pid')} vs {supervisor}")
            listed = d.cli("list")
            check(listed.returncode == 0 and "win-two" in listed.stdout, f"list: {listed.stdout} {listed.stderr}")
            open(gate, "w").close()
            j = d.wait_state(job, ("SUCCEEDED", "FAILED"), 120)
            check(j["state"] == "SUCCEEDED", f"job ended {j}")
            logs = d.cli("logs", str(job), "--rank", "1")
            check(logs.returncode == 0 and "rank 1 of 2" in logs.stdout, f"logs --rank 1: {logs.stdout!r} {logs.stderr}")
            logs0 = d.cli("logs", str(job), "-f")
            check(logs0.returncode == 0 and "rank 0 of 2" in logs0.stdout, f"logs -f: {logs0.stdout!r} {logs0.stderr}")
        finally:
            d.stop()


def test_a_shell_job_runs_through_cmd_and_cancel_stops_it():
    with tempfile.TemporaryDirectory(prefix="ddp-win-daemon-") as tmp:
        d = WinDaemon(tmp)
        try:
            # `shell:` on Windows: cmd.exe /c runs the line (not /bin/sh, which Windows lacks).
            job = submit(d, gated_job("win-cancel", os.path.join(tmp, "never"), shell=True))
            j = d.wait_state(job, "RUNNING", 120)
            deadline = time.monotonic() + 60
            while True:
                logs = d.cli("logs", str(job), "--rank", "1")
                if logs.returncode == 0 and "rank 1 of 2" in logs.stdout:
                    break
                check(time.monotonic() < deadline, f"shell: job's rank 1 printed nothing: {logs.stdout!r} "
                      f"{logs.stderr}\ndaemon log: {d.log()[-2000:]}")
                time.sleep(1)
            r = d.cli("cancel", str(job))
            check(r.returncode == 0, f"cancel: rc {r.returncode} {r.stderr}")
            j = d.wait_state(job, ("CANCELLED", "FAILED", "SUCCEEDED"), 90)
            check(j["state"] == "CANCELLED", f"job ended {j}")
            check(not wait_gone_windows([str(j["pid"])], 20), f"its supervisor {j['pid']} still runs")
        finally:
            d.stop()


def test_a_bad_job_file_gets_line_and_column_and_a_second_daemon_is_refused():
    h = run_exe("--help")
    missing = [c for c in ("daemon", "submit", "list", "status", "logs", "cancel", "ui")
               if not any(line.strip().startswith(c + " ") for line in h.stdout.splitlines())]
    check(h.returncode == 0 and not missing, f"--help lacks {missing}: {h.stdout}")
    with tempfile.TemporaryDirectory(prefix="ddp-win-daemon-") as tmp:
        d = WinDaemon(tmp)
        try:
            bad = os.path.join(tmp, "bad.yaml")
            with open(bad, "w") as f:
                f.write("name: bad\ncommand: [cmd.exe]\nresources: {nproc_per_node: lots}\n")
            r = d.cli("submit", windows_path(bad))
            check(r.returncode != 0 and "bad.yaml:3:" in r.stderr and "nproc_per_node" in r.stderr,
                  f"submit bad.yaml: rc {r.returncode} {r.stderr!r}")
            second = run_exe("daemon", "--state-dir", windows_path(d.state), timeout=60)
            check(second.returncode != 0 and "another ddp-launch daemon" in second.stderr
                  and str(d.api()["pid"]) in second.stderr,
                  f"a second daemon on the same state dir: rc {second.returncode} {second.stderr!r}")
        finally:
            d.stop()


run_tests([
    test_a_bad_job_file_gets_line_and_column_and_a_second_daemon_is_refused,
    test_a_two_rank_job_survives_a_taskkill_of_the_daemon,
    test_a_shell_job_runs_through_cmd_and_cancel_stops_it,
])
