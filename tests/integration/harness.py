"""Shared helpers for integration tests: start our store, find free ports, run torch clients.

Every wait here has a timeout that says what it was waiting for.
"""
import glob
import json
import os
import queue
import select
import shutil
import socket
import subprocess
import sys
import threading
import time

DDP_LAUNCH = os.environ.get("DDP_LAUNCH", "build/bin/ddp-launch")
# What runs DDP_LAUNCH, when it is not run directly: the Windows tests give Wine's loader here and
# ddp-launch.exe as DDP_LAUNCH, and reuse the store tests as they are (tests/integration/windows).
LAUNCH_PREFIX = os.environ.get("DDP_LAUNCH_PREFIX", "").split()
PYTHON = os.environ.get("DDP_TEST_PYTHON", "/usr/bin/python3")


class TestFailure(AssertionError):
    pass


def check(cond, what):
    if not cond:
        raise TestFailure(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc, timeout=10, close_stdin=False):
    """Stops a child and reaps it: with close_stdin, first closes its stdin (servers and helpers
    in these tests end at EOF) and waits timeout seconds; then SIGTERM, and SIGKILL if it is
    still alive after timeout seconds."""
    if proc.poll() is not None:
        return
    if close_stdin and proc.stdin:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=timeout)
            return
        except subprocess.TimeoutExpired:
            pass
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def listening_addresses(port):
    """The local addresses `ss` shows listening on TCP `port`."""
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout
    return [line.split()[3] for line in out.splitlines() if line.strip()]


class BusyPort:
    """A port this process listens on, for tests of what a busy port does to others: `with BusyPort() as port`."""

    def __enter__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()


def alive(pid):
    """True while /proc/<pid> exists and is not a zombie (a zombie is dead for our purposes)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _ignore_missing(func, path, exc_info):
    if not issubclass(exc_info[0], FileNotFoundError):
        raise exc_info[1]


def remove_path(path):
    """Removes a file or a directory tree that another process may be removing at the same time (a
    killed supervisor's guardian removes its temporary run directory /tmp/ddp-launch-*; a supervisor
    its processes.json): whatever is already gone is fine, any other error is raised."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=_ignore_missing)
        else:
            os.remove(path)
    except FileNotFoundError:
        pass


def remove_matching(pattern):
    """remove_path for each path the glob pattern matches (each may vanish before it is removed)."""
    for path in glob.glob(pattern):
        remove_path(path)


def wait_dead(pids, seconds):
    """Waits up to `seconds` for every pid to be gone; returns the ones still alive."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.01)
    return [p for p in pids if alive(p)]


def wait_until_value(what, probe, timeout, interval=0.2):
    """Calls `probe` until it returns something true, and returns that; TestFailure naming `what`
    when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TestFailure(f"not within {timeout} s: {what}")
        time.sleep(interval)


def children(pid):
    """The pids of a process's direct children (every thread's /proc/<pid>/task/*/children)."""
    out = set()
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(path) as f:
                out |= {int(p) for p in f.read().split()}
        except OSError:
            pass
    return out


def read_events(path):
    """The JSON lines of a supervisor's --events file; while it runs, a last line not yet complete
    (no newline) is left for the next read."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n") and line.strip()]


EVENTS_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "events.schema.json")
_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def run_script_worker(run_dir, name, source, nproc, *flags, timeout=180):
    """`ddp-launch run` of `nproc` ranks of the Python `source` (written to run_dir/name), with
    --events and then `flags`; returns (the CompletedProcess, its events)."""
    worker = os.path.join(run_dir, name)
    with open(worker, "w") as f:
        f.write(source)
    ev = os.path.join(run_dir, "events.jsonl")
    r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", str(nproc), "--events", ev,
                        *flags, worker], capture_output=True, text=True, timeout=timeout)
    return r, read_events(ev)


def _schema_errors(value, schema, root, where):
    """The subset of JSON Schema docs/events.schema.json uses (no jsonschema package here): $ref into
    $defs, type, const, enum, minimum, required, properties, additionalProperties: false, items,
    oneOf, not. Returns one message per violation."""
    if "$ref" in schema:
        return _schema_errors(value, root["$defs"][schema["$ref"].split("/")[-1]], root, where)
    errors = []
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]

        def is_type(t):
            if t == "integer":
                return isinstance(value, int) and not isinstance(value, bool)
            if t == "number":
                return isinstance(value, (int, float)) and not isinstance(value, bool)
            return isinstance(value, _JSON_TYPES[t])
        if not any(is_type(t) for t in types):
            return [f"{where}: {value!r} is not of type {types}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        errors.append(f"{where}: {value!r} is under {schema['minimum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errors += [f"{where}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        for k, v in value.items():
            if k in props:
                errors += _schema_errors(v, props[k], root, f"{where}.{k}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: field {k!r} is not in the schema")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            errors += _schema_errors(v, schema["items"], root, f"{where}[{i}]")
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not _schema_errors(value, s, root, where)]
        if len(matching) != 1:
            errors.append(f"{where}: matches {len(matching)} of the oneOf branches, not 1")
    if "not" in schema and not _schema_errors(value, schema["not"], root, where):
        errors.append(f"{where}: matches what 'not' excludes: {schema['not']}")
    return errors


def check_events_schema(events):
    """Every event of a supervisor's --events file against docs/events.schema.json: its own $defs
    entry (chosen by "event", so a failure names the field, not just 'no oneOf branch')."""
    with open(EVENTS_SCHEMA) as f:
        schema = json.load(f)
    for i, ev in enumerate(events):
        name = ev.get("event")
        check(name in schema["$defs"], f"event {i}: type {name!r} is not in {EVENTS_SCHEMA}: {ev}")
        errors = _schema_errors(ev, {"$ref": f"#/$defs/{name}"}, schema, f"event {i} ({name})")
        errors += _schema_errors(ev, schema, schema, f"event {i} ({name}) against the whole schema")
        check(not errors, "; ".join(errors) + f": {ev}")


class StoreProcess:
    """`ddp-launch store --port 0` as a child; .port once it printed port=<n>."""

    def __init__(self, *extra, host="127.0.0.1", timeout=10.0):
        self.proc = subprocess.Popen(
            [*LAUNCH_PREFIX, DDP_LAUNCH, "store", "--host", host, "--port", "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout
        line = ""
        while True:
            # select before readline: a store that hangs before printing must not block the test.
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                break
            line = self.proc.stdout.readline()
            if line.startswith("port=") or not line:
                break
        if not line.startswith("port="):
            self.proc.kill()
            err = self.proc.stderr.read()
            raise TestFailure(f"store did not print port=<n> within {timeout}s; stderr: {err}")
        self.port = int(line.strip().split("=", 1)[1])
        self.host = host

    def stop(self):
        stop_process(self.proc)
        return self.proc.stderr.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class LineReader:
    """Collects a child's stream line by line on a thread, so tests can wait for a line with a timeout
    (a blocked readline() cannot have one).

    `proc` (the Popen): when the stream ends, the failure says how the process exited. `name` names
    the child in messages; `context` (a callable returning text, e.g. the child's stderr) is added to
    every failure message. Lines are kept in .lines without their newline."""

    def __init__(self, stream, proc=None, name="child", context=None):
        self.lines = []
        self.proc = proc
        self.name = name
        self._context = context
        self._q = queue.Queue()
        self._ended = False
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream):
        for line in stream:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def _details(self):
        text = f"; output so far: {self.tail()}"
        if self._context:
            text += f"; {self._context()}"
        return text

    def _ended_failure(self, what):
        how = "its output ended"
        if self.proc is not None:
            try:
                how = f"exited (rc={self.proc.wait(timeout=5)})"
            except subprocess.TimeoutExpired:
                how = "closed its output (still running)"
        return TestFailure(f"{self.name} {how} while waiting for {what}{self._details()}")

    def next_line(self, timeout, what):
        """The next line; a TestFailure naming `what` on timeout or when the child's output ends."""
        if self._ended:
            raise self._ended_failure(what)
        try:
            line = self._q.get(timeout=max(timeout, 0))
        except queue.Empty:
            raise TestFailure(f"{self.name}: nothing within {timeout:.0f}s while waiting for {what}"
                              f"{self._details()}") from None
        if line is None:
            self._ended = True
            raise self._ended_failure(what)
        self.lines.append(line)
        return line

    def wait_for(self, needle, timeout, what, prefix=False):
        """The first line containing `needle` (prefix=True: starting with it); the lines before it
        are skipped (and kept in .lines)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"{self.name}: no line {'starting with' if prefix else 'containing'} {needle!r} "
                                  f"within {timeout:.0f}s while waiting for {what}{self._details()}")
            try:
                line = self.next_line(left, what)
            except TestFailure:
                if self._ended or deadline - time.monotonic() > 0:
                    raise
                continue
            if line.startswith(needle) if prefix else needle in line:
                return line

    def drain(self):
        """Takes what has arrived so far into .lines, without waiting."""
        while not self._ended:
            try:
                line = self._q.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self._ended = True
            else:
                self.lines.append(line)

    def tail(self, n=6):
        self.drain()
        return " | ".join(self.lines[-n:])


def restarts(test):
    """Marks a case whose Python ranks are restarted: after a failure (--max-restarts >= 1) or a
    c10d membership change. These are the cases --warm-start changes: a restart forks its ranks
    from the warm-start process, which only a run that can restart starts (a budget, or c10d);
    --no-python commands start cold in both modes. The ci-cold test preset (DDP_WARM_START=off,
    DDP_TEST_CASES=restarts) reruns these, and only these, with warm restarts off. A case another
    marked one needs is marked too."""
    test.restarts = True
    return test


def run_tests(tests, waiting=()):
    """Runs test functions in order; prints a line per test and a closing 'N passed, N failed'.

    `waiting`: tests that spend their time waiting on a clock (a watchdog's 60 s floor, a quiet
    phase) rather than on the CPU. Each runs in its own thread, all started first, while `tests`
    run in order; their lines come as they end. They must not share files, ports or global state
    with one another or with `tests`."""
    if os.environ.get("DDP_TEST_CASES") == "restarts":
        marked = [t for t in [*tests, *waiting] if getattr(t, "restarts", False)]
        print(f"DDP_TEST_CASES=restarts: {len(marked)} case(s) marked @restarts, "
              f"{len(tests) + len(waiting) - len(marked)} other(s) skipped", flush=True)
        if not marked:  # a test labelled `restart` whose cases lost their marks would pass here unrun
            print("FAIL: DDP_TEST_CASES=restarts, but no case of this test is marked @restarts: mark its cases "
                  "whose ranks restart, or take the `restart` label off its ctest entry", flush=True)
            sys.exit(1)
        tests = [t for t in tests if getattr(t, "restarts", False)]
        waiting = [t for t in waiting if getattr(t, "restarts", False)]
    results = []  # an error or None per case, appended by any thread
    lock = threading.Lock()

    def one(t):
        start = time.monotonic()
        error = None
        try:
            t()
        except Exception as e:  # noqa: BLE001 - report every failure kind the same way
            error = e
        took = time.monotonic() - start
        with lock:
            results.append(error)
            if error is None:
                print(f"ok   {t.__name__} ({took:.2f}s)", flush=True)
            else:
                print(f"FAIL {t.__name__} ({took:.2f}s): {type(error).__name__}: {error}", flush=True)

    threads = [threading.Thread(target=one, args=(t,), name=t.__name__) for t in waiting]
    for th in threads:
        th.start()
    for t in tests:
        one(t)
    for th in threads:
        th.join()
    failed = sum(1 for e in results if e is not None)
    passed = len(results) - failed
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
