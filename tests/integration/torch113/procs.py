"""Helpers for the torch 1.13 tests: child processes whose output is read with deadlines."""
import os
import queue
import subprocess
import threading
import time

from harness import PYTHON, TestFailure

HERE = os.path.dirname(os.path.abspath(__file__))


class Child:
    """A /usr/bin/python3 child whose stdout lines are collected by a thread, so every read can
    carry a deadline (a blocked readline() cannot)."""

    def __init__(self, script, *args, env=None, stdin=subprocess.PIPE):
        self.name = f"{script} {' '.join(args)}".strip()
        self.proc = subprocess.Popen([PYTHON, os.path.join(HERE, script), *args], stdin=stdin,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines = queue.Queue()
        self.stderr_lines = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr_lines.append), daemon=True).start()

    @staticmethod
    def _pump(stream, sink):
        for line in stream:
            sink(line.rstrip("\n"))
        sink(None)

    def stderr_tail(self, n=15):
        return "\n".join(line for line in self.stderr_lines[-n:] if line is not None)

    def read_line(self, timeout, what):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise TestFailure(f"{self.name}: no {what} within {timeout}s; stderr:\n{self.stderr_tail()}") from None
        if line is None:
            self.lines.put(None)  # keep reporting end of output to later reads
            self.proc.wait(timeout=5)
            raise TestFailure(f"{self.name} exited ({self.proc.returncode}) before printing {what}; "
                              f"stderr:\n{self.stderr_tail()}")
        return line

    def read_prefixed(self, prefix, timeout, what):
        """The first line starting with `prefix`, minus the prefix; other lines are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"{self.name}: no {what} ({prefix!r} line) within {timeout}s; "
                                  f"stderr:\n{self.stderr_tail()}")
            line = self.read_line(left, what)
            if line.startswith(prefix):
                return line[len(prefix):]

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait(self, timeout, what):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"{self.name} did not finish {what} within {timeout}s; "
                              f"stderr:\n{self.stderr_tail()}") from None

    def stop(self):
        if self.proc.poll() is None:
            if self.proc.stdin:
                try:
                    self.proc.stdin.close()  # the servers and helpers here end when stdin closes
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
