"""The suite's last test (ctest FIXTURES_CLEANUP of every integration test): no ddp-launch process
that a test started may outlive its test. Every integration test runs with DDP_TEST_SUITE=<this
build directory> in its environment, which its processes inherit (the .deb tests pass it into
their Debian roots); a process that carries this build's mark and no longer descends from a
running ctest has outlived the test that started it (a daemon re-parented to init, as the .deb
tests' daemons were after every run). Each is named, then ended (it is provably this suite's:
its mark and its ancestry say so), and the test fails. Tests still running under another ctest
of the same build descend from that ctest, and are left alone."""
import os
import signal
import sys
import time

SUITE = os.environ.get("DDP_TEST_SUITE", "")


def read(path, binary=False):
    try:
        with open(path, "rb" if binary else "r") as f:
            return f.read()
    except OSError:
        return None


def ppid_and_comm(pid):
    stat = read(f"/proc/{pid}/stat")
    if not stat:
        return None, None
    comm = stat[stat.index("(") + 1:stat.rindex(")")]
    return int(stat[stat.rindex(")") + 2:].split()[1]), comm


def under_ctest(pid):
    """Whether a ctest is among pid's ancestors (its test still runs)."""
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        ppid, comm = ppid_and_comm(pid)
        if ppid is None:
            return False
        if comm == "ctest":
            return True
        pid = ppid
    return False


def leaked():
    """{pid: argv} of the ddp-launch processes with this build's mark that outlived their test."""
    mark = b"DDP_TEST_SUITE=" + SUITE.encode() + b"\0"
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        pid = int(name)
        environ = read(f"/proc/{pid}/environ", binary=True)
        if not environ or mark not in environ + b"\0":
            continue
        argv = (read(f"/proc/{pid}/cmdline", binary=True) or b"").split(b"\0")
        _, comm = ppid_and_comm(pid)
        if comm != "ddp-launch" and os.path.basename(argv[0]) != b"ddp-launch":
            continue
        if not under_ctest(pid):
            found[pid] = b" ".join(argv).decode(errors="replace").strip()
    return found


def main():
    if not SUITE:
        print("DDP_TEST_SUITE is not set: run this through ctest")
        return 1
    # A supervisor's guardian may take a moment to follow its supervisor: a few seconds' grace.
    deadline = time.monotonic() + 10
    found = leaked()
    while found and time.monotonic() < deadline:
        time.sleep(0.5)
        found = leaked()
    if not found:
        print(f"no ddp-launch process of this suite ({SUITE}) outlived its test")
        return 0
    for pid, argv in sorted(found.items()):
        print(f"LEAKED: pid {pid} ({argv}) outlived the test that started it; ending it")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError as e:
            print(f"  cannot end pid {pid}: {e}")
    print("FAIL: a test fixture started these and did not end them (also end them when the test fails "
          "or times out)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
