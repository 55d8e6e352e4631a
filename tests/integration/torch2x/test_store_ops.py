"""A real torch 2.x TCPStore client (in a Debian chroot: trixie's 2.6 or sid's 2.14) runs the same
operation sequence against torch's own server and against `ddp-launch store`; every outcome must
match, exceptions by type and kind, except the deliberate differences listed below.

usage: test_store_ops.py torch-2.6|torch-2.14
"""
import sys

from chroot import HERE, finish, require_root, result_line, start_in_root
from harness import StoreProcess, TestFailure, check, run_tests

ROOT = sys.argv[1]

# Steps where our store differs from torch's legacy server on purpose (store/README.md):
# step -> (torch's outcome, ours).
DELIBERATE = {
    # COMPARE_SET wakes waiters, like torch's libuv server (--compare-set-no-wake turns it off).
    "compare_set creating a waited-on key": (["raised", "DistStoreError", "timeout"], ["ok", "None"]),
    # The legacy server takes keys of any length; ours closes past --max-key-bytes (8 KiB, the
    # libuv server's limit, which pip builds of torch >= 2.4 use by default).
    "key over 8 KiB": (["ok", "b'v'"], ["raised", "DistNetworkError", "connection-closed"]),
}

_result = None


def result():
    """Runs the sequence once (about 4 s of chroot start plus the steps) and keeps its outcomes."""
    global _result
    if _result is None:
        require_root(ROOT)
        with StoreProcess() as store:
            proc = start_in_root(ROOT, "python3", f"{HERE}/store_ops.py", "--ours-port", str(store.port))
            rc, out, err = finish(proc, f"store_ops.py in {ROOT}")
        if rc != 0:
            raise TestFailure(f"store_ops.py in {ROOT} exited {rc}; stderr tail: {err[-2000:]}")
        _result = result_line(out, err, f"store_ops.py in {ROOT}")
        print(f"# {ROOT}: torch {_result['torch_version']}, {len(_result['torch'])} steps", flush=True)
    return _result


def outcome(side, step):
    for name, out in result()[side]:
        if name == step:
            return out
    raise TestFailure(f"step {step!r} missing from the {side} run")


def test_every_outcome_matches_torch_server():
    r = result()
    torch_steps, our_steps = r["torch"], r["ours"]
    check([s for s, _ in torch_steps] == [s for s, _ in our_steps], "the two runs did different steps")
    check(len(torch_steps) >= 40, f"only {len(torch_steps)} steps ran")
    def short(o):
        text = str(o)
        return text if len(text) <= 200 else text[:200] + "..."
    mismatches = []
    for (step, theirs), (_, ours) in zip(torch_steps, our_steps):
        expected = DELIBERATE.get(step)
        if expected is not None:
            if [theirs, ours] != list(expected):
                mismatches.append(f"{step}: torch {short(theirs)}, ours {short(ours)}; "
                                  f"listed as torch {expected[0]}, ours {expected[1]}")
        elif theirs != ours:
            mismatches.append(f"{step}: torch {short(theirs)}, ours {short(ours)}")
    check(not mismatches, "outcomes differ from torch's server:\n  " + "\n  ".join(mismatches))


def test_expired_waits_cancel_and_keep_the_connection():
    # The comparison alone would pass if both servers broke the same way; pin what torch does.
    for side in ("torch", "ours"):
        check(outcome(side, "wait missing, expires (CANCEL_WAIT)") == ["raised", "DistStoreError", "timeout"],
              f"{side}: expired wait did not raise a timeout")
        check(outcome(side, "connection usable after expired wait") == ["ok", "b'ok'"],
              f"{side}: connection unusable after CANCEL_WAIT")
        check(outcome(side, "wait, store timeout, woken by other client's set") == ["ok", "'waited'"],
              f"{side}: waiter not woken by a later set")


def test_new_214_operations():
    if ROOT != "torch-2.14":
        for side in ("torch", "ours"):
            check(outcome(side, "2.6 client has no queue/list/barrier methods") == ["ok", ["False", "False", "False"]],
                  f"{side}: the 2.6 client unexpectedly has 2.14 methods")
        return
    for side in ("torch", "ours"):
        for op in ("queue_push", "queue_pop", "queue_len"):
            check(outcome(side, f"{op} refused client-side") == ["raised", "NotImplementedError", "other"],
                  f"{side}: the 2.14 non-libuv client did not refuse {op}: {outcome(side, f'{op} refused client-side')}")
        check(outcome(side, "barrier world_size 2, second client joins") == ["ok", "'waited'"],
              f"{side}: 2-client barrier did not wait for the second client")
        check(outcome(side, "barrier expires (CANCEL_WAIT)") == ["raised", "DistStoreError", "timeout"],
              f"{side}: barrier did not time out")
        keys = outcome(side, "list_keys final")
        check(keys[0] == "ok" and "'pre/b'" in keys[1] and not any("init" in k for k in keys[1]),
              f"{side}: list_keys should list user keys without the unprefixed init/: {keys}")


run_tests([
    test_every_outcome_matches_torch_server,
    test_expired_waits_cancel_and_keep_the_connection,
    test_new_214_operations,
])
