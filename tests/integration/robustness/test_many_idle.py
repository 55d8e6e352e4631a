"""10 000 idle connections at once (torch 1.13 holds two per worker, one idle for life): the store
keeps serving a working client with low latency, keeps every idle connection open, and when they
close releases their fds; a second round of 10 000 does not grow its memory (nothing leaked)."""
import resource
import socket
import statistics
import struct
import sys
import time

from harness import TestFailure, check, run_tests
from rawstore import VALIDATE, LoggedStore, Prober, RawClient

IDLE = 10_000
STORE = None
WORKER = None
BASE_FDS = 0


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = IDLE + 200
    if hard != resource.RLIM_INFINITY and hard < need:
        print(f"SKIP: RLIMIT_NOFILE hard limit {hard} is below the {need} this test needs")
        sys.exit(77)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))


def latencies(n):
    out = []
    for i in range(n):
        start = time.monotonic()
        WORKER.round_trip(f"lat-{i % 20}")
        out.append(time.monotonic() - start)
    return out


def describe(lat):
    lat = sorted(lat)
    return (f"median {statistics.median(lat) * 1000:.2f} ms, p99 {lat[int(len(lat) * 0.99) - 1] * 1000:.2f} ms, "
            f"max {lat[-1] * 1000:.2f} ms")


def open_idle(n):
    """n connections; every tenth has sent VALIDATE (a sniffed dialect-C connection), the rest
    sent nothing (a 1.13 callback connection)."""
    socks = []
    for i in range(n):
        sk = socket.create_connection(("127.0.0.1", STORE.port), timeout=10)
        sk.settimeout(None)  # blocking, so MSG_DONTWAIT probes in still_open() do not poll
        if i % 10 == 0:
            sk.sendall(VALIDATE)
        socks.append(sk)
    return socks


def wait_fds(cond, what, timeout):
    deadline = time.monotonic() + timeout
    while True:
        n = STORE.fd_count()
        if cond(n):
            return n
        if time.monotonic() > deadline:
            raise TestFailure(f"store has {n} fds {timeout}s after {what}")
        time.sleep(0.1)


def still_open(socks):
    """How many of `socks` the server has not closed (no EOF, no reset, nothing sent)."""
    alive = 0
    for sk in socks:
        try:
            data = sk.recv(1, socket.MSG_DONTWAIT)
        except BlockingIOError:
            alive += 1
            continue
        except ConnectionResetError:
            continue
        if data:
            raise TestFailure(f"the store sent {data.hex()} to an idle connection")
    return alive


def close_all(socks, reset):
    for sk in socks:
        if reset:
            sk.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sk.close()


RSS_AFTER_FIRST_ROUND = None


def test_serves_with_10k_idle_open():
    global RSS_AFTER_FIRST_ROUND
    before = latencies(100)
    rss_before = STORE.rss_kb()
    # A second client does round trips while the 10 000 arrive (an accept storm).
    prober = Prober(STORE.port, tag="during-open", distinct_keys=5)
    start = time.monotonic()
    socks = open_idle(IDLE)
    opened = time.monotonic() - start
    n = wait_fds(lambda n: n >= BASE_FDS + 1 + IDLE, f"opening {IDLE} connections", 30)
    count = prober.stop()
    print(f"  {IDLE} connections opened in {opened:.1f}s; store fds {n}; meanwhile {count} round trips, "
          f"slowest {prober.slowest * 1000:.1f} ms")
    check(prober.slowest < 2.0, f"a round trip took {prober.slowest:.2f}s while connections arrived")
    try:
        during = latencies(300)
        rss_during = STORE.rss_kb()
        print(f"  round trips alone: {describe(before)}")
        print(f"  with {IDLE} idle:   {describe(during)}")
        print(f"  store RSS {rss_before / 1024:.1f} MB -> {rss_during / 1024:.1f} MB with {IDLE} idle")
        # Generous bounds: the CI machine is shared; a stall would show as seconds.
        check(statistics.median(during) < 0.1, f"median round trip with {IDLE} idle: {describe(during)}")
        check(max(during) < 2.0, f"slowest round trip with {IDLE} idle: {describe(during)}")
        check((rss_during - rss_before) / IDLE < 16, f"{(rss_during - rss_before) / IDLE:.1f} kB per idle connection")
        alive = still_open(socks)
        check(alive == IDLE, f"the store closed {IDLE - alive} idle connections")
    finally:
        close_all(socks, reset=False)
    n = wait_fds(lambda n: n <= BASE_FDS, f"closing {IDLE} idle connections (FIN)", 30)
    WORKER.round_trip("after-first-round")
    RSS_AFTER_FIRST_ROUND = STORE.rss_kb()
    print(f"  after close: store fds {n}, RSS {RSS_AFTER_FIRST_ROUND / 1024:.1f} MB")


def test_second_round_reuses_memory():
    rss_first = RSS_AFTER_FIRST_ROUND or STORE.rss_kb()
    socks = open_idle(IDLE)
    try:
        wait_fds(lambda n: n >= BASE_FDS + IDLE, f"opening {IDLE} connections again", 30)
        WORKER.round_trip("second-round")
    finally:
        close_all(socks, reset=True)  # RST this time (and no TIME_WAIT left behind)
    n = wait_fds(lambda n: n <= BASE_FDS, f"resetting {IDLE} idle connections", 30)
    rss = STORE.rss_kb()
    print(f"  after a second round: store fds {n}, RSS {rss / 1024:.1f} MB")
    check(rss - rss_first < 8 * 1024,
          f"RSS grew {(rss - rss_first) / 1024:.1f} MB over a second round of {IDLE} connections")
    WORKER.round_trip("after-second-round")
    STORE.check_alive()
    warnings = [line for line in STORE.log_lines() if "warn" in line]
    check(not warnings, f"warnings about well-behaved idle connections: {warnings[:3]}")


def main():
    global STORE, WORKER, BASE_FDS
    raise_fd_limit()
    with LoggedStore() as store:
        STORE = store
        WORKER = RawClient(store.port)
        WORKER.round_trip("warm-up")
        BASE_FDS = store.fd_count()
        run_tests([test_serves_with_10k_idle_open, test_second_round_reuses_memory])


main()
