"""Clients that vanish (SIGKILLed torch 1.13 processes, sockets closed with FIN or RST) while others
wait on a key, or while waiting themselves: the others keep being served, a later SET still wakes
every remaining waiter, and the store releases the dead connections."""
import queue
import signal
import subprocess
import textwrap
import threading
import time

from harness import PYTHON, TestFailure, check, run_tests
from rawstore import LoggedStore, Prober, RawClient, s

STORE = None

# A torch 1.13 client in its own process. It prints a line at each step so the test knows where
# it is; `action` is 'sleep' (hold the connection), 'get:<key>' or 'wait:<key>'.
CLIENT = textwrap.dedent("""
    import datetime, sys, time
    import torch.distributed as dist
    port, action = int(sys.argv[1]), sys.argv[2]
    store = dist.TCPStore("127.0.0.1", port, None, False, datetime.timedelta(seconds=30))
    store.add("joined", 1)
    print("connected", flush=True)
    if action == "sleep":
        time.sleep(120)
    elif action.startswith("get:"):
        print("value=" + store.get(action[4:]).decode(), flush=True)
    elif action.startswith("wait:"):
        print("waiting", flush=True)
        store.wait([action[5:]])
        print("woke", flush=True)
""")


class TorchClient:
    def __init__(self, port, action):
        self.action = action
        self.proc = subprocess.Popen([PYTHON, "-c", CLIENT, str(port), action],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # A thread reads stdout: select() on a buffered pipe misses lines already in the buffer.
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)  # EOF

    def expect_line(self, prefix, timeout):
        """Waits for a stdout line starting with `prefix` (torch's import can take seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise TestFailure(f"torch client ({self.action}) printed no '{prefix}' within {timeout}s; "
                                  f"stderr: {self.proc.stderr.read()[-2000:]}")
            if line is None:
                raise TestFailure(f"torch client ({self.action}) exited with {self.proc.wait()} before "
                                  f"'{prefix}'; stderr: {self.proc.stderr.read()[-2000:]}")
            if line.startswith(prefix):
                return line

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def finish(self, timeout):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise TestFailure(f"torch client ({self.action}) still running {timeout}s after it should end")
        check(rc == 0, f"torch client ({self.action}) exited with {rc}: {self.proc.stderr.read()[-2000:]}")


def wait_for_fds(expected, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        n = STORE.fd_count()
        if n <= expected:
            return n
        if time.monotonic() > deadline:
            raise TestFailure(f"the store still has {n} fds, {expected} expected, {timeout}s after {what}:\n"
                              + STORE.describe_fds())
        time.sleep(0.05)


def test_setter_vanishes_while_others_wait_for_its_key():
    base = STORE.fd_count()
    setter = TorchClient(STORE.port, "sleep")
    torch_waiter = TorchClient(STORE.port, "get:x")
    setter.expect_line("connected", 60)
    torch_waiter.expect_line("connected", 60)
    raw_waiters = [RawClient(STORE.port), RawClient(STORE.port, "C")]
    for w in raw_waiters:
        w.send_wait("/x")
    check(all(w.nothing_pending() for w in raw_waiters), "WAIT on /x answered before /x existed")

    setter.kill()  # it never sets /x
    # Its two connections (main and 1.13's callback connection) go away; the torch waiter's two
    # and the raw waiters' two stay.
    wait_for_fds(base + 4, "the setter was killed")
    prober = RawClient(STORE.port)
    prober.round_trip("after-setter-died")
    check(all(w.nothing_pending() for w in raw_waiters), "a waiter was answered by the setter's death")
    check(torch_waiter.proc.poll() is None, "the torch waiter gave up when the setter died")

    # Someone else sets the key: every remaining waiter wakes.
    prober.set("/x", "from-another")
    for w in raw_waiters:
        w.wait_reply("WAIT on /x after the intended setter died")
        w.round_trip("waiter-after-x")
        w.close()
    check(torch_waiter.expect_line("value=", 20) == "value=from-another", "torch waiter got the wrong value")
    torch_waiter.finish(10)
    prober.close()
    wait_for_fds(base, "every client of this test finished")


def test_waiters_vanish_while_waiting():
    base = STORE.fd_count()
    dying_torch = TorchClient(STORE.port, "wait:y")
    staying_torch = TorchClient(STORE.port, "wait:y")
    dying_torch.expect_line("waiting", 60)
    staying_torch.expect_line("waiting", 60)
    dying_fin, dying_rst, staying = RawClient(STORE.port), RawClient(STORE.port, "C"), RawClient(STORE.port)
    for w in (dying_fin, dying_rst, staying):
        w.send_wait("/y", "/y2")
    # WAIT is the last thing a waiter sends; give the store a moment to register them all.
    time.sleep(0.5)
    check(staying.nothing_pending(), "WAIT answered before its keys existed")

    dying_torch.kill()
    dying_fin.close()
    dying_rst.close(reset=True)
    # Left: the staying torch client's two connections and the staying raw waiter.
    wait_for_fds(base + 3, "three waiters vanished")

    setter = RawClient(STORE.port)
    setter.round_trip("while-waiters-gone")
    setter.set("/y", "1")
    check(staying.nothing_pending(), "WAIT on /y and /y2 answered with /y2 still missing")
    setter.set("/y2", "2")
    staying.wait_reply("WAIT on /y, /y2 after other waiters vanished")
    staying.round_trip("staying-after")
    check(staying_torch.expect_line("woke", 20) == "woke", "the torch waiter did not wake")
    staying_torch.finish(10)
    for c in (staying, setter):
        c.close()
    wait_for_fds(base, "every client of this test finished")


def test_vanish_mid_reply_stream():
    # A client that pipelines many requests and vanishes without reading the replies: the store
    # must not block on it (its writes fail or are dropped), and others are served meanwhile.
    rss_before = STORE.rss_kb()
    greedy = RawClient(STORE.port)
    greedy.set("/big", "b" * 60000)
    burst = b"".join(b"\x02" + (4).to_bytes(8, "little") + b"/big" for _ in range(2000))
    greedy.send(burst)  # 2000 x 60 kB of replies it will never read
    other = RawClient(STORE.port)
    start = time.monotonic()
    other.round_trip("beside-greedy")
    elapsed = time.monotonic() - start
    # The store stops reading from a client whose replies pile up (a few MB), instead of
    # buffering all 120 MB of them.
    grown_mb = (STORE.rss_kb() - rss_before) / 1024
    greedy.close(reset=True)
    other.round_trip("after-greedy")
    other.close()
    check(elapsed < 2.0, f"a round trip beside a client not reading its replies took {elapsed:.2f}s")
    check(grown_mb < 32, f"the store grew by {grown_mb:.0f} MB buffering replies nobody reads")


def test_watcher_that_never_reads_is_cut_off():
    # A 1.13 C++ caller's WATCH_KEY connection is sent a notification (old and new value) on every
    # change of the key, whoever makes it. One that stops reading must not make the store queue
    # them without end: 100 SETs of 1 MB here would queue 200 MB.
    rss_before = STORE.rss_kb()
    watcher = RawClient(STORE.port)
    peer = watcher.addr
    watcher.op("WATCH_KEY", s("/watched"))
    check(watcher.recv_exact(1, "WATCH_KEY registration") == b"\x03", "WATCH_KEY not acknowledged")
    writer = RawClient(STORE.port, timeout=30)
    value = b"w" * (1 << 20)
    for _ in range(100):
        writer.set("/watched", value)
    check(writer.num_keys() >= 1, "NUM_KEYS after the SETs")  # every SET has been applied
    grown_mb = (STORE.rss_kb() - rss_before) / 1024
    check(grown_mb < 100, f"the store grew by {grown_mb:.0f} MB queueing notifications nobody reads")
    STORE.wait_for_log(f"from {peer}:", "not reading", what="a watcher that never reads")
    # What the kernel had already taken may arrive first; then the close (a reset).
    drained = watcher.drain_until_closed("its queue passed the limit")
    check(drained < 64 << 20, f"the watcher still got {drained} bytes after being cut off")
    watcher.close()
    writer.round_trip("after-watcher")
    writer.close()


def main():
    global STORE
    with LoggedStore() as store:
        STORE = store
        prober = Prober(store.port, "A")

        def test_prober_was_served_throughout():
            count = prober.stop()
            print(f"  prober: {count} round trips, slowest {prober.slowest * 1000:.1f} ms")
            STORE.check_alive()

        run_tests([
            test_setter_vanishes_while_others_wait_for_its_key,
            test_waiters_vanish_while_waiting,
            test_vanish_mid_reply_stream,
            test_watcher_that_never_reads_is_cut_off,
            test_prober_was_served_throughout,
        ])


main()
