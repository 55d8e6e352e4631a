"""Big-request scenarios of the store benchmark (run_store_bench.py), in Python: raw sockets speaking
torch 1.13's numbering, which ours and torch 1.13's server both read.

- bigreq <MB>: one connection sends a CHECK whose key list is <MB> MB (4 KiB keys; the kernel hands
  it to the server in pieces) and waits for the answer. Time: first byte sent to the answer.
- bigwait <K>x<MB>: K connections each stream such a CHECK at once while one more connection does
  SET+GET round trips; the result is that client's slowest round trip (how long the big requests
  stall everyone else) and the server's peak RSS (VmHWM).

Every wait has a timeout; a server that closes a connection is reported as such.
"""
import socket
import struct
import threading
import time

CHECK, SET, GET = 4, 0, 2  # torch 1.13 opcodes
KEY_BYTES = 4096


def check_request(megabytes):
    """A CHECK of about `megabytes` MB of distinct absent keys: answered NOT_READY at once."""
    n = max(1, int(megabytes * 1e6) // (KEY_BYTES + 8))
    body = bytearray(struct.pack("<Q", n))
    for i in range(n):
        key = f"/big/{i:012d}".encode().ljust(KEY_BYTES, b"k")
        body += struct.pack("<Q", len(key)) + key
    return bytes([CHECK]) + bytes(body)


def recv_exact(sock, n, deadline, what):
    buf = b""
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no answer to {what} in time ({len(buf)}/{n} bytes)")
        sock.settimeout(left)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"the server closed the connection before answering {what}")
        buf += chunk
    return buf


def send_and_answer(port, request, timeout):
    """Seconds from the first byte of `request` to its one-byte answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.monotonic()
        deadline = start + timeout
        sock.sendall(request)
        recv_exact(sock, 1, deadline, "the big CHECK")
        return time.monotonic() - start


def peak_rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def run_bigreq(port, megabytes, timeout):
    request = check_request(megabytes)
    try:
        seconds = send_and_answer(port, request, timeout)
    except (OSError, TimeoutError, ConnectionError) as e:
        return {"outcome": "failed", "first_error": str(e), "errors": 1}
    return {"outcome": "complete", "seconds": seconds, "bytes": len(request), "errors": 0}


def run_bigwait(port, clients, megabytes, timeout, server_pid):
    request = check_request(megabytes)
    errors = []
    stop = threading.Event()
    rtts = []

    def big():
        try:
            send_and_answer(port, request, timeout)
        except (OSError, TimeoutError, ConnectionError) as e:
            errors.append(f"big client: {e}")

    def prober():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                key = b"/probe"
                i = 0
                while not stop.is_set():
                    value = str(i).encode()
                    start = time.monotonic()
                    sock.sendall(bytes([SET]) + struct.pack("<Q", len(key)) + key + struct.pack("<Q", len(value))
                                 + value + bytes([GET]) + struct.pack("<Q", len(key)) + key)
                    deadline = start + timeout
                    n = struct.unpack("<Q", recv_exact(sock, 8, deadline, "the prober's GET"))[0]
                    got = recv_exact(sock, n, deadline, "the prober's GET")
                    rtts.append(time.monotonic() - start)
                    if got != value:
                        errors.append(f"prober: GET returned {got[:20]!r}, not {value!r}")
                        return
                    i += 1
                    time.sleep(0.005)
        except (OSError, TimeoutError, ConnectionError) as e:
            errors.append(f"prober: {e}")

    probe = threading.Thread(target=prober, daemon=True)
    probe.start()
    time.sleep(0.05)
    start = time.monotonic()
    threads = [threading.Thread(target=big, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    elapsed = time.monotonic() - start
    stop.set()
    probe.join(timeout + 5)
    result = {"outcome": "complete" if not errors else "failed", "errors": len(errors),
              "seconds": elapsed, "worst_rtt_s": max(rtts) if rtts else None, "round_trips": len(rtts),
              "peak_rss_mb": peak_rss_mb(server_pid)}
    if errors:
        result["first_error"] = errors[0]
    return result


def run(scenario, port, timeout, server_pid):
    kind, size = scenario.split()
    if kind == "bigreq":
        return run_bigreq(port, float(size.rstrip("MB")), timeout)
    clients, megabytes = size.rstrip("MB").split("x")
    return run_bigwait(port, int(clients), float(megabytes), timeout, server_pid)
