"""A bare dialect-A (torch 1.13) store connection for requests the 1.13 Python binding cannot send
(CHECK, WATCH_KEY) or keys it would prefix (`init/`). Wire format: spec §2 and §4."""
import socket
import struct
import time

RAW_TIMEOUT_S = 3.0
OP_ADD, OP_CHECK, OP_WATCH_KEY = 3, 4, 7


def wire_str(b):
    return struct.pack("<Q", len(b)) + b


def check_request(wire_keys):
    return bytes([OP_CHECK]) + struct.pack("<Q", len(wire_keys)) + b"".join(wire_str(k) for k in wire_keys)


def add_request(wire_key, delta):
    return bytes([OP_ADD]) + wire_str(wire_key) + struct.pack("<q", delta)


def watch_request(wire_key):
    return bytes([OP_WATCH_KEY]) + wire_str(wire_key)


class RawConnection:
    """Replies come back as hex strings, or as "short <what> ..." when the server sent too little
    within RAW_TIMEOUT_S, so a misbehaving server shows up as a recorded outcome, not a hang."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=RAW_TIMEOUT_S)
        self.buf = b""

    def request(self, payload, reply_len):
        self.sock.sendall(payload)
        return self.read_exact(reply_len, "reply")

    def add(self, wire_key, delta):
        reply = self.request(add_request(wire_key, delta), 8)
        return reply if reply.startswith("short") else struct.unpack("<q", bytes.fromhex(reply))[0]

    def read_exact(self, n, what):
        deadline = time.monotonic() + RAW_TIMEOUT_S
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(4096)
            except socket.timeout:
                break
            if not chunk:
                break
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        if len(out) < n:
            return f"short {what} after {RAW_TIMEOUT_S}s: {out.hex()}"
        return out.hex()

    def read_watch_event(self):
        """u8 type | str key | bytes old | bytes new (spec §5.9), as space-separated hex fields."""
        parts = [self.read_exact(1, "watch event type")]
        for field in ("key", "old value", "new value"):
            n_hex = self.read_exact(8, f"watch event {field} length")
            if n_hex.startswith("short"):
                return " ".join(parts + [n_hex])
            parts.append(self.read_exact(struct.unpack("<Q", bytes.fromhex(n_hex))[0], f"watch event {field}"))
        return " ".join(parts)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
