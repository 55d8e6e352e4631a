"""The dashboard's live stream (GET /ui/events, Server-Sent Events) under load, with a real daemon:

- twenty browsers that stop reading while a job writes ~50 MB of log do not grow the daemon's
  memory (each stream holds at most one message) and do not hold back a browser that reads: it
  gets the job's last line;
- a stream whose reader took nothing for 30 s is closed by the daemon;
- with no stream open, and with one open on a quiet daemon, the daemon uses no CPU.
"""
import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jobs"))

from daemon_harness import Daemon  # noqa: E402
from harness import PYTHON, TestFailure, check  # noqa: E402

LINES = int(os.environ.get("DDP_TEST_LINES", "400000"))  # ~50 MB of log
STALLED = int(os.environ.get("DDP_TEST_STALLED", "20"))
WRITE_DEADLINE = 30  # dashboard/live_stream.hpp kWriteDeadline


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise TestFailure(f"no VmRSS for {pid}")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def open_stream(port, token, target, rcvbuf=None):
    """Connects and sends the request; returns the socket after the response headers (200 checked)."""
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)  # byte by byte: the body stays in the socket
        if not chunk:
            raise TestFailure(f"{target}: the daemon closed before the headers: {head!r}")
        head += chunk
    check(head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head, f"{target}: {head!r}")
    return s


class EventReader:
    """Reads SSE messages from a socket: (event, data); blocks without an event (retry:, comments) are skipped."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def next(self, deadline):
        while True:
            event, data = self._block(deadline)
            if event is not None:
                return event, data

    def _block(self, deadline):
        while b"\n\n" not in self.buf:
            self.sock.settimeout(max(0.1, deadline - time.monotonic()))
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise TestFailure("the stream ended")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\n\n", 1)
        event, data = None, []
        for line in raw.decode().split("\n"):
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        return event, "\n".join(data)


def main():
    d = Daemon("--listen", "127.0.0.1:0", "--slots", "2")
    try:
        port = d.tcp_port()
        token = d.token()
        pid = d.proc.pid

        # No stream open: an idle daemon does nothing at all.
        time.sleep(1)
        before = cpu_ticks(pid)
        time.sleep(3)
        check(cpu_ticks(pid) - before <= 1, f"an idle daemon used {cpu_ticks(pid) - before} ticks of CPU in 3 s")

        # One stream on a quiet daemon: its first messages, then nothing until the heartbeat.
        quiet = open_stream(port, token, "/ui/events?view=jobs")
        reader = EventReader(quiet)
        seen = {reader.next(time.monotonic() + 10)[0] for _ in range(3)}
        check(seen == {"hello", "jobs", "host"}, f"first messages: {seen}")
        time.sleep(0.5)
        before = cpu_ticks(pid)
        time.sleep(3)
        check(cpu_ticks(pid) - before <= 1, f"a daemon with one quiet stream used {cpu_ticks(pid) - before} ticks in 3 s")
        quiet.close()

        # No braces: the daemon's argv has placeholders ({rank}, …).
        program = (f"import sys\nfor i in range({LINES}):\n"
                   f"    sys.stdout.write('step %d loss=%.6f %s\\n' % (i, 1 / (i + 1), 'x' * 100))\n")
        job = d.submit(f"name: chatty\ncommand: [{PYTHON}, -c, {json.dumps(program)}]\n")
        target = f"/ui/events?view=job&job={job}&rank=0"
        stalled = [open_stream(port, token, target, rcvbuf=4096) for _ in range(STALLED)]
        reader = EventReader(open_stream(port, token, target))
        rss_start = rss_kib(pid)
        rss_peak = rss_start
        last_line = f"step {LINES - 1} "
        deadline = time.monotonic() + 120
        got_last = False
        tail = ""
        while not got_last:
            if time.monotonic() > deadline:
                raise TestFailure(f"the reading stream never got the job's last line; its log ends: {tail[-300:]!r}; "
                                  f"the job: {d.job(job)}")
            event, data = reader.next(deadline)
            if event == "log":
                tail = (tail + json.loads(data)["text"])[-4096:]
                got_last = last_line in tail
            rss_peak = max(rss_peak, rss_kib(pid))
        d.wait_state(job, "SUCCEEDED", 60)
        grown_mib = (rss_peak - rss_start) / 1024
        print(f"daemon RSS {rss_start / 1024:.1f} MiB → peak {rss_peak / 1024:.1f} MiB with {STALLED} stalled "
              f"streams and ~{LINES * 120 / 1e6:.0f} MB of log", flush=True)
        check(grown_mib < 40, f"the daemon grew by {grown_mib:.1f} MiB with {STALLED} stalled streams")

        # The stalled streams: closed by the daemon once they took nothing for the write deadline.
        time.sleep(WRITE_DEADLINE + 3)
        for i, s in enumerate(stalled):
            s.settimeout(10)
            end = time.monotonic() + 20
            while True:
                if time.monotonic() > end:
                    raise TestFailure(f"stalled stream {i} was not closed by the daemon")
                if not s.recv(1 << 20):
                    break  # EOF after what was buffered: the daemon closed it
            s.close()
        print("passed", flush=True)
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
