"""Helpers for the torch 1.13 tests: child processes whose output is read with deadlines."""
import os
import subprocess
import threading

from harness import PYTHON, LineReader, TestFailure, stop_process

HERE = os.path.dirname(os.path.abspath(__file__))


class Child:
    """A /usr/bin/python3 child whose stdout is read line by line with deadlines (harness.LineReader);
    failure messages carry the tail of its stderr."""

    def __init__(self, script, *args, env=None, stdin=subprocess.PIPE):
        self.name = f"{script} {' '.join(args)}".strip()
        self.proc = subprocess.Popen([PYTHON, os.path.join(HERE, script), *args], stdin=stdin,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.stderr_lines = []
        threading.Thread(target=self._pump_stderr, daemon=True).start()
        self.out = LineReader(self.proc.stdout, self.proc, self.name,
                              context=lambda: f"stderr:\n{self.stderr_tail()}")

    def _pump_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line.rstrip("\n"))

    def stderr_tail(self, n=15):
        return "\n".join(self.stderr_lines[-n:])

    def read_line(self, timeout, what):
        return self.out.next_line(timeout, what)

    def read_prefixed(self, prefix, timeout, what):
        """The first line starting with `prefix`, minus the prefix; other lines are skipped."""
        return self.out.wait_for(prefix, timeout, what, prefix=True)[len(prefix):]

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
        stop_process(self.proc, timeout=5, close_stdin=True)  # the servers and helpers here end at EOF

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
