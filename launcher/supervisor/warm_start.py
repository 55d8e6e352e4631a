# ddp-launch's warm-start process (launcher/supervisor/warm_start.hpp): one per node, started by the
# supervisor as `python -u -c <this file> FD SUPERVISOR_PID MODULES_FILE`. It imports torch and the
# modules the ranks imported before (learned from their /proc/PID/maps and from MODULES_FILE, which
# warm-started ranks append to), never initialises CUDA and never starts a thread, and forks one rank
# per request that comes over the unix socket FD (a JSON request with the rank's stdout, stderr and
# cgroup.procs descriptors attached, SCM_RIGHTS). Each rank is forked twice (the middle process
# exits at once), so it is re-parented to the supervisor (PR_SET_CHILD_SUBREAPER there), which reaps
# it and sees its real exit status as for a cold rank. Embedded in the binary at build time
# (launcher/CMakeLists.txt); runs only the standard library before the rank's own script.
import json
import os
import select
import socket
import sys


def _threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _say(text):
    sys.stderr.write("[ddp-launch] warm start: %s\n" % text)
    sys.stderr.flush()


class _Server:
    def __init__(self, fd, supervisor, modules_file):
        self.sock = socket.socket(fileno=fd)
        self.supervisor = supervisor
        self.modules_file = modules_file
        self.modules_read = 0
        self.learn_pids = []
        self.tried = set()
        self.roots = sorted(
            {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p}
            | {os.path.realpath(p) for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)}
        )

    # A module may be preloaded when its files are the installation's (never the script's own).
    def _installed(self, name):
        import importlib.util

        try:
            spec = importlib.util.find_spec(name)
        except Exception:  # noqa: BLE001 - a broken package is just not preloaded
            return False
        if spec is None:
            return False
        origin = spec.origin or ""
        if origin in ("built-in", "frozen"):
            return True
        locations = list(spec.submodule_search_locations or []) or [origin]
        for loc in locations:
            real = os.path.realpath(loc)
            if not any(real == r or real.startswith(r + os.sep) for r in self.roots):
                return False
        return True

    def preload(self, name):
        if name in sys.modules or name in self.tried or not name.isidentifier():
            return
        self.tried.add(name)
        if not self._installed(name):
            return
        try:
            __import__(name)
        except BaseException:  # noqa: BLE001 - not preloaded: the rank imports it itself
            return
        self.check(name)

    # The rules before any fork: one thread, no CUDA. A module that broke them ends warm starts.
    def check(self, name):
        why = None
        if _threads() != 1:
            why = "importing %s started a thread" % name
        torch = sys.modules.get("torch")
        if why is None and torch is not None and getattr(torch, "cuda", None) is not None:
            try:
                if torch.cuda.is_initialized():
                    why = "importing %s initialised CUDA" % name
            except Exception:  # noqa: BLE001
                pass
        if why:
            _say("%s; this process cannot fork ranks safely, so the next attempts start cold" % why)
            os._exit(3)

    def names_from_maps(self, pid):
        names = []
        try:
            with open("/proc/%d/maps" % pid, encoding="utf-8", errors="replace") as f:
                paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
        except OSError:
            return names
        for path in sorted(paths):
            if not path.endswith(".so") and ".so." not in path:
                continue
            for entry in sys.path:
                if entry and path.startswith(entry.rstrip(os.sep) + os.sep):
                    top = path[len(entry.rstrip(os.sep)) + 1 :].split(os.sep)[0]
                    names.append(top.split(".")[0])
                    break
        return names

    def names_from_file(self):
        try:
            with open(self.modules_file, "rb") as f:
                f.seek(self.modules_read)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self.modules_read += end
        return data[:end].decode("utf-8", "replace").split()

    def learn(self):
        names = self.names_from_file()
        for pid in self.learn_pids:
            names += self.names_from_maps(pid)
        for name in names:
            self.preload(name)

    def reply(self, obj):
        self.sock.send(json.dumps(obj).encode())

    def serve(self):
        self.preload("torch")
        self.check("torch")
        self.reply({"ready": True})
        while True:
            ready, _, _ = select.select([self.sock], [], [], 1.0)
            if not ready:
                self.learn()
                continue
            msg, fds, _, _ = socket.recv_fds(self.sock, 1 << 20, 64)
            if not msg:
                os._exit(0)  # the supervisor is gone or done
            req = json.loads(msg)
            if req.get("op") == "learn":
                for fd in fds:
                    os.close(fd)
                self.learn_pids = [int(req["pid"])]
                continue
            job = self.fork(req, fds)
            if job is not None:
                return job  # in the rank

    # Forks the rank (a grandchild, re-parented to the supervisor) and replies its pid.
    def fork(self, req, fds):
        rd, wr = os.pipe()
        middle = os.fork()
        if middle == 0:
            try:
                os.close(rd)
                rank = os.fork()
                if rank == 0:
                    os.close(wr)
                    return (req, fds, self.sock.detach())  # closed by the rank, never again by this object
                os.write(wr, str(rank).encode())
            except BaseException:  # noqa: BLE001 - the empty reply says the fork failed
                pass
            os._exit(0)
        os.close(wr)
        data = b""
        while True:
            chunk = os.read(rd, 64)
            if not chunk:
                break
            data += chunk
        os.close(rd)
        os.waitpid(middle, 0)
        for fd in fds:
            os.close(fd)
        if data:
            self.reply({"pid": int(data)})
        else:
            self.reply({"error": "the fork failed"})
        return None


def _become_rank(job, supervisor, modules_file):
    import ctypes
    import time

    req, fds, sock = job
    os.close(sock)
    # Wait for the re-parenting (the middle process exits at once), then die with the supervisor.
    deadline = time.monotonic() + 10
    while os.getppid() != supervisor:
        if time.monotonic() > deadline:
            os._exit(127)
        time.sleep(0.0005)
    libc = ctypes.CDLL(None, use_errno=True)
    stdout_fd, stderr_fd = fds[0], fds[1]
    for fd in fds[2:]:  # cgroup.procs: joined before anything runs
        try:
            os.write(fd, b"0")
        except OSError:
            pass
        os.close(fd)
    os.setsid()
    libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != supervisor:
        os._exit(127)
    if req.get("cpus"):
        os.sched_setaffinity(0, req["cpus"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    os.close(stdout_fd)
    os.close(stderr_fd)
    import signal

    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    # Strings come hex-encoded: their bytes exactly, as the interpreter would decode them.
    def text(h):
        return bytes.fromhex(h).decode("utf-8", "surrogateescape")

    os.environ.clear()
    os.environ.update({text(k): text(v) for k, v in req["env"]})
    argv = [text(a) for a in req["argv"]]  # [python, -u, script, args...] or [python, -u, -m, module, args...]
    sys.orig_argv = list(argv)
    if os.environ.get("LOCAL_RANK") == "0":
        _record_imports(modules_file)
    import importlib

    importlib.invalidate_caches()
    return argv[2:]


# Local rank 0 appends each top-level module it imports for the first time to MODULES_FILE: the
# next warm-start process preloads them.
def _record_imports(path):
    class _Recorder:
        seen = set()

        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            top = fullname.partition(".")[0]
            if top not in cls.seen:
                cls.seen.add(top)
                try:
                    fd = os.open(_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
                    os.write(fd, (top + "\n").encode())
                    os.close(fd)
                except OSError:
                    pass
            return None

    _path = path
    sys.meta_path.insert(0, _Recorder)


# Tracebacks start at the user's code, as with `python script.py`.
def _hide_frames():
    hook = sys.excepthook
    here = sys._getframe().f_code.co_filename

    def excepthook(kind, value, tb):
        while tb is not None and tb.tb_frame.f_code.co_filename == here:
            tb = tb.tb_next
        hook(kind, value, tb)

    sys.excepthook = excepthook


def _run(args):
    import runpy
    import types

    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    if args[0] == "-m":
        sys.argv = ["-m"] + args[2:]
        sys.path.insert(0, os.getcwd())
        runpy._run_module_as_main(args[1], alter_argv=True)
        return
    script = args[0]
    sys.argv = list(args)
    sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
    from importlib.machinery import SourceFileLoader

    path = os.path.abspath(script)  # as python 3.9+ sets __main__.__file__
    main.__file__ = path
    main.__cached__ = None
    main.__loader__ = SourceFileLoader("__main__", path)
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    exec(code, main.__dict__)


_FD, _SUPERVISOR, _MODULES = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
del sys.path[0]  # `-c`'s working directory: the rank gets its script's directory there instead
_job = _Server(_FD, _SUPERVISOR, _MODULES).serve()
_args = _become_rank(_job, _SUPERVISOR, _MODULES)
del _job
_hide_frames()
_run(_args)
