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


def open_holder(path, lock=False):
    """A live process that has `path` open, once it has: the path comes on its stdin, so only its open
    descriptor gives it away (with `lock`, also its LOCK_EX flock). kill() it when done."""
    take = "fcntl.flock(f, fcntl.LOCK_EX); " if lock else ""
    holder = Child([PYTHON, "-c", "import fcntl, sys, time; f = open(sys.stdin.readline().strip(), 'rb'); " + take +
                    "print('HOLDING', flush=True); time.sleep(300)"], "lock holder" if lock else "holder")
    try:
        holder.send(path + "\n")
        holder.wait_line("HOLDING", 30, "the holder to take LOCK_EX" if lock else "the holder to open the file")
    except BaseException:
        holder.kill()
        raise
    return holder


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


def processes_naming(path):
    """pids of processes (not us) whose command line names `path`: a killed run's leftovers."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if path.encode() in f.read():
                    out.append(int(entry))
        except OSError:
            pass
    return out


ARGV_PATH_WORKER = os.path.join(HERE, "argv_path_worker.py")


def script_named_command(path, *extra):
    """`ddp-launch run` of a 2-rank job whose script gets its FileStore as a plain argument."""
    return [DDP_LAUNCH, "run", "--nproc-per-node", "2", "--python", PYTHON, *extra, ARGV_PATH_WORKER, path, "20"]


def leave_killed_run_filestore(path, command=None):
    """The issue's first run: 2 ranks meet through the FileStore at `path` (named only by the script's
    own argument, or by `command`, a 2-rank `ddp-launch run` whose workers print READY sum=<n> pid=<pid>),
    all_reduce, then the supervisor is SIGKILLed. Returns once every process of that run is gone and the
    file is left behind."""
    from harness import alive, check  # noqa: E402 (kept local: fs_helpers is imported by tests that need neither)
    hold = os.path.join(os.path.dirname(path), "hold")
    write_file(hold, b"")
    first = Child(command or script_named_command(path), "first run", start_new_session=True)
    try:
        pids = []
        for _ in range(2):
            line = first.out.wait_for("READY sum=", 120, "both ranks' READY line (init + all_reduce)")
            check("READY sum=3" in line, f"first run's all_reduce: {line!r}")
            pids.append(int(line.split("pid=")[1].split()[0]))
        first.proc.send_signal(9)  # the supervisor only: its guardian ends the workers
        first.proc.wait(10)
    finally:
        if first.proc.poll() is None:
            os.killpg(first.proc.pid, 9)
    wait_until(lambda: not any(alive(p) for p in pids), 30, "the killed run's workers to be gone")
    wait_until(lambda: not processes_naming(path), 30, "every process of the killed run to be gone")
    check(os.path.exists(path) and os.path.getsize(path) > 0, f"the SIGKILLed run left no FileStore at {path}")
    os.remove(hold)
