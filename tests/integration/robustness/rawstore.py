"""Raw-socket TCPStore clients and a store whose stderr is read while it runs, for the robustness
tests. Raw sockets let a test send exactly the bytes it means (malformed frames, 1-byte writes,
limits just past the edge), which no torch client would.

Every blocking call has a timeout, and the error says what was awaited.
"""
import re
import socket
import struct
import threading
import time

from harness import StoreProcess, TestFailure, check

# Opcodes (spec §4). Dialect C is A/B shifted up by one with VALIDATE at 0.
A = {"SET": 0, "COMPARE_SET": 1, "GET": 2, "ADD": 3, "CHECK": 4, "WAIT": 5, "NUM_KEYS": 6,
     "WATCH_KEY": 7, "DELETE_KEY": 8}
C = {"VALIDATE": 0, "SET": 1, "COMPARE_SET": 2, "GET": 3, "ADD": 4, "CHECK": 5, "WAIT": 6,
     "NUM_KEYS": 7, "DELETE_KEY": 8, "APPEND": 9, "MULTI_GET": 10, "MULTI_SET": 11,
     "CANCEL_WAIT": 12, "PING": 13}
VALIDATE = b"\x00" + struct.pack("<I", 0x3C85F7CE)


def u64(n):
    return struct.pack("<Q", n)


def i64(n):
    return struct.pack("<q", n)


def s(b):
    """A length-prefixed string field."""
    if isinstance(b, str):
        b = b.encode()
    return u64(len(b)) + b


def keys(*ks):
    return u64(len(ks)) + b"".join(s(k) for k in ks)


class RawClient:
    """One connection speaking dialect A (torch 1.13 numbering) or C (VALIDATE + PING first)."""

    def __init__(self, port, dialect="A", timeout=10.0, connect=True):
        self.port = port
        self.dialect = dialect
        self.ops = A if dialect == "A" else C
        self.timeout = timeout
        self.sock = None
        if connect:
            self.connect()

    def connect(self, handshake=True):
        """Connects; in dialect C also sends VALIDATE and PING unless `handshake` is False."""
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.dialect == "C" and handshake:
            self.sock.sendall(VALIDATE)
            self.ping(0x1234)
        return self

    @property
    def addr(self):
        """'127.0.0.1:<port>' as the server names this peer."""
        host, port = self.sock.getsockname()[:2]
        return f"{host}:{port}"

    def send(self, data):
        self.sock.sendall(data)

    def op(self, name, body=b""):
        self.sock.sendall(bytes([self.ops[name]]) + body)

    def recv_exact(self, n, what):
        buf = b""
        deadline = time.monotonic() + self.timeout
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"no reply within {self.timeout}s waiting for {what} "
                                  f"({len(buf)}/{n} bytes arrived)")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(n - len(buf))
            except socket.timeout:
                continue
            if not chunk:
                raise TestFailure(f"connection closed by the server while waiting for {what}")
            buf += chunk
        return buf

    def recv_bytes(self, what):
        n = struct.unpack("<Q", self.recv_exact(8, what))[0]
        return self.recv_exact(n, what)

    # ---- operations, with their replies ----
    def set(self, k, v):
        self.op("SET", s(k) + s(v))

    def get(self, k):
        self.op("GET", s(k))
        return self.recv_bytes(f"GET {k!r}")

    def add(self, k, delta):
        self.op("ADD", s(k) + i64(delta))
        return struct.unpack("<q", self.recv_exact(8, f"ADD {k!r}"))[0]

    def num_keys(self):
        self.op("NUM_KEYS")
        return struct.unpack("<q", self.recv_exact(8, "NUM_KEYS"))[0]

    def send_wait(self, *ks):
        """Sends WAIT without reading the reply (the caller decides when it should come)."""
        self.op("WAIT", keys(*ks))

    def wait_reply(self, what):
        check(self.recv_exact(1, what) == b"\x00", f"{what}: reply is not STOP_WAITING")

    def ping(self, nonce):
        self.op("PING", struct.pack("<I", nonce))
        got = struct.unpack("<I", self.recv_exact(4, "PING"))[0]
        check(got == nonce, f"PING echoed {got:#x} instead of {nonce:#x}")

    def round_trip(self, tag):
        """A SET then a GET of the same key: proves this connection is served."""
        key, value = f"/rt/{tag}", f"value-{tag}"
        self.set(key, value)
        got = self.get(key)
        check(got == value.encode(), f"round trip {tag}: GET returned {got!r}")

    def nothing_pending(self, within=0.2):
        """True when no bytes (and no close) arrive within `within` seconds."""
        self.sock.settimeout(within)
        try:
            data = self.sock.recv(1)
        except socket.timeout:
            return True
        finally:
            self.sock.settimeout(self.timeout)
        raise TestFailure(f"unexpected {'bytes ' + data.hex() if data else 'close'} from the server")

    def expect_closed(self, what, timeout=5.0):
        """The server closes this connection (EOF or reset) within `timeout`; no reply bytes first."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"server did not close the connection within {timeout}s after {what}")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return
            if not data:
                return
            raise TestFailure(f"after {what} the server sent {data[:32].hex()} instead of closing")

    def drain_until_closed(self, what, timeout=10.0):
        """Reads and discards whatever arrives until the server closes (EOF or reset); returns
        how many bytes came first."""
        deadline = time.monotonic() + timeout
        got = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"server did not close the connection within {timeout}s after {what} "
                                  f"({got} bytes read meanwhile)")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except (ConnectionResetError, BrokenPipeError):
                return got
            if not data:
                return got
            got += len(data)

    def close(self, reset=False):
        if self.sock is None:
            return
        if reset:  # RST instead of FIN, like a process killed with unread data
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()
        self.sock = None


class LoggedStore(StoreProcess):
    """`ddp-launch store` whose stderr lines are collected as they come, so a test can wait for
    the warning a violation should produce."""

    def __init__(self, *extra, **kw):
        super().__init__(*extra, **kw)
        self.lines = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    def wait_for_log(self, *needles, timeout=5.0, what=None):
        """The first stderr line containing every needle (plain substrings or compiled regexes)."""
        def matches(line):
            return all(n.search(line) if isinstance(n, re.Pattern) else n in line for n in needles)

        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    if matches(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    tail = "\n  ".join(self.lines[-10:])
                    raise TestFailure(f"no stderr line with {needles!r} within {timeout}s "
                                      f"({what or 'expected warning'}); last lines:\n  {tail}")
                self._cond.wait(left)

    def log_lines(self):
        with self._cond:
            return list(self.lines)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - kill whatever state it is in
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        return "\n".join(self.log_lines())

    def fd_count(self):
        import os
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def describe_fds(self):
        """The store's fds and its TCP connections, for failure messages."""
        import os
        import subprocess
        fd_dir = f"/proc/{self.proc.pid}/fd"
        fds = []
        for name in sorted(os.listdir(fd_dir), key=int):
            try:
                fds.append(f"{name}->{os.readlink(os.path.join(fd_dir, name))}")
            except OSError:
                pass
        ss = subprocess.run(["ss", "-tanp", f"( sport = :{self.port} )"], capture_output=True, text=True).stdout
        return "  fds: " + " ".join(fds) + "\n  sockets:\n" + ss

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise TestFailure("no VmRSS in /proc/<store>/status")

    def check_alive(self):
        check(self.proc.poll() is None, f"the store exited with {self.proc.returncode}; stderr:\n"
              + "\n".join(self.log_lines()[-20:]))


class Prober:
    """A well-behaved client in a thread doing round trips (its own keys) until stopped; counts
    them and records the first failure and the slowest round trip."""

    def __init__(self, port, dialect="A", tag="probe", distinct_keys=50):
        self.client = RawClient(port, dialect)
        self.tag = tag
        self.distinct_keys = distinct_keys
        self.count = 0
        self.error = None
        self.slowest = 0.0
        # One round trip before the thread starts: once the constructor returns, the store has
        # accepted this connection (tests count the store's fds from there).
        self.client.round_trip(f"{tag}-start")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                start = time.monotonic()
                self.client.round_trip(f"{self.tag}-{self.count % self.distinct_keys}")
                self.count += 1
                self.slowest = max(self.slowest, time.monotonic() - start)
                time.sleep(0.002)
        except Exception as e:  # noqa: BLE001 - reported by stop()
            self.error = e

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=15)
        check(not self._thread.is_alive(), f"{self.tag}: prober thread did not stop within 15s")
        check(self.error is None, f"{self.tag}: the well-behaved client failed: {self.error}")
        check(self.count > 0, f"{self.tag}: the well-behaved client completed no round trip")
        self.client.close()
        return self.count
