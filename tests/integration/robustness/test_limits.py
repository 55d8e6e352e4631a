"""Limits set by flags: each violation closes only the offender, with a warning that names the limit;
everyone else carries on (a prober doing round trips, a parked WAIT that is released at the end)."""
import time

from harness import check, run_tests
from rawstore import LoggedStore, Prober, RawClient, i64, keys, s

FLAGS = ["--max-key-bytes", "16", "--max-value-bytes", "64", "--max-keys-per-request", "4",
         "--max-request-bytes", "256", "--max-total-bytes", "1024", "--max-connections", "8"]
STORE = None
PROBER = None
GOOD_ADDRS = []
FD_BASE = 0


def offend(client, payload, *needles, what):
    peer = client.addr
    client.send(payload)
    client.expect_closed(what)
    line = STORE.wait_for_log(f"from {peer}:", *needles, what=what)
    check("warn" in line, f"not logged as a warning: {line}")
    client.close()


def test_key_one_byte_over():
    ok = RawClient(STORE.port)
    ok.set("k" * 16, "at the limit")
    check(ok.get("k" * 16) == b"at the limit", "a 16-byte key (at the limit) was not stored")
    offend(ok, b"\x00" + s("k" * 17) + s("v"), "key of 17 bytes exceeds the limit of 16 bytes",
           what="a 17-byte key with --max-key-bytes 16")


def test_value_one_byte_over():
    ok = RawClient(STORE.port)
    ok.set("/v", "x" * 64)
    check(ok.get("/v") == b"x" * 64, "a 64-byte value (at the limit) was not stored")
    offend(ok, b"\x00" + s("/v") + s("x" * 65), "value of 65 bytes exceeds the limit of 64 bytes",
           what="a 65-byte value with --max-value-bytes 64")


def test_keys_per_request():
    ok = RawClient(STORE.port)
    ok.op("CHECK", keys("/a", "/b", "/c", "/d"))
    check(ok.recv_exact(1, "CHECK of 4 keys") == b"\x01", "CHECK of 4 absent keys is not NOT_READY")
    offend(ok, b"\x05" + keys("/a", "/b", "/c", "/d", "/e"), "5 keys in one request exceeds the limit of 4",
           what="a WAIT on 5 keys with --max-keys-per-request 4")


def test_request_bytes():
    # MULTI_SET (dialect C) of 4 keys, each within the key and value limits, 385 bytes in all.
    ok = RawClient(STORE.port, "C")
    body = i64(4) + b"".join(s(f"/ms{i}".ljust(16, "_")) + s("v" * 64) for i in range(4))
    check(1 + len(body) > 256, "test setup: the request should pass --max-request-bytes")
    offend(ok, b"\x0b" + body, "request larger than the limit of 256 bytes",
           what="a 385-byte MULTI_SET with --max-request-bytes 256")
    probe = RawClient(STORE.port)
    check(probe.get("/ms0".ljust(16, "_")) == b"", "part of the refused MULTI_SET was applied")
    probe.close()


def test_multi_get_reply_bytes():
    # MULTI_GET may name one key many times; its reply is held to --max-request-bytes (256) too,
    # or 131072 copies of an 8 MiB value would be a 1 TiB reply.
    ok = RawClient(STORE.port, "C")
    ok.set("/mg", "m" * 64)
    ok.op("MULTI_GET", keys("/mg", "/mg", "/mg"))  # 3 x (8 + 64) = 216 bytes: answered
    for i in range(3):
        check(ok.recv_bytes(f"MULTI_GET value {i}") == b"m" * 64, "MULTI_GET under the limit")
    offend(ok, b"\x0a" + keys("/mg", "/mg", "/mg", "/mg"), "MULTI_GET reply of 288 bytes",
           "limit of 256 bytes", what="a MULTI_GET whose reply passes --max-request-bytes 256")


def test_total_bytes():
    # Each SET holds 16 + 64 = 80 bytes; the store already holds a few small keys from the tests
    # above and the prober. Fill until the writer is refused.
    filler = RawClient(STORE.port)
    peer = filler.addr
    stored = 0
    closed = False
    for i in range(20):
        try:
            filler.set(f"/fill{i:02d}".ljust(16, "_"), "f" * 64)
            filler.num_keys()  # a reply proves the SET was taken
            stored += 1
        except Exception:  # noqa: BLE001 - the refused SET closes the connection
            closed = True
            break
    check(closed, f"{stored} SETs of 80 bytes never passed --max-total-bytes 1024")
    check(stored >= 5, f"refused after only {stored} SETs")
    line = STORE.wait_for_log(f"from {peer}:", "would pass its limit of 1024 bytes", what="store full")
    check("warn" in line, f"not logged as a warning: {line}")
    filler.close()
    other = RawClient(STORE.port)
    check(other.get("/fill00".ljust(16, "_")) == b"f" * 64, "keys stored before the limit were lost")
    # Replacing a value with a shorter one frees room: a full store still takes that.
    other.set("/fill00".ljust(16, "_"), "short")
    check(other.get("/fill00".ljust(16, "_")) == b"short", "overwrite in a full store")
    # Deleting gives the room back (the tests after this one need some).
    for i in range(stored):
        other.op("DELETE_KEY", s(f"/fill{i:02d}".ljust(16, "_")))
        check(other.recv_exact(8, "DELETE_KEY of a filler") == i64(1), f"filler {i} was not stored")
    other.set("/after-delete".ljust(16, "_"), "d" * 64)
    check(other.get("/after-delete".ljust(16, "_")) == b"d" * 64, "SET after deleting in a full store")
    other.close()


def test_connections():
    # The prober and the parked waiter hold two of the eight; open up to the limit, then one more.
    # First let the server see the closes of the earlier tests' connections.
    deadline = time.monotonic() + 5
    while STORE.fd_count() > FD_BASE + 2:
        check(time.monotonic() < deadline, f"store still has {STORE.fd_count() - FD_BASE} connections "
              "open 5s after the earlier tests closed theirs (expected 2)")
        time.sleep(0.05)
    held = []
    first_refused = None
    try:
        for _ in range(8):
            c = RawClient(STORE.port)
            try:
                c.num_keys()
            except Exception:  # noqa: BLE001 - this one was refused: the limit is reached
                first_refused = c.addr
                c.close()
                break
            held.append(c)
        check(len(held) == 6, f"{len(held)} extra connections accepted; the limit leaves room for 6")
        refused = RawClient(STORE.port)
        refused.expect_closed("a connection past --max-connections 8")
        refused.close()
        # Refusals are logged at most once a second: the first one is.
        STORE.wait_for_log(f"refusing a connection from {first_refused}:", "the limit is 8", "--max-connections",
                           what="connection refused over the limit")
        for c in held:
            c.round_trip("held")  # the others carry on
        held.pop().close()
        # Freed a slot: a new connection is served again (the close may take a moment to be seen).
        deadline = time.monotonic() + 5
        while True:
            again = RawClient(STORE.port)
            try:
                again.round_trip("after-free")
                break
            except Exception:  # noqa: BLE001 - still counted as open; retry until the deadline
                again.close()
                check(time.monotonic() < deadline, "no connection accepted within 5s after one closed")
                time.sleep(0.1)
        held.append(again)
    finally:
        for c in held:
            c.close()


def main():
    global STORE, PROBER, FD_BASE
    with LoggedStore(*FLAGS) as store:
        STORE = store
        FD_BASE = store.fd_count()
        # One key, so the prober's own bytes stay far below --max-total-bytes.
        PROBER = Prober(store.port, "A", distinct_keys=1)
        waiter = RawClient(store.port)
        waiter.send_wait("/end")
        check(waiter.nothing_pending(), "WAIT answered before its key existed")
        GOOD_ADDRS.extend([PROBER.client.addr, waiter.addr])

        def test_bystanders_were_served_throughout():
            releaser = RawClient(STORE.port)
            releaser.set("/end", "1")
            waiter.wait_reply("the WAIT parked before every violation")
            releaser.close()
            waiter.round_trip("waiter")
            waiter.close()
            count = PROBER.stop()
            print(f"  prober: {count} round trips, slowest {PROBER.slowest * 1000:.1f} ms")
            STORE.check_alive()
            for good in GOOD_ADDRS:
                check(not any(f"from {good}:" in line for line in STORE.log_lines()),
                      f"a well-behaved peer {good} was warned about")

        run_tests([
            test_key_one_byte_over,
            test_value_one_byte_over,
            test_keys_per_request,
            test_request_bytes,
            test_multi_get_reply_bytes,
            test_total_bytes,
            test_connections,
            test_bystanders_were_served_throughout,
        ])


main()
