"""Requests in pieces: one byte per write (TCP_NODELAY, so each byte is its own segment, like the
extreme end of torch 1.13's MSG_MORE splits), a request stalled half-way while others are served,
many requests pipelined in one write, and a real torch 1.13 client's own splits."""
import datetime
import struct
import time

from harness import check, run_tests
from rawstore import VALIDATE, LoggedStore, RawClient, i64, keys, s

STORE = None


def bytewise(client, data, gap=0.0005):
    for b in data:
        client.send(bytes([b]))
        time.sleep(gap)


def test_every_dialect_a_request_one_byte_at_a_time():
    c = RawClient(STORE.port)
    bytewise(c, b"\x00" + s("/split") + s("one byte at a time"))                        # SET
    bytewise(c, b"\x05" + keys("/split"))                                              # WAIT
    c.wait_reply("bytewise WAIT")
    bytewise(c, b"\x02" + s("/split"))                                                 # GET
    check(c.recv_bytes("bytewise GET") == b"one byte at a time", "bytewise SET/GET")
    bytewise(c, b"\x03" + s("/split-n") + i64(41))                                     # ADD
    bytewise(c, b"\x03" + s("/split-n") + i64(1))
    check(c.recv_exact(16, "bytewise ADDs") == i64(41) + i64(42), "bytewise ADD")
    bytewise(c, b"\x01" + s("/split") + s("one byte at a time") + s("swapped"))        # COMPARE_SET
    check(c.recv_bytes("bytewise COMPARE_SET") == b"swapped", "bytewise COMPARE_SET")
    bytewise(c, b"\x04" + keys("/split", "/split-n"))                                  # CHECK
    check(c.recv_exact(1, "bytewise CHECK") == b"\x00", "bytewise CHECK")
    bytewise(c, b"\x08" + s("/split-n"))                                               # DELETE_KEY
    check(c.recv_exact(8, "bytewise DELETE_KEY") == i64(1), "bytewise DELETE_KEY")
    bytewise(c, b"\x06")                                                               # NUM_KEYS
    check(c.recv_exact(8, "bytewise NUM_KEYS") >= i64(1), "bytewise NUM_KEYS")
    c.close()


def test_dialect_c_handshake_one_byte_at_a_time():
    # The dialect is only known after 5 bytes; until then `00` could start a 1.13 SET.
    c = RawClient(STORE.port, "C", connect=False).connect(handshake=False)
    bytewise(c, VALIDATE + b"\x0d" + struct.pack("<I", 0xC0FFEE))
    check(c.recv_exact(4, "bytewise PING") == struct.pack("<I", 0xC0FFEE), "bytewise VALIDATE+PING")
    bytewise(c, b"\x01" + s("/split-c") + s("c"))                                      # SET (C)
    bytewise(c, b"\x03" + s("/split-c"))                                               # GET (C)
    check(c.recv_bytes("bytewise GET in dialect C") == b"c", "bytewise dialect C")
    c.close()


def test_stalled_half_request_blocks_nobody():
    slow = RawClient(STORE.port)
    slow.send(b"\x00" + s("/slow") + struct.pack("<Q", 5) + b"ab")  # 3 of the value's 5 bytes missing
    other = RawClient(STORE.port)
    start = time.monotonic()
    for i in range(20):
        other.round_trip(f"beside-slow-{i}")
    check(time.monotonic() - start < 2.0, "round trips stalled behind a half-sent request")
    time.sleep(0.3)
    slow.send(b"cde")
    slow.op("GET", s("/slow"))
    check(slow.recv_bytes("GET after finishing the stalled SET") == b"abcde", "stalled SET completed wrong")
    slow.close()
    other.close()


def test_pipelined_requests_in_one_write():
    c = RawClient(STORE.port)
    n = 500
    batch = b"".join(b"\x03" + s("/pipe") + i64(1) for _ in range(n))
    c.send(batch)
    replies = c.recv_exact(8 * n, f"{n} pipelined ADD replies")
    got = [struct.unpack_from("<q", replies, 8 * i)[0] for i in range(n)]
    check(got == list(range(1, n + 1)), f"pipelined ADD replies out of order: {got[:5]}...")
    c.close()


def test_pipelined_replies_past_the_high_water_all_arrive():
    # 300 GETs of a 60 kB value in one write: 18 MB of replies, past the 4 MiB at which the store
    # stops parsing a connection's requests until its client reads. Those left unparsed must be
    # answered once the client reads, even though it sends nothing more.
    c = RawClient(STORE.port, timeout=20)
    value = bytes(range(256)) * 240
    c.set("/wide", value)
    n = 300
    c.send(b"".join(b"\x02" + s("/wide") for _ in range(n)))
    time.sleep(0.5)  # let the store hit the high water before anything is read
    for i in range(n):
        got = c.recv_bytes(f"pipelined GET reply {i + 1} of {n}")
        check(got == value, f"pipelined GET reply {i + 1} is wrong ({len(got)} bytes)")
    c.round_trip("after-wide")
    c.close()


def test_real_torch_113_client_splits():
    import torch.distributed as dist
    client = dist.TCPStore("127.0.0.1", STORE.port, None, False, datetime.timedelta(seconds=10))
    client.set("t", "v" * 5000)  # a value large enough to span segments
    check(client.get("t") == b"v" * 5000, "torch get after set")
    check(client.add("tc", 3) == 3 and client.add("tc", -1) == 2, "torch add")
    check(client.compare_set("t", "v" * 5000, "w") == b"w", "torch compare_set")
    client.wait(["t", "tc"], datetime.timedelta(seconds=5))
    check(client.delete_key("tc"), "torch delete_key")


def main():
    global STORE
    with LoggedStore() as store:
        STORE = store
        run_tests([
            test_every_dialect_a_request_one_byte_at_a_time,
            test_dialect_c_handshake_one_byte_at_a_time,
            test_stalled_half_request_blocks_nobody,
            test_pipelined_requests_in_one_write,
            test_pipelined_replies_past_the_high_water_all_arrive,
            test_real_torch_113_client_splits,
        ])


main()
