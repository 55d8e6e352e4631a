"""Helpers for the FileStore tests: child processes whose output lines are read with timeouts,
FileStore records built byte by byte, and `ddp-launch clean` runs."""
import os
import struct
import subprocess
import time

from harness import DDP_LAUNCH, PYTHON, LineReader, TestFailure

HERE = os.path.dirname(os.path.abspath(__file__))


def record(key, value):
    """One c10d FileStore record: u32 LE key length, key, u32 LE value length, value (spec §11.1)."""
    key = key.encode() if isinstance(key, str) else key
    value = value.encode() if isinstance(value, str) else value
    return struct.pack("<I", len(key)) + key + struct.pack("<I", len(value)) + value


def killed_rendezvous_bytes():
    """What a 2-rank file:// rendezvous leaves when both ranks are SIGKILLed (spec §11.4)."""
    addr = bytes((i * 7) % 256 for i in range(136))
    out = record("/default_pg/0/0/rank_1", "vm") + record("/default_pg/0/0/rank_0", "vm")
    out += record("/default_pg/0/0/0", addr) + record("/default_pg/0/0/1", addr)
    for v in "11222":
        out += record("/default_pg/store_based_barrier_key:1", v)
    return out + record("/default_pg/0/SEQ_NUM_STORE_KEY", b"hE\x8bk\0\0\0\0")


def torn_bytes():
    """spec §11.4's reproducer: "/a" = "1", then a key length of 10 followed by only 6 key bytes."""
    return record("/a", "1") + struct.pack("<I", 10) + b"/abcde"


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)


class Child:
    """A child process with stdout+stderr merged, read line by line (harness.LineReader)."""

    def __init__(self, argv, name, **kw):
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, **kw)
        self.out = LineReader(self.proc.stdout, self.proc, name)

    @property
    def lines(self):
        return self.out.lines

    def wait_line(self, prefix, timeout, what):
        return self.out.wait_for(prefix, timeout, what, prefix=True)

    def drain(self):
        self.out.drain()

    def tail(self, n=6):
        return self.out.tail(n)

    def send(self, text):
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def start_ranks(path, timeout_s, mode, import_timeout=120):
    """Both ranks of fs_rank.py, released into init_process_group at the same moment."""
    ranks = [Child([PYTHON, os.path.join(HERE, "fs_rank.py"), path, str(r), str(timeout_s), mode], f"rank {r}")
             for r in range(2)]
    try:
        for r in ranks:
            r.wait_line("IMPORTED", import_timeout, "torch to import")
        for r in ranks:
            r.send("go\n")
    except BaseException:
        kill_all(ranks)
        raise
    return ranks


def kill_all(children):
    for c in children:
        c.kill()


def clean(*args, timeout=30):
    """`ddp-launch clean ARGS`; returns the CompletedProcess (timeout names what it waited for)."""
    try:
        return subprocess.run([DDP_LAUNCH, "clean", *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise TestFailure(f"`ddp-launch clean {' '.join(args)}` did not finish within {timeout}s") from e


def wait_until(cond, timeout, what, interval=0.05):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TestFailure(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def flock_holders(path):
    """(pid, 'READ'|'WRITE') of FLOCKs held (not waited for) on `path`, from /proc/locks."""
    st = os.stat(path)
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    out = []
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
                continue
            if fields[5] == ident:
                out.append((int(fields[4]), fields[3]))
    return out


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
