"""Queues over raw sockets (dialect C). Debian's torch 2.14 is built without libuv and its client
refuses queue calls before sending anything, so no stock client can reach our queue code. The
requests below replay, byte for byte, what a real 2.14 client sent with its libuv flag forced on
(shared/reference/torch214/captures/fakeq214.decoded.txt, PING nonce 18783); the replies must be
what torch's libuv server sends: QUEUE_POP answers i64 queue length before the pop, then the
value when that length is > 0; a blocking pop is WAIT on the key, then QUEUE_POP.
"""
import socket
import struct
import time

from harness import StoreProcess, check, run_tests

HELLO = bytes.fromhex("00cef7853c" "0d5f490000")  # VALIDATE magic + PING(18783), one segment
NONCE_ECHO = bytes.fromhex("5f490000")
PING = bytes.fromhex("0d5f490000")

QUEUE_LEN_Q = bytes.fromhex("10" "0200000000000000" "2f71")
QUEUE_PUSH_Q_A = bytes.fromhex("0e" "0200000000000000" "2f71" "0100000000000000" "61")
QUEUE_PUSH_Q_BB = bytes.fromhex("0e" "0200000000000000" "2f71" "0200000000000000" "6262")
QUEUE_POP_Q = bytes.fromhex("0f" "0200000000000000" "2f71")
WAIT_Q = bytes.fromhex("06" "0100000000000000" "0200000000000000" "2f71")
CHECK_Q = bytes.fromhex("05" "0100000000000000" "0200000000000000" "2f71")
GETNUMKEYS = bytes.fromhex("07")
CANCEL_WAIT = bytes.fromhex("0c")
WAIT_WQ = bytes.fromhex("06" "0100000000000000" "0300000000000000" "2f7771")
QUEUE_PUSH_WQ_LATE = bytes.fromhex("0e" "0300000000000000" "2f7771" "0400000000000000" "6c617465")
QUEUE_POP_WQ = bytes.fromhex("0f" "0300000000000000" "2f7771")
SET_PLAIN_V = bytes.fromhex("01" "0600000000000000" "2f706c61696e" "0100000000000000" "76")
QUEUE_PUSH_PLAIN_Q = bytes.fromhex("0e" "0600000000000000" "2f706c61696e" "0100000000000000" "71")
WAIT_PLAIN = bytes.fromhex("06" "0100000000000000" "0600000000000000" "2f706c61696e")
GET_PLAIN = bytes.fromhex("03" "0600000000000000" "2f706c61696e")
QUEUE_LEN_PLAIN = bytes.fromhex("10" "0600000000000000" "2f706c61696e")
QUEUE_POP_PLAIN = bytes.fromhex("0f" "0600000000000000" "2f706c61696e")

STOP_WAITING = b"\x00"
WAIT_CANCELED = b"\x01"
READY = b"\x00"


def i64(n):
    return struct.pack("<q", n)


def blob(b):
    return i64(len(b)) + b


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(HELLO)
        check(self.recv(4, "PING nonce echo") == NONCE_ECHO, "PING nonce not echoed")

    def recv(self, n, what, timeout=5.0):
        self.sock.settimeout(timeout)
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except socket.timeout:
                raise AssertionError(f"no {what} within {timeout}s (got {data.hex()})") from None
            check(chunk, f"server closed the connection while we waited for {what} (got {data.hex()})")
            data += chunk
        return data

    def ask(self, request, reply_len, what):
        self.sock.sendall(request)
        return self.recv(reply_len, what)

    def silent_for(self, seconds, what):
        """True when nothing arrives for `seconds`."""
        self.sock.settimeout(seconds)
        try:
            data = self.sock.recv(1)
        except socket.timeout:
            return True
        raise AssertionError(f"{what}: unexpected byte {data.hex() or 'EOF'}")

    def close(self):
        self.sock.close()


def test_push_len_pop_as_captured():
    with StoreProcess() as store:
        c = Conn(store.port)
        check(c.ask(QUEUE_LEN_Q, 8, "QUEUE_LEN reply") == i64(0), "length of a never-pushed queue")
        keys_before = c.ask(GETNUMKEYS, 8, "GETNUMKEYS reply")
        # Pushes have no reply: pipelined with the next request exactly as the client sent them.
        check(c.ask(QUEUE_PUSH_Q_A + QUEUE_PUSH_Q_BB + QUEUE_LEN_Q, 8, "QUEUE_LEN reply") == i64(2), "length after 2 pushes")
        check(c.ask(GETNUMKEYS, 8, "GETNUMKEYS reply") == keys_before, "queue items counted as keys")
        check(c.ask(CHECK_Q, 1, "CHECK reply") == READY, "CHECK of a non-empty queue key is not READY")
        check(c.ask(QUEUE_POP_Q, 8 + 8 + 1, "QUEUE_POP reply") == i64(2) + blob(b"a"),
              "non-blocking pop: i64 length before the pop, then the first value")
        # block=True: WAIT first, then the pop.
        check(c.ask(WAIT_Q, 1, "WAIT reply") == STOP_WAITING, "WAIT on a non-empty queue did not return at once")
        check(c.ask(QUEUE_POP_Q, 8 + 8 + 2, "QUEUE_POP reply") == i64(1) + blob(b"bb"), "blocking pop of the second value")
        check(c.ask(QUEUE_LEN_Q, 8, "QUEUE_LEN reply") == i64(0), "length after popping everything")
        check(c.ask(QUEUE_POP_Q, 8, "QUEUE_POP reply") == i64(0), "pop of an empty queue must answer i64 0 (QueueEmptyError)")
        check(c.silent_for(0.2, "after empty pop"), "extra bytes after the empty pop")
        c.close()


def test_blocking_pop_on_empty_queue_times_out_with_cancel_wait():
    with StoreProcess() as store:
        c = Conn(store.port)
        c.sock.sendall(WAIT_Q)
        check(c.silent_for(0.5, "WAIT on an empty queue"), "WAIT on an empty queue answered")
        check(c.ask(CANCEL_WAIT, 1, "CANCEL_WAIT reply") == WAIT_CANCELED, "CANCEL_WAIT not answered 01")
        check(c.silent_for(0.2, "after CANCEL_WAIT"), "extra bytes after CANCEL_WAIT")
        check(c.ask(QUEUE_LEN_Q, 8, "QUEUE_LEN reply") == i64(0), "connection unusable after CANCEL_WAIT")
        c.close()


def test_push_from_another_client_wakes_a_blocked_pop():
    with StoreProcess() as store:
        popper, pusher = Conn(store.port), Conn(store.port)
        popper.sock.sendall(WAIT_WQ)
        check(popper.silent_for(0.2, "WAIT before the push"), "WAIT answered before anything was pushed")
        start = time.monotonic()
        pusher.sock.sendall(QUEUE_PUSH_WQ_LATE)
        check(popper.recv(1, "STOP_WAITING after the push") == STOP_WAITING, "waiter not released by the push")
        check(time.monotonic() - start < 1.0, "push took over a second to wake the waiter")
        check(popper.ask(QUEUE_POP_WQ, 8 + 8 + 4, "QUEUE_POP reply") == i64(1) + blob(b"late"), "popped value")
        popper.close()
        pusher.close()


def test_one_push_wakes_one_waiter():
    with StoreProcess() as store:
        a, b, pusher = Conn(store.port), Conn(store.port), Conn(store.port)
        for c in (a, b):
            # A PING answered behind the WAIT proves the WAIT is registered before the push.
            check(c.ask(WAIT_WQ + PING, 4, "PING echo behind a WAIT") == NONCE_ECHO, "PING behind a WAIT")
        pusher.sock.sendall(QUEUE_PUSH_WQ_LATE)
        woken = []
        for name, c in (("a", a), ("b", b)):
            c.sock.settimeout(0.5)
            try:
                woken.append((name, c.sock.recv(1)))
            except socket.timeout:
                pass
        check([w[1] for w in woken] == [STOP_WAITING], f"one push woke {woken}, expected exactly one waiter")
        still = b if woken[0][0] == "a" else a
        pusher.sock.sendall(QUEUE_PUSH_WQ_LATE)
        check(still.recv(1, "STOP_WAITING after the second push") == STOP_WAITING, "second push did not wake the other waiter")
        for c in (a, b, pusher):
            c.close()


def test_queue_and_plain_key_of_one_name_coexist():
    with StoreProcess() as store:
        c = Conn(store.port)
        c.sock.sendall(SET_PLAIN_V + QUEUE_PUSH_PLAIN_Q)
        check(c.ask(WAIT_PLAIN, 1, "WAIT reply") == STOP_WAITING, "WAIT on the plain key")
        check(c.ask(GET_PLAIN, 9, "GET reply") == blob(b"v"), "the plain value changed by a push of the same name")
        check(c.ask(QUEUE_LEN_PLAIN, 8, "QUEUE_LEN reply") == i64(1), "queue length of the shared name")
        check(c.ask(QUEUE_POP_PLAIN, 17, "QUEUE_POP reply") == i64(1) + blob(b"q"), "queue item of the shared name")
        c.close()


run_tests([
    test_push_len_pop_as_captured,
    test_blocking_pop_on_empty_queue_times_out_with_cancel_wait,
    test_push_from_another_client_wakes_a_blocked_pop,
    test_one_push_wakes_one_waiter,
    test_queue_and_plain_key_of_one_name_coexist,
])
