"""The fixed operation sequence of the differential test, driven by a real torch 1.13 TCPStore client.

Run with /usr/bin/python3. Reads one target per stdin line ("<label> <host> <port>") and answers each
with one JSON line {"label": ..., "results": [[step, outcome], ...]} on stdout. One process serves every
target so torch is imported once (an import takes tens of seconds on a loaded 2-core machine).

Outcomes are normalised strings: values by repr, exceptions as "raise <Type>: <message>" with the
port replaced by <port>, raw socket replies as hex. Steps whose name starts with "stale:" are the
§5.6 hazard, where our default server deliberately differs from torch's.
"""
import datetime
import json
import sys
import threading
import time

import torch.distributed as dist

from raw_store import RawConnection, check_request, watch_request

STORE_TIMEOUT = datetime.timedelta(seconds=10)
LATE_SET_DELAY_S = 0.5
SHORT_WAIT = datetime.timedelta(milliseconds=500)
BIG_VALUE = bytes(i % 251 for i in range(3000))


def wire_keys(keys):
    return [("/" + k).encode() for k in keys]  # TCPStore puts "/" before every user key (spec §7.1)


def describe_big(value):
    return f"{len(value)} bytes, {'intact' if value == BIG_VALUE else 'CHANGED'}"


def run_sequence(host, port):
    results = []

    def step(name, fn):
        try:
            out = repr(fn())
        except Exception as e:  # noqa: BLE001 - the exception itself is the recorded outcome
            out = f"raise {type(e).__name__}: {str(e).replace(str(port), '<port>')}"
        results.append([name, out])

    def client():
        return dist.TCPStore(host, port, None, False, STORE_TIMEOUT)

    c = client()
    other = client()  # a second client, with its own connections: it sets the keys others wait for

    def set_later(key):
        timer = threading.Timer(LATE_SET_DELAY_S, lambda: other.set(key, "late"))
        timer.start()
        return timer

    def timed_wait(keys, *timeout, store=c):
        start = time.monotonic()
        store.wait(keys, *timeout)
        # Only the shape of the timing is compared: whether the wait really blocked for the setter.
        return "returned after the late set" if time.monotonic() - start >= LATE_SET_DELAY_S * 0.8 else "returned early"

    step("set('key1', b'value1')", lambda: c.set("key1", b"value1"))
    step("get('key1')", lambda: c.get("key1"))
    step("add('counter', 5)", lambda: c.add("counter", 5))
    step("add('counter', -2)", lambda: c.add("counter", -2))
    step("add('counter', 0)", lambda: c.add("counter", 0))
    step("get('counter')", lambda: c.get("counter"))
    step("add('fresh', 0)", lambda: c.add("fresh", 0))
    step("add('neg', -7)", lambda: c.add("neg", -7))
    step("set('numtext', b' 12abc')", lambda: c.set("numtext", b" 12abc"))
    step("add('numtext', 1)", lambda: c.add("numtext", 1))
    step("get('numtext')", lambda: c.get("numtext"))
    step("set('empty', b'')", lambda: c.set("empty", b""))
    step("get('empty')", lambda: c.get("empty"))

    step("compare_set('cs', '', 'first')", lambda: c.compare_set("cs", "", "first"))
    step("compare_set('cs', 'first', 'second')", lambda: c.compare_set("cs", "first", "second"))
    step("compare_set('cs', 'wrong', 'third')", lambda: c.compare_set("cs", "wrong", "third"))
    step("compare_set('cs', '', 'fourth')", lambda: c.compare_set("cs", "", "fourth"))
    step("get('cs')", lambda: c.get("cs"))
    step("compare_set('nocs', 'exp', 'new')", lambda: c.compare_set("nocs", "exp", "new"))
    step("compare_set('cs_empty', '', '')", lambda: c.compare_set("cs_empty", "", ""))

    raw = RawConnection(host, port)
    step("CHECK ['key1']", lambda: raw.request(check_request(wire_keys(["key1"])), 1))
    step("CHECK ['key1', 'missing']", lambda: raw.request(check_request(wire_keys(["key1", "missing"])), 1))
    step("CHECK []", lambda: raw.request(check_request(wire_keys([])), 1))
    step("CHECK ['empty', 'cs_empty']", lambda: raw.request(check_request(wire_keys(["empty", "cs_empty"])), 1))
    step("CHECK ['nocs']", lambda: raw.request(check_request(wire_keys(["nocs"])), 1))
    # WATCH_KEY is dialect A's callback protocol; a C++ 1.13 client sends it, Python cannot.
    step("WATCH_KEY 'w'", lambda: raw.request(watch_request(b"/w"), 1))
    step("set('w', 'x')", lambda: c.set("w", "x"))
    step("set('w', 'y')", lambda: c.set("w", "y"))
    step("delete_key('w')", lambda: c.delete_key("w"))
    step("watch event after set('w', 'x')", raw.read_watch_event)
    step("watch event after set('w', 'y')", raw.read_watch_event)
    step("watch event after delete_key('w')", raw.read_watch_event)
    raw.close()

    step("wait(['key1'])", lambda: c.wait(["key1"]))
    step("wait(['key1', 'counter'], 2s)", lambda: c.wait(["key1", "counter"], datetime.timedelta(seconds=2)))
    timer = set_later("late")
    step("wait(['late']), set 0.5s later by another client", lambda: timed_wait(["late"]))
    timer.join()
    timer = set_later("late2")
    step("wait(['late2'], 5s), set 0.5s later by another client",
         lambda: timed_wait(["late2"], datetime.timedelta(seconds=5)))
    timer.join()
    step("get('late2')", lambda: c.get("late2"))
    step("num_keys()", c.num_keys)
    step("delete_key('key1')", lambda: c.delete_key("key1"))
    step("delete_key('missing')", lambda: c.delete_key("missing"))
    step("num_keys() after delete", c.num_keys)
    step("set('big', 3000 bytes)", lambda: c.set("big", BIG_VALUE))
    step("get('big')", lambda: describe_big(c.get("big")))
    # Nobody ever sets 'never', so the registration torch keeps after the timeout stays harmless.
    step("wait(['never'], 500ms)", lambda: c.wait(["never"], SHORT_WAIT))
    step("num_keys() after a timed-out wait", c.num_keys)

    bad = client()
    step("set('bad', b'abc')", lambda: bad.set("bad", b"abc"))
    step("add('bad', 1) on a non-number", lambda: bad.add("bad", 1))
    step("num_keys() on that client afterwards", bad.num_keys)
    step("num_keys() on another client", other.num_keys)

    # §5.6, inherent race: the key appears before the timed-out client's next request, so the stray
    # STOP_WAITING is already on its way; no server can take it back.
    s1 = client()
    step("race: wait(['nokey1'], 500ms)", lambda: s1.wait(["nokey1"], SHORT_WAIT))
    step("race: other client sets 'nokey1'", lambda: other.set("nokey1", "v"))
    # A round trip on `other` orders its SET (and the wake it causes) before s1's next request.
    step("race: true num_keys() (other client)", other.num_keys)
    step("race: num_keys()", s1.num_keys)
    step("race: add('counter', 0)", lambda: s1.add("counter", 0))

    # §5.6, the case a server can fix: the timed-out client sends a request before the key appears.
    s2 = client()
    step("stale: wait(['nokey2'], 500ms)", lambda: s2.wait(["nokey2"], SHORT_WAIT))
    step("stale: num_keys()", s2.num_keys)
    step("stale: other client sets 'nokey2'", lambda: other.set("nokey2", "v"))
    step("stale: true num_keys() (other client)", other.num_keys)
    step("stale: add('counter', 0)", lambda: s2.add("counter", 0))
    step("stale: num_keys() again", s2.num_keys)

    # The same with a WAIT as the next request: torch keeps the old registration beside the new one.
    s3 = client()
    step("stale: then wait: wait(['nokey3'], 500ms)", lambda: s3.wait(["nokey3"], SHORT_WAIT))
    step("stale: then wait: wait(['counter'])", lambda: s3.wait(["counter"]))
    step("stale: then wait: other client sets 'nokey3'", lambda: other.set("nokey3", "v"))
    step("stale: then wait: true num_keys() (other client)", other.num_keys)
    step("stale: then wait: add('counter', 0)", lambda: s3.add("counter", 0))

    # torch overwrites the connection's wait count, so the stale registration releases a newer WAIT
    # whose own key is still missing: a get() could then read a key that does not exist.
    s4 = client()
    step("stale: early release: wait(['nokey4'], 500ms)", lambda: s4.wait(["nokey4"], SHORT_WAIT))
    timer = set_later("nokey4")
    step("stale: early release: wait(['nokey5'], 1.5s), 'nokey4' set 0.5s later",
         lambda: timed_wait(["nokey5"], datetime.timedelta(seconds=1.5), store=s4))
    timer.join()
    step("stale: early release: true num_keys() (other client)", other.num_keys)
    step("stale: early release: num_keys()", s4.num_keys)

    return results


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        label, host, port = line.split()
        results = run_sequence(host, int(port))
        print(json.dumps({"label": label, "results": results}), flush=True)


if __name__ == "__main__":
    main()
