"""Helpers for the dynamic-rendezvous tests: supervisors as child processes with their own event
files and logs, and waits on their event streams (every wait has a timeout naming what it waited for)."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, TestFailure, read_events, remove_matching

HERE = os.path.dirname(os.path.abspath(__file__))
LIGHT_WORKER = os.path.join(HERE, "rdzv_worker.py")


class Node:
    """One `ddp-launch run --rdzv-backend c10d` supervisor. `prefix` runs it elsewhere (ip netns exec …)."""

    def __init__(self, workdir, name, endpoint, nnodes, args, nproc=1, conf="", prefix=(), extra=(), env=None,
                 rdzv_id="job"):
        self.name = name
        self.events_path = os.path.join(workdir, f"{name}.events")
        self.out_path = os.path.join(workdir, f"{name}.out")
        self.err_path = os.path.join(workdir, f"{name}.err")
        for p in (self.events_path,):
            if os.path.exists(p):
                os.remove(p)
        cmd = [*prefix, DDP_LAUNCH, "run", "--python", PYTHON, "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
               "--rdzv-id", rdzv_id, "--nnodes", nnodes, "--nproc-per-node", str(nproc), "--local-addr", name,
               "--events", self.events_path, "--shutdown-grace", "3", *extra]
        if conf:
            cmd += ["--rdzv-conf", conf]
        cmd += list(args)
        self.out = open(self.out_path, "w")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=self.err, env=env, start_new_session=True)
        self.started = time.monotonic()

    def events(self):
        try:
            return read_events(self.events_path)
        except FileNotFoundError:
            return []

    def wait_event(self, name, timeout, what, **fields):
        """The first event called `name` whose fields match, waiting up to `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events():
                if e.get("event") == name and all(e.get(k) == v for k, v in fields.items()):
                    return e
            if time.monotonic() > deadline:
                raise TestFailure(f"{self.name}: no {name} event {fields} ({what}) within {timeout}s; events: "
                                  f"{[x.get('event') for x in self.events()]}; stderr: {self.stderr()[-3000:]}")
            if self.proc.poll() is not None and name != "finished":
                # one more read after it exited, then give up
                for e in self.events():
                    if e.get("event") == name and all(e.get(k) == v for k, v in fields.items()):
                        return e
                raise TestFailure(f"{self.name} exited ({self.proc.returncode}) without a {name} event {fields} "
                                  f"({what}); stderr: {self.stderr()[-3000:]}")
            time.sleep(0.05)

    def wait_exit(self, timeout, what):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"{self.name} did not exit within {timeout}s ({what}); stderr: {self.stderr()[-3000:]}")

    def stdout(self):
        self.out.flush()
        with open(self.out_path) as f:
            return f.read()

    def stderr(self):
        self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=30)

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.out.close()
        self.err.close()


class Workdir:
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="ddp-rdzv-test-")
        self.nodes = []

    def node(self, *args, **kwargs):
        kwargs.setdefault("rdzv_id", os.path.basename(self.path))
        n = Node(self.path, *args, **kwargs)
        self.nodes.append(n)
        return n

    def stop_file(self):
        return os.path.join(self.path, "stop")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for n in self.nodes:
            n.cleanup()
        shutil.rmtree(self.path, ignore_errors=True)
        # What SIGKILLed supervisors of this run id left under the temp dir (run dirs, processes.json).
        remove_matching(os.path.join(tempfile.gettempdir(), f"ddp-launch-{os.path.basename(self.path)}-*"))
