#!/usr/bin/python3
"""Launcher benchmark: torch 1.13's torchrun (through bench/torchrun_shim.py, at --monitor_interval
0.1 and at its default 5) against `ddp-launch run`, side by side in one run, plus the same workers
started by hand around `ddp-launch store` (what any launcher costs at least).

Scenarios (see bench/README.md): trivial 2-rank gloo job; rank death -> peers dead; rank death ->
restarted group past init_process_group; the supervisor's memory and idle CPU while it watches 8
sleeping ranks. Every time comes from the workers' own log lines (bench/launcher_bench_worker.py)
or, for ddp-launch, also from its --events file. Run with /usr/bin/python3 (torch 1.13)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(HERE, "torchrun_shim.py")
WORKER = os.path.join(HERE, "launcher_bench_worker.py")
PYTHON = "/usr/bin/python3"
CLK_TCK = os.sysconf("SC_CLK_TCK")
RUN_TIMEOUT = 180


class RunFailed(Exception):
    pass


def read_log(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def pick(log, event, rank=None, attempt=None):
    return [x for x in log if x["event"] == event and (rank is None or x["rank"] == rank)
            and (attempt is None or x["attempt"] == attempt)]


def base_env(log_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "TORCHELASTIC_"))}
    env.pop("OMP_NUM_THREADS", None)
    env["BENCH_LOG"] = log_path
    return env


class Launcher:
    """How one launcher starts N ranks of the bench worker."""

    def __init__(self, name, build_dir):
        self.name = name
        self.ddp_launch = os.path.join(build_dir, "bin", "ddp-launch")

    def command(self, nproc, mode, max_restarts=0, events=None):
        worker = [WORKER, "--mode", mode]
        if self.name.startswith("torchrun"):
            interval = self.name.split("@")[1]
            return [PYTHON, SHIM, "--standalone", "--nproc_per_node", str(nproc), "--monitor_interval", interval,
                    "--max_restarts", str(max_restarts), *worker]
        cmd = [self.ddp_launch, "run", "--python", PYTHON, "--standalone", "--nproc-per-node", str(nproc),
               "--max-restarts", str(max_restarts)]
        if events:
            cmd += ["--events", events]
        return cmd + worker


def run_job(launcher, tmp, mode, nproc=2, max_restarts=0):
    """Runs one job to the end; returns (t0, t_exit, worker log, events, returncode)."""
    log_path = os.path.join(tmp, f"log-{time.monotonic_ns()}.jsonl")
    events = os.path.join(tmp, f"events-{time.monotonic_ns()}.jsonl")
    env = base_env(log_path)
    with open(os.path.join(tmp, "stderr.txt"), "w+") as err:
        if launcher.name == "by hand":
            t0, rc = time.time(), run_by_hand(launcher, env, nproc, mode, err)
        else:
            cmd = launcher.command(nproc, mode, max_restarts, events)
            t0 = time.time()
            try:
                rc = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, timeout=RUN_TIMEOUT).returncode
            except subprocess.TimeoutExpired:
                raise RunFailed(f"{launcher.name} {mode}: not done in {RUN_TIMEOUT} s")
        t_exit = time.time()
        err.seek(0)
        stderr = err.read()
    expect_rc = 1 if mode == "death" and max_restarts == 0 else 0
    if rc != expect_rc:
        raise RunFailed(f"{launcher.name} {mode}: exit {rc} (expected {expect_rc}): {stderr[-1500:]}")
    ev = read_log(events) if os.path.exists(events) else []
    return t0, t_exit, read_log(log_path), ev


def run_by_hand(launcher, env, nproc, mode, err):
    """`ddp-launch store --port 0`, then the ranks with torchrun's variables, directly."""
    store = subprocess.Popen([launcher.ddp_launch, "store", "--port", "0"], stdout=subprocess.PIPE,
                             stderr=err, text=True)
    try:
        line = store.stdout.readline()
        m = re.match(r"port=(\d+)", line)
        if not m:
            raise RunFailed(f"by hand: the store printed {line!r}")
        workers = []
        for rank in range(nproc):
            wenv = dict(env, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                        LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=m.group(1),
                        TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="0",
                        OMP_NUM_THREADS="1")
            workers.append(subprocess.Popen([PYTHON, "-u", WORKER, "--mode", mode], env=wenv,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err))
        rcs = [w.wait(timeout=RUN_TIMEOUT) for w in workers]
        return max(rcs)
    finally:
        store.kill()
        store.wait()


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# --- scenarios ---------------------------------------------------------------------------------


def trivial(launchers, reps, tmp):
    """Wall time of init + all_reduce + exit; and the launcher's own share: from the launch to the
    first worker's first statement, and from the last worker's last statement to the launcher's exit."""
    rows = {l.name: {"wall": [], "to_first": [], "after_last": []} for l in launchers}
    for rep in range(reps):
        order = launchers[rep % len(launchers):] + launchers[:rep % len(launchers)]
        for l in order:
            try:
                t0, t_exit, log, _ = run_job(l, tmp, "trivial")
            except RunFailed as e:
                print(f"  ! {e}", flush=True)
                continue
            r = rows[l.name]
            r["wall"].append(t_exit - t0)
            r["to_first"].append(min(x["time"] for x in pick(log, "started")) - t0)
            r["after_last"].append(t_exit - max(x["time"] for x in pick(log, "finished")))
            print(f"  trivial {l.name:15s} rep {rep}: {t_exit - t0:.3f} s", flush=True)
    return {k: {m: median(v) for m, v in r.items()} | {"n": len(r["wall"])} for k, r in rows.items()}


def death(launchers, reps, tmp):
    """Rank 1 exits 1 right after init; rank 0 sleeps. From rank 1's last statement to rank 0's
    SIGTERM handler (both logged by the workers); for ddp-launch also reap to reap from --events."""
    rows = {l.name: {"workers": [], "events": [], "react": [], "to_exit": []} for l in launchers}
    for rep in range(reps):
        order = launchers[rep % len(launchers):] + launchers[:rep % len(launchers)]
        for l in order:
            try:
                _, t_exit, log, ev = run_job(l, tmp, "death")
            except RunFailed as e:
                print(f"  ! {e}", flush=True)
                continue
            failing = pick(log, "failing", rank=1)
            term = pick(log, "sigterm", rank=0)
            r = rows[l.name]
            if failing and term:
                r["workers"].append(term[0]["time"] - failing[0]["time"])
            if failing:
                r["to_exit"].append(t_exit - failing[0]["time"])
            exited = {x["rank"]: x["time"] for x in ev if x["event"] == "rank_exited"}
            stopping = [x["time"] for x in ev if x["event"] == "group_stopping"]
            if 0 in exited and 1 in exited:
                r["events"].append(exited[0] - exited[1])
            if 1 in exited and stopping:
                r["react"].append(stopping[0] - exited[1])
            got = r["workers"][-1] if r["workers"] else None
            print(f"  death   {l.name:15s} rep {rep}: {got * 1000 if got else float('nan'):.1f} ms", flush=True)
    return {k: {m: median(v) for m, v in r.items()} | {"n": len(r["workers"])} for k, r in rows.items()}


def restart(launchers, reps, tmp):
    """Rank 1 fails after init on attempt 0 (--max-restarts 1); attempt 1 runs to the end. From the
    failure to the new group's last rank past init_process_group, against the new workers' own
    start-up (first statement to past init) in that same attempt."""
    rows = {l.name: {"restart": [], "startup": [], "to_first": [], "to_spawn": [], "backoff": []} for l in launchers}
    for rep in range(reps):
        order = launchers[rep % len(launchers):] + launchers[:rep % len(launchers)]
        for l in order:
            try:
                _, _, log, ev = run_job(l, tmp, "death", max_restarts=1)
            except RunFailed as e:
                print(f"  ! {e}", flush=True)
                continue
            failing = pick(log, "failing", rank=1, attempt=0)
            started = pick(log, "started", attempt=1)
            init = pick(log, "init_done", attempt=1)
            if not (failing and len(started) == 2 and len(init) == 2):
                print(f"  ! {l.name} restart: incomplete worker log", flush=True)
                continue
            t_fail = failing[0]["time"]
            t_init = max(x["time"] for x in init)
            r = rows[l.name]
            r["restart"].append(t_init - t_fail)
            r["startup"].append(t_init - min(x["time"] for x in started))
            r["to_first"].append(min(x["time"] for x in started) - t_fail)
            spawned = [x["time"] for x in ev if x["event"] == "rank_started" and x["attempt"] == 1]
            restarting = [x["time"] for x in ev if x["event"] == "restarting"]
            if spawned and restarting:
                r["to_spawn"].append(min(spawned) - t_fail)
                r["backoff"].append(min(spawned) - restarting[0])
            print(f"  restart {l.name:15s} rep {rep}: {(t_init - t_fail) * 1000:.0f} ms", flush=True)
    return {k: {m: median(v) for m, v in r.items()} | {"n": len(r["restart"])} for k, r in rows.items()}


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, all threads


def ctxt_switches(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            s = proc_status(f"{pid}/task/{tid}")
        except FileNotFoundError:
            continue
        total += int(s["voluntary_ctxt_switches"]) + int(s["nonvoluntary_ctxt_switches"])
    return total


def children(pid):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            out += [int(x) for x in f.read().split()]
    return out


def strace_count(pid, seconds):
    """Syscalls of every thread of pid over the window, or None where ptrace is not allowed."""
    try:
        p = subprocess.run(["timeout", "-s", "INT", str(seconds), "strace", "-c", "-f", "-p", str(pid)],
                           capture_output=True, text=True, timeout=seconds + 10)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    if "Operation not permitted" in p.stderr or "attached" not in p.stderr:
        return None
    m = re.search(r"^\s*\S+\s+\S+\s+\S+\s+(\d+)\s+(?:\d+\s+)?total\s*$", p.stderr, re.M)
    return int(m.group(1)) if m else 0  # no syscall at all: strace prints no table


def idle(launchers, window, tmp, use_strace):
    """The launcher watching 8 sleeping (non-torch) ranks: its RSS, CPU and wake-ups over a window."""
    rows = {}
    for l in launchers:
        if l.name == "by hand":
            continue
        log_path = os.path.join(tmp, f"idle-{l.name}.jsonl")
        env = base_env(log_path)
        cmd = l.command(8, "sleep")
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while len(pick(read_log(log_path), "started")) < 8 and time.monotonic() < deadline:
                time.sleep(0.05)
            if len(pick(read_log(log_path), "started")) < 8:
                print(f"  ! idle {l.name}: the 8 ranks did not start within 60 s", flush=True)
                continue
            time.sleep(1.0)  # let start-up settle
            worker_pids = {x["pid"] for x in read_log(log_path)}
            helpers = [c for c in children(proc.pid) if c not in worker_pids]  # ddp-launch's guardian
            ticks0, sw0 = cpu_ticks(proc.pid), ctxt_switches(proc.pid)
            time.sleep(window)
            ticks1, sw1 = cpu_ticks(proc.pid), ctxt_switches(proc.pid)
            st = proc_status(proc.pid)
            row = {"rss_kb": int(st["VmRSS"].split()[0]), "threads": int(st["Threads"]),
                   "cpu_ms": (ticks1 - ticks0) * 1000 / CLK_TCK, "wakeups_per_s": (sw1 - sw0) / window,
                   "helper_rss_kb": sum(int(proc_status(c)["VmRSS"].split()[0]) for c in helpers)}
            row["syscalls"] = strace_count(proc.pid, window) if use_strace else None
            rows[l.name] = row
            print(f"  idle    {l.name:15s}: {row}", flush=True)
        finally:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
    return rows


def interpreter_start(reps):
    """/usr/bin/python3 -c pass: the part of any worker's start-up before its first statement."""
    times = []
    for _ in range(max(reps, 3)):
        t0 = time.monotonic()
        subprocess.run([PYTHON, "-c", "pass"], check=True)
        times.append(time.monotonic() - t0)
    return statistics.median(times)


# --- report ------------------------------------------------------------------------------------


def ms(v):
    if v is None:
        return "—"
    return f"{v * 1000:.2f} ms" if abs(v) < 0.01 else f"{v * 1000:.0f} ms" if abs(v) < 10 else f"{v:.2f} s"


def table(title, header, rows):
    if not rows:
        return
    print(f"\n## {title}")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


def report(res, window):
    ours, t01 = "ddp-launch", "torchrun@0.1"
    table("trivial 2-rank gloo job (init, all_reduce, exit): medians",
          ["launcher", "runs", "wall", "launch → first worker statement", "last worker statement → launcher exit"],
          [[n, r["n"], ms(r["wall"]), ms(r["to_first"]), ms(r["after_last"])] for n, r in res["trivial"].items()])
    table("rank death → all peers dead (rank 1 exits 1 after init, rank 0 sleeps): medians",
          ["launcher", "runs", "rank 1 exit → rank 0 SIGTERM (worker clocks)", "reap → reap (--events)",
           "rank 1 reaped → SIGTERM sent (--events)", "rank 1 exit → launcher exit"],
          [[n, r["n"], ms(r["workers"]), ms(r["events"]), ms(r["react"]), ms(r["to_exit"])]
           for n, r in res["death"].items()])
    table("rank death → restarted group past init_process_group (--max-restarts 1): medians",
          ["launcher", "runs", "failure → new group past init", "new workers' own start-up",
           "failure → first new worker statement", "failure → new ranks spawned (--events)",
           "of which restart back-off (--events)"],
          [[n, r["n"], ms(r["restart"]), ms(r["startup"]), ms(r["to_first"]), ms(r["to_spawn"]), ms(r["backoff"])]
           for n, r in res["restart"].items()])
    if res["restart"]:
        print(f"\nA worker's own start-up: its first statement to past init_process_group in the new attempt. "
              f"\"failure → first new worker statement\" is the launcher's share plus the interpreter's start "
              f"(`/usr/bin/python3 -c pass`: {ms(res['python'])} in this run).")
    table(f"watching 8 sleeping ranks ({window:g} s window)",
          ["launcher", "RSS", "helper processes' RSS", "threads", "CPU in window", "context switches/s",
           "syscalls in window (strace)"],
          [[n, f"{r['rss_kb'] / 1024:.1f} MB", f"{r['helper_rss_kb'] / 1024:.1f} MB", r["threads"],
            f"{r['cpu_ms']:.0f} ms", f"{r['wakeups_per_s']:.1f}", "—" if r["syscalls"] is None else r["syscalls"]]
           for n, r in res["idle"].items()])

    goals = []
    tr, to = res["trivial"].get(t01, {}), res["trivial"].get(ours, {})
    if tr.get("wall") and to.get("wall"):
        ratio = to["wall"] / tr["wall"]
        goals.append(("trivial job ≤ 0.7× torchrun@0.1", f"{ratio:.2f}×", ratio <= 0.7))
    hand = res["trivial"].get("by hand", {})
    if hand.get("to_first") is not None and to.get("to_first") is not None:
        launch, leave = to["to_first"] - hand["to_first"], to["after_last"] - hand["after_last"]
        goals.append(("supervisor adds ≤ 20 ms over by hand (launch + exit)",
                      f"{(launch + leave) * 1000:+.0f} ms (launch {launch * 1000:+.0f}, exit {leave * 1000:+.0f})",
                      launch + leave <= 0.020))
    d = res["death"].get(ours, {})
    if d.get("workers") is not None:
        goals.append(("rank death → peers dead ≤ 5 ms median (worker clocks)", ms(d["workers"]), d["workers"] <= 0.005))
    if d.get("react") is not None:
        goals.append(("  of which: rank reaped → SIGTERM sent (--events)", ms(d["react"]), d["react"] <= 0.005))
    r = res["restart"].get(ours, {})
    if r.get("to_spawn") is not None:
        share = r["to_spawn"]  # the launcher's own share: failure until the new ranks are exec'd
        goals.append(("restart ≤ workers' own start-up + 50 ms (failure → new ranks spawned)",
                      f"+{share * 1000:.0f} ms (back-off {ms(r['backoff'])})", share <= 0.050))
    i = res["idle"].get(ours)
    if i:
        goals.append(("RSS ≤ 10 MB", f"{i['rss_kb'] / 1024:.1f} MB", i["rss_kb"] <= 10 * 1024))
        goals.append(("no periodic wake-ups", f"{i['wakeups_per_s']:.1f} switches/s, {i['cpu_ms']:.0f} ms CPU",
                      i["wakeups_per_s"] < 1 / window + 0.01))
    table("goals (ddp-launch)", ["goal", "measured", "met"],
          [[g, m, "yes" if ok else "**no**"] for g, m, ok in goals])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build", help="where bin/ddp-launch is")
    ap.add_argument("--reps", type=int, default=5, help="runs per launcher and scenario (median)")
    ap.add_argument("--quick", action="store_true", help="one run each, a 2 s idle window: a smoke run")
    ap.add_argument("--idle-window", type=float, default=5.0, help="seconds the idle launcher is watched")
    ap.add_argument("--no-strace", action="store_true", help="skip the syscall count of the idle window")
    ap.add_argument("--only", help="comma-separated scenarios: trivial,death,restart,idle")
    ap.add_argument("--baseline", metavar="BUILD_DIR",
                    help="another build (e.g. of main before a change) run side by side as 'ddp-launch@baseline'")
    ap.add_argument("--no-torchrun", action="store_true", help="leave torchrun out (a before/after comparison)")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.idle_window = 1, 2.0
    ddp = os.path.join(args.build_dir, "bin", "ddp-launch")
    if not os.access(ddp, os.X_OK):
        sys.exit(f"{ddp} not found: build first (cmake --build {args.build_dir})")
    names = [] if args.no_torchrun else ["torchrun@0.1", "torchrun@5"]
    launchers = [Launcher(n, args.build_dir) for n in names + ["ddp-launch"]]
    if args.baseline:
        if not os.access(os.path.join(args.baseline, "bin", "ddp-launch"), os.X_OK):
            sys.exit(f"{args.baseline}/bin/ddp-launch not found: give --baseline a build directory")
        launchers.append(Launcher("ddp-launch@baseline", args.baseline))
    hand = Launcher("by hand", args.build_dir)
    only = set(args.only.split(",")) if args.only else {"trivial", "death", "restart", "idle"}
    res = {"trivial": {}, "death": {}, "restart": {}, "idle": {}}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="launcher-bench-") as tmp:
        res["python"] = interpreter_start(args.reps)
        if "trivial" in only:
            res["trivial"] = trivial(launchers + [hand], args.reps, tmp)
        if "death" in only:
            res["death"] = death(launchers, args.reps, tmp)
        if "restart" in only:
            res["restart"] = restart(launchers, args.reps, tmp)
        if "idle" in only:
            res["idle"] = idle(launchers, args.idle_window, tmp, not args.no_strace)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"\n{args.reps} run(s) per cell, {time.monotonic() - start:.0f} s in all; load average {' '.join(load)}")
    report(res, args.idle_window)


if __name__ == "__main__":
    main()
