"""Malformed frames against `ddp-launch store`: each closes only the offending connection, with a
warning on stderr naming the peer (ip:port) and the problem, while a well-behaved client (a raw
prober in a thread, a connection holding a WAIT, and a real torch 1.13 client) keeps working."""
import datetime
import struct

from harness import check, run_tests
from rawstore import VALIDATE, LoggedStore, Prober, RawClient, i64, s, u64

STORE = None
PROBER = None
PROBER_ADDR = None


def offend(payload, *needles, dialect="A", what):
    """Opens a connection, sends `payload`, expects the server to close it and to warn with the
    peer's address and every needle."""
    bad = RawClient(STORE.port, dialect)
    peer = bad.addr
    bad.send(payload)
    bad.expect_closed(what)
    line = STORE.wait_for_log("closing store connection", f"from {peer}:", *needles, what=what)
    check("warn" in line, f"not logged as a warning: {line}")
    bad.close()


def test_unknown_opcode_dialect_a():
    offend(b"\x09", "unknown opcode 9", "the torch 1.13/2.0 protocol", what="opcode 9 in dialect A")


def test_unknown_opcode_dialect_c():
    # 19 is one past BARRIER, the last opcode any torch version sends.
    offend(b"\x13", "unknown opcode 19", "the torch >= 2.2 protocol", dialect="C", what="opcode 19 in dialect C")


def test_key_length_over_the_limit():
    offend(b"\x00" + u64(8193) + b"k" * 8193 + s("v"), "SET", "key of 8193 bytes exceeds the limit of 8192",
           what="a SET with an 8193-byte key")


def test_huge_declared_length_with_no_bytes_closes_at_once():
    # Nothing follows the length: a server that waited for (or allocated) 2^62 bytes would hang.
    offend(b"\x00" + u64(1 << 62), "key of 4611686018427387904 bytes exceeds the limit",
           what="a SET declaring a 2^62-byte key")
    offend(b"\x00" + s("/k") + u64(1 << 40), "value of 1099511627776 bytes exceeds the limit of 8388608",
           what="a SET declaring a 1 TiB value")
    offend(b"\x05" + u64(1 << 63), "keys in one request exceeds the limit of 131072",
           what="a WAIT declaring 2^63 keys")


def test_validate_with_wrong_magic_is_read_as_legacy():
    # `00 de ad be ef`: not VALIDATE, so dialect A: a SET whose key length is 0xefbeadde.
    offend(b"\x00" + struct.pack("<I", 0xEFBEADDE) + b"\x00" * 4, "SET", "key of 4022250974 bytes",
           what="a VALIDATE with the wrong magic")


def test_second_validate_closes():
    bad = RawClient(STORE.port, "C")  # VALIDATE and PING already done and answered
    peer = bad.addr
    bad.send(VALIDATE)
    bad.expect_closed("a second VALIDATE")
    STORE.wait_for_log(f"from {peer}:", "VALIDATE sent twice", what="second VALIDATE")
    bad.close()


def test_truncated_request_then_close():
    # Half a SET, then FIN: the connection is gone; the server must not apply a partial SET, must
    # not wait for the rest, and says the request was cut short.
    bad = RawClient(STORE.port)
    peer = bad.addr
    bad.send(b"\x00" + s("/truncated") + u64(100) + b"only-part")
    bad.close()
    STORE.wait_for_log(f"{peer}", "in the middle of a request", what="a truncated request then close")
    probe = RawClient(STORE.port)
    check(probe.get("/truncated") == b"", "a truncated SET was applied")
    probe.close()


def test_garbage_bytes():
    # Things that do reach store ports: an HTTP probe, a TLS ClientHello, random junk.
    offend(b"GET / HTTP/1.1\r\nHost: store\r\n\r\n", "unknown opcode 71", what="an HTTP request")
    offend(bytes.fromhex("1603010200010001fc0303") + b"\x00" * 32, "unknown opcode 22", what="a TLS ClientHello")
    offend(bytes(range(255, 0, -1)), "unknown opcode 255", what="descending junk bytes")


def test_garbage_after_valid_requests_keeps_their_effect():
    bad = RawClient(STORE.port)
    peer = bad.addr
    # Two good requests and a bad one in one write: the good ones are applied, then the close.
    bad.send(b"\x00" + s("/before-junk") + s("kept") + b"\x03" + s("/junk-counter") + i64(5) + b"\xee")
    check(bad.recv_exact(8, "ADD before the junk") == i64(5), "ADD before the junk not answered")
    bad.expect_closed("junk after two valid requests")
    STORE.wait_for_log(f"from {peer}:", "unknown opcode 238", what="junk after valid requests")
    probe = RawClient(STORE.port)
    check(probe.get("/before-junk") == b"kept", "the SET before the junk was lost")
    probe.close()


def test_bystanders_survive_every_violation():
    """Runs last: the prober, a parked WAIT and a torch client lived through all of the above."""
    import torch.distributed as dist
    waiter = RawClient(STORE.port)
    waiter_addr = waiter.addr
    waiter.send_wait("/released-at-the-end")
    check(waiter.nothing_pending(), "WAIT answered before its key existed")
    offend(b"\xff", "unknown opcode 255", what="a violation while a WAIT is parked")
    client = dist.TCPStore("127.0.0.1", STORE.port, None, False, datetime.timedelta(seconds=10))
    client.set("released-at-the-end", "yes")  # torch prefixes '/'
    waiter.wait_reply("the parked WAIT after another connection's violation")
    check(client.get("released-at-the-end") == b"yes", "torch client round trip")
    waiter.round_trip("waiter-after")
    waiter.close()
    count = PROBER.stop()
    print(f"  prober completed {count} round trips during the malformed-frame tests; "
          f"slowest {PROBER.slowest * 1000:.1f} ms")
    STORE.check_alive()
    # Warnings named the offenders only.
    for good in (PROBER_ADDR, waiter_addr):
        check(not any(f"from {good}:" in line for line in STORE.log_lines()), f"a well-behaved peer {good} was warned about")


def main():
    global STORE, PROBER, PROBER_ADDR
    with LoggedStore() as store:
        STORE = store
        PROBER = Prober(store.port, "A")
        PROBER_ADDR = PROBER.client.addr
        run_tests([
            test_unknown_opcode_dialect_a,
            test_unknown_opcode_dialect_c,
            test_key_length_over_the_limit,
            test_huge_declared_length_with_no_bytes_closes_at_once,
            test_validate_with_wrong_magic_is_read_as_legacy,
            test_second_validate_closes,
            test_truncated_request_then_close,
            test_garbage_bytes,
            test_garbage_after_valid_requests_keeps_their_effect,
            test_bystanders_survive_every_violation,
        ])


main()
