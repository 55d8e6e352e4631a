"""A real `ddp-launch daemon` in a temporary state directory, and an HTTP client on its unix socket."""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, LineReader, TestFailure, check, stop_process, alive  # noqa: F401 (alive re-exported)

HERE = os.path.dirname(os.path.abspath(__file__))


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Daemon:
    """`ddp-launch daemon` with its own state dir and socket; restartable on the same state."""

    def __init__(self, *extra, state_dir=None, env=None, preexec_fn=None):
        """preexec_fn: run in the daemon's process before exec (e.g. a lowered RLIMIT_NOFILE)."""
        self.own_dir = state_dir is None
        self.preexec_fn = preexec_fn
        self.dir = state_dir or tempfile.mkdtemp(prefix="ddp-daemon-test-")
        self.state = os.path.join(self.dir, "state")
        self.socket = os.path.join(self.dir, "d.sock")
        self.extra = list(extra)
        self.proc = None
        self.start(env=env)

    def start(self, timeout=30, env=None):
        """env: variables added to this start's environment (e.g. a test-only hook)."""
        self.proc = subprocess.Popen(
            [DDP_LAUNCH, "daemon", "--state-dir", self.state, "--socket", self.socket, *self.extra],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "daemon.log"), "a"), text=True,
            env={**os.environ, **(env or {})}, preexec_fn=self.preexec_fn)
        self.out = LineReader(self.proc.stdout)
        self.ready_line = self.out.wait_for("listening unix=", timeout, "the daemon ready line")

    def tcp_port(self):
        """The port the daemon took for `--listen 127.0.0.1:0`, read from its ready line."""
        return int(self.ready_line.split("tcp=127.0.0.1:")[1].split()[0])

    def token(self):
        """The bearer token of the TCP API and the dashboard (<state-dir>/token)."""
        with open(os.path.join(self.state, "token")) as f:
            return f.read().strip()

    def log(self):
        with open(os.path.join(self.dir, "daemon.log")) as f:
            return f.read()

    def request(self, method, target, body=None, headers=None, timeout=30):
        conn = UnixHTTPConnection(self.socket, timeout=timeout)
        try:
            conn.request(method, target, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            ctype = r.getheader("Content-Type", "")
            return r.status, (json.loads(data) if "json" in ctype else data.decode())
        finally:
            conn.close()

    def submit(self, yaml_text):
        status, body = self.request("POST", "/v1/jobs", yaml_text)
        check(status == 201, f"submit answered {status}: {body}")
        return body["id"]

    def job(self, job_id):
        status, body = self.request("GET", f"/v1/jobs/{job_id}")
        check(status == 200, f"GET job {job_id} answered {status}: {body}")
        return body

    def wait_state(self, job_id, states, timeout, what=""):
        states = {states} if isinstance(states, str) else set(states)
        deadline = time.monotonic() + timeout
        while True:
            j = self.job(job_id)
            if j["state"] in states:
                return j
            if time.monotonic() > deadline:
                raise TestFailure(f"job {job_id} not {states} within {timeout}s {what}: {j}\n"
                                  f"daemon log tail: {self.log()[-3000:]}")
            time.sleep(0.2)

    def events(self, job_id):
        status, body = self.request("GET", f"/v1/jobs/{job_id}/events")
        check(status == 200, f"events of job {job_id}: {status} {body}")
        return body

    def cli(self, *args, timeout=60):
        return subprocess.run([DDP_LAUNCH, *args, "--socket", self.socket], capture_output=True, text=True,
                              timeout=timeout)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc:
            stop_process(self.proc)

    def cleanup(self):
        """Stops the daemon and every job supervisor it left running, then removes the directory."""
        self.stop()
        for pid in supervisor_pids(self.state):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def supervisor_pids(state_dir):
    """Pids of live `ddp-launch run` processes whose --events file lies under state_dir."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"run" in argv[1:2] and any(a.startswith(state_dir.encode()) for a in argv):
            out.append(int(name))
    return out


def gated_job(name, gate, ranks=1, extra=""):
    """A YAML job running gated_worker.py (gloo all_reduce once `gate` exists)."""
    return (f"name: {name}\ncommand: [{PYTHON}, {HERE}/gated_worker.py, {gate}]\n"
            f"resources: {{nproc_per_node: {ranks}}}\ndistributed: {{shutdown_grace: 3s}}\n{extra}")
