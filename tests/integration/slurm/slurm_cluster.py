"""A throwaway Slurm 22.05 cluster for tests: munged, slurmctld and several slurmd on this host.

Everything lives under a fresh /tmp/ddp-slurm-XXXX directory with its own ports, so several
clusters (other tests, other users) can run side by side. Debian's Slurm is built with
MULTIPLE_SLURMD, so each emulated node is one more slurmd with its own NodeName and port; all of
them are 127.0.0.1. No systemd and no cgroups are needed (cgroup.conf pins cgroup/v1, which makes
slurmd skip the autodetection that fails in containers).

Only processes this object started are stopped: daemons by their pid files, job steps by the unix
sockets they hold in this cluster's spool directory (slurmstepd outlives slurmd by design).
The daemons detach, so a guard process (this file with --guard, in its own session) stops the
cluster if the test that owns it dies without stopping it (SIGKILL, a ctest timeout).

Usage:
    with SlurmCluster(nodes=2) as c:
        c.run(["srun", "-N2", "hostname"])     # SLURM_CONF is set in c.env
"""
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import alive, free_port as _free_port  # noqa: E402,F401 (alive re-exported to the tests)

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "scontrol", "scancel", "sinfo", "mungekey")


class ClusterError(RuntimeError):
    pass


def missing_tools():
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [t for t in DAEMONS if shutil.which(t, path=path) is None]


def skip_unless_available():
    """Exit 77 (ctest SKIP_RETURN_CODE) when Slurm cannot run here, saying why."""
    missing = missing_tools()
    if missing:
        print(f"SKIP: Slurm is not installed (missing {', '.join(missing)}); "
              "packaging/install-deps.sh installs slurmctld, slurmd, slurm-client and munge")
        sys.exit(77)
    if os.geteuid() != 0:
        print("SKIP: the test Slurm cluster runs its daemons as root (SlurmUser=root); run as root")
        sys.exit(77)


def _port_taken(port):
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def _read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def _children():
    """pid -> list of child pids, from /proc."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def descendants(pid):
    kids, out, todo = _children(), [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def _wait_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class SlurmCluster:
    def __init__(self, nodes=2, name="ddptest", start_timeout=60.0, base=None):
        self.nodes = [f"n{i + 1}" for i in range(nodes)]
        self.base = base or tempfile.mkdtemp(prefix="ddp-slurm-", dir="/tmp")
        self.guard = None
        os.chmod(self.base, 0o755)  # munged insists on a socket path executable by everyone
        self.name = name
        self.start_timeout = start_timeout
        self.conf = os.path.join(self.base, "etc", "slurm.conf")
        self.sock = os.path.join(self.base, "munge", "munge.socket.2")
        self.jobs_dir = os.path.join(self.base, "jobs")  # sbatch writes output relative to its cwd
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.env["PATH"] = self.env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        self.ctld_port = _free_port()
        self.node_ports = {n: _free_port() for n in self.nodes}
        self.started = False

    # ------------------------------------------------------------------ helpers
    def path(self, *parts):
        return os.path.join(self.base, *parts)

    def run(self, argv, timeout=60, check=True, **kw):
        """Runs a Slurm client command with this cluster's SLURM_CONF; output as text."""
        try:
            r = subprocess.run(argv, env=kw.pop("env", self.env), capture_output=True, text=True,
                               timeout=timeout, **kw)
        except subprocess.TimeoutExpired as e:
            raise ClusterError(f"{' '.join(argv)} did not finish within {timeout}s; "
                               f"stdout: {e.stdout!r} stderr: {e.stderr!r}") from None
        if check and r.returncode != 0:
            raise ClusterError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()} {r.stdout.strip()}")
        return r

    def _tail(self, name, n=15):
        try:
            with open(self.path("log", name)) as f:
                return "".join(f.readlines()[-n:])
        except OSError as e:
            return f"({e})"

    def _wait(self, what, cond, timeout, logs=(), daemons=()):
        """Polls cond until true; fails at the timeout, or at once when one of daemons
        ((pidfile, comm) pairs) has written its pid file and died."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if cond():
                    return
            except (ClusterError, OSError):
                pass
            dead = [c for pf, c in daemons if _read_pid(pf) and not self._daemon_pid(pf, c)]
            if dead or time.monotonic() > deadline:
                tails = "\n".join(f"--- {l}:\n{self._tail(l)}" for l in logs)
                why = f"{', '.join(dead)} died" if dead else f"not within {timeout}s"
                raise ClusterError(f"{what}: {why} (cluster under {self.base})\n{tails}")
            time.sleep(0.2)

    def _daemon_pid(self, pidfile, comm):
        pid = _read_pid(pidfile)
        if pid and alive(pid):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == comm:
                        return pid
            except OSError:
                pass
        return None

    # ------------------------------------------------------------------ start
    def _write_config(self):
        for d in ("etc", "log", "state", "run", "munge", "jobs", *[f"spool/{n}" for n in self.nodes]):
            os.makedirs(self.path(d), exist_ok=True)
        os.chmod(self.path("munge"), 0o755)
        os.chmod(self.path("jobs"), 0o777)
        hw = dict(kv.split("=", 1) for kv in
                  self.run(["slurmd", "-C"], timeout=30).stdout.splitlines()[0].split() if "=" in kv)
        host = socket.gethostname().split(".")[0]
        topo = " ".join(f"{k}={hw[k]}" for k in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket",
                                                  "ThreadsPerCore") if k in hw)
        mem = min(int(hw.get("RealMemory", "1000")), 2000)  # above what slurmd detects drains the node
        lines = [
            f"ClusterName={self.name}",
            # slurmctld only runs where SlurmctldHost equals `hostname -s`; (addr) avoids a DNS lookup.
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.node_ports[self.nodes[0]]}",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.sock}",
            f"StateSaveLocation={self.path('state')}",
            f"SlurmdSpoolDir={self.path('spool', '%n')}",
            f"SlurmctldPidFile={self.path('run', 'slurmctld.pid')}",
            f"SlurmdPidFile={self.path('run', 'slurmd-%n.pid')}",
            f"SlurmctldLogFile={self.path('log', 'slurmctld.log')}",
            f"SlurmdLogFile={self.path('log', 'slurmd-%n.log')}",
            "SlurmctldDebug=info", "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "MpiDefault=none", "SwitchType=switch/none",
            "MailProg=/bin/true",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            # Fast teardown: SIGKILL 5 s after the SIGTERM of a cancel (default 30 s).
            "KillWait=5",
            # Finished jobs stay visible to `scontrol show job` for this long.
            "MinJobAge=600",
            # Job ids (and so ddp-launch's run ids and derived ports) differ from other test clusters'.
            f"FirstJobId={random.randint(1000, 900000)}",
        ]
        for n in self.nodes:
            lines.append(f"NodeName={n} NodeHostname={host} NodeAddr=127.0.0.1 Port={self.node_ports[n]} "
                         f"{topo} RealMemory={mem} State=UNKNOWN")
        lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(self.path("etc", "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\n")

    def _start_guard(self):
        with open(self.path("meta.json"), "w") as f:
            json.dump({"nodes": len(self.nodes), "owner": os.getpid()}, f)
        log = open(self.path("log", "guard.log"), "w")
        self.guard = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--guard", self.base,
                                       str(os.getpid())], start_new_session=True, stdin=subprocess.DEVNULL,
                                      stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def start(self):
        t0 = time.monotonic()
        try:
            self._write_config()
            self._start_guard()
            key = self.path("munge", "munge.key")
            with open(key, "wb") as f:
                f.write(os.urandom(1024))
            os.chmod(key, 0o600)
            self.run(["munged", f"--socket={self.sock}", f"--key-file={key}",
                      f"--pid-file={self.path('munge', 'munged.pid')}", f"--seed-file={self.path('munge', 'seed')}",
                      f"--log-file={self.path('log', 'munged.log')}", "--origin=127.0.0.1"], timeout=30)
            self.started = True
            self._wait("munged answering on its socket", lambda: subprocess.run(
                f"munge -n -S {self.sock} | unmunge -S {self.sock}", shell=True, capture_output=True,
                timeout=10).returncode == 0, 20, ["munged.log"])
            # A daemon whose port was taken since we chose it dies before writing its pid file: say so now.
            for who, port in [("slurmctld", self.ctld_port)] + [(f"slurmd {n}", p) for n, p in self.node_ports.items()]:
                if _port_taken(port):
                    raise ClusterError(f"port {port} chosen for {who} is in use by now; start the cluster again")
            self.run(["slurmctld", "-f", self.conf], timeout=30)
            self._wait("slurmctld answering `scontrol ping`",
                       lambda: "is UP" in self.run(["scontrol", "ping"], timeout=10, check=False).stdout,
                       self.start_timeout, ["slurmctld.log"],
                       [(self.path("run", "slurmctld.pid"), "slurmctld")])
            for n in self.nodes:
                self.run(["slurmd", "-f", self.conf, "-N", n], timeout=30)
            self._wait(f"nodes {','.join(self.nodes)} idle in sinfo", self._all_idle, self.start_timeout,
                       ["slurmctld.log"] + [f"slurmd-{n}.log" for n in self.nodes],
                       [(self.path("run", f"slurmd-{n}.pid"), "slurmd") for n in self.nodes])
        except Exception:
            self.stop()
            raise
        print(f"slurm cluster up in {time.monotonic() - t0:.1f}s under {self.base} "
              f"(ctld :{self.ctld_port}, nodes {self.node_ports})", flush=True)
        return self

    def _all_idle(self):
        out = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=10).stdout.split("\n")
        states = dict(l.split() for l in out if l.strip())
        return all(states.get(n) == "idle" for n in self.nodes)

    # ------------------------------------------------------------------ jobs
    def job_info(self, job_id):
        """`scontrol -o show job ID` as a dict (JobState, ExitCode, StdOut, NodeList, ...); {} if unknown."""
        r = self.run(["scontrol", "-o", "show", "job", str(job_id)], timeout=20, check=False)
        if r.returncode != 0:
            return {}
        return dict(kv.split("=", 1) for kv in r.stdout.split() if "=" in kv)

    def wait_job_state(self, job_id, states, timeout):
        last = {}

        def reached():
            nonlocal last
            last = self.job_info(job_id)
            return last.get("JobState") in states

        try:
            self._wait(f"job {job_id} in state {'/'.join(states)}", reached, timeout,
                       ["slurmctld.log"] + [f"slurmd-{n}.log" for n in self.nodes])
        except ClusterError as e:
            raise ClusterError(f"{e}\nlast job record: {last}") from None
        return last

    # ------------------------------------------------------------------ stop
    def _stepd_pids(self):
        """Pids holding a unix socket bound under this cluster's spool dir: its slurmstepds."""
        inodes = set()
        prefix = self.path("spool") + "/"
        try:
            with open("/proc/net/unix") as f:
                for line in f.readlines()[1:]:
                    parts = line.split()
                    if len(parts) >= 8 and parts[7].startswith(prefix):
                        inodes.add(f"socket:[{parts[6]}]")
        except OSError:
            return []
        if not inodes:
            return []
        pids = set()
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                for fd in os.listdir(f"/proc/{d}/fd"):
                    if os.readlink(f"/proc/{d}/fd/{fd}") in inodes:
                        pids.add(int(d))
                        break
            except OSError:
                continue
        return sorted(pids)

    def stop(self):
        """Stops everything this cluster started and removes its directory. Never raises."""
        if self.guard is not None:
            self.guard.terminate()
            self.guard.wait()
            self.guard = None
        if not self.started:
            shutil.rmtree(self.base, ignore_errors=True)
            return
        ctld = self._daemon_pid(self.path("run", "slurmctld.pid"), "slurmctld")
        if ctld:
            try:
                jobs = self.run(["squeue", "-h", "-o", "%i"], timeout=10, check=False).stdout.split()
                if jobs:
                    self.run(["scancel", *jobs], timeout=10, check=False)
                self.run(["scontrol", "shutdown"], timeout=10, check=False)
            except ClusterError as e:
                print(f"slurm cluster stop: {e}", flush=True)
        daemons = [p for p in (self._daemon_pid(self.path("run", f"slurmd-{n}.pid"), "slurmd") for n in self.nodes)
                   if p] + ([ctld] if ctld else [])
        if not _wait_gone(daemons, 5):
            for p in daemons:
                if alive(p):
                    os.kill(p, 15)
            if not _wait_gone(daemons, 5):
                for p in daemons:
                    if alive(p):
                        os.kill(p, 9)
        left = self._stepd_pids()
        if left:
            victims = sorted(set(left) | {d for p in left for d in descendants(p)})
            print(f"slurm cluster stop: killing leftover job processes {victims}", flush=True)
            for p in victims:
                try:
                    os.kill(p, 9)
                except OSError:
                    pass
            _wait_gone(victims, 5)
        munged = self._daemon_pid(self.path("munge", "munged.pid"), "munged")
        if munged:
            os.kill(munged, 15)
            if not _wait_gone([munged], 5):
                os.kill(munged, 9)
        self.started = False
        if os.environ.get("DDP_KEEP_SLURM"):
            print(f"slurm cluster kept for inspection under {self.base}", flush=True)
        else:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _guard(base, owner):
    """Waits for the owner's death; then stops the cluster under base unless it is gone already."""
    while os.path.isdir(base) and alive(owner):
        time.sleep(0.5)
    if not os.path.isdir(base):
        return
    with open(os.path.join(base, "meta.json")) as f:
        meta = json.load(f)
    print(f"owner {owner} is gone without stopping the cluster: stopping it", flush=True)
    c = SlurmCluster(nodes=meta["nodes"], base=base)
    c.started = True
    c.stop()


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--guard":
    _guard(sys.argv[2], int(sys.argv[3]))
