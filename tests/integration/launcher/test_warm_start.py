"""--warm-start (launcher/supervisor/warm_start.hpp): a restart's Python ranks are forked from a per-node
process that already imported torch. With real torch 1.13 ranks: each warm rank's environment, sys.argv,
__file__, sys.path[0], stdin, session and parent are exactly a cold rank's (`python -u script` and
`-m module`); imports next to the script work; multiprocessing's spawn works; the supervisor sees the
warm rank's real pid and exit status; the warm process holds one thread and no CUDA; what a warm rank
imports is preloaded for the next attempt; the warm process dying starts the ranks cold, said once."""
import json
import os
import shutil
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, check, free_port, read_events, run_tests

MARK = b"ddp-launch's warm-start process"

# Dumps what a rank sees into $OUT/a<attempt>_r<rank>.json, then exits with the attempt's code.
DUMP = r'''
import json, os, sys
from multiprocessing import freeze_support
def main():
    preloaded = "torch" in sys.modules and "wave" not in sys.modules
    learned = "wave" in sys.modules
    try:
        import helper  # next to the script
    except ImportError:
        from pkg import helper  # -m pkg.train: sys.path[0] is the working directory
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    main = sys.modules["__main__"]
    d = {
        "env": dict(os.environ),
        "argv": sys.argv,
        "file": __file__,
        "name": __name__,
        "path0": sys.path[0],
        "path": sys.path,
        "cwd": os.getcwd(),
        "session_leader": os.getsid(0) == os.getpid() and os.getpgid(0) == os.getpid(),
        "stdin": os.readlink("/proc/self/fd/0"),
        "ppid": os.getppid(),
        "pid": os.getpid(),
        "helper": helper.VALUE,
        "preloaded": preloaded,
        "learned": learned,
        "loader": type(getattr(main, "__loader__", None)).__name__,
        "spec": repr(getattr(main, "__spec__", None) is None),
        "unbuffered": sys.stdout.write_through if hasattr(sys.stdout, "write_through") else None,
        "mask": sorted(int(s) for s in __import__("signal").pthread_sigmask(0, [])),
    }
    if os.environ.get("SPAWN_CHILD"):
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=helper.child, args=(q,))
        p.start()
        d["spawned"] = q.get(timeout=120)
        p.join(120)
        d["spawned_exit"] = p.exitcode
    if attempt == 1 and os.environ.get("LOCAL_RANK") == "0":
        import wave  # recorded by the warm rank, preloaded for attempt 2
        import time
        time.sleep(float(os.environ.get("LEARN_WAIT", "0")))
    out = os.environ["OUT"]
    with open(os.path.join(out, "a%d_r%s.json.tmp" % (attempt, os.environ["RANK"])), "w") as f:
        json.dump(d, f)
    os.rename(os.path.join(out, "a%d_r%s.json.tmp" % (attempt, os.environ["RANK"])),
              os.path.join(out, "a%d_r%s.json" % (attempt, os.environ["RANK"])))
    import time
    deadline = time.time() + 120  # every rank has written before any exits (the others are stopped then)
    while not all(os.path.exists(os.path.join(out, "a%d_r%d.json" % (attempt, r)))
                  for r in range(int(os.environ["WORLD_SIZE"]))) and time.time() < deadline:
        time.sleep(0.05)
    print("rank", os.environ["RANK"], "attempt", attempt, "done", flush=True)
    if os.environ.get("KILL_WARM") and attempt == 0:
        # The test kills the warm-start process, then says so: attempt 0 ends after that.
        deadline = time.time() + 120
        while not os.path.exists(os.path.join(out, "killed")) and time.time() < deadline:
            time.sleep(0.05)
    sys.exit(int(os.environ.get("EXIT_%d" % attempt, "0")))


if __name__ == "__main__":
    main()
'''

HELPER = '''
VALUE = "helper next to the script"
def child(q):
    import os, sys
    q.put({"name": __name__, "main": sys.modules["__main__"].__name__, "rank": os.environ.get("RANK")})
'''


def layout(root):
    pkg = os.path.join(root, "pkg")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("")
    with open(os.path.join(pkg, "train.py"), "w") as f:
        f.write(DUMP)
    with open(os.path.join(pkg, "helper.py"), "w") as f:
        f.write(HELPER)
    out = os.path.join(root, "out")
    os.makedirs(out)
    return out


def launch(root, mode, out, args, env_extra, restarts, port, run_dir, module=False):
    env = dict(os.environ, OUT=out, **env_extra)
    env.pop("DDP_WARM_START", None)
    ev = os.path.join(root, f"events-{mode}.jsonl")
    cmd = [DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--max-restarts", str(restarts),
           "--monitor-interval", "0.1", "--master-port", str(port), "--run-dir", run_dir, "--events", ev,
           "--warm-start", mode]
    if module:
        cmd.append("-m")
    r = subprocess.run(cmd + args, capture_output=True, text=True, timeout=400, cwd=root, env=env)
    return r, read_events(ev)


def load(out, attempt, rank):
    with open(os.path.join(out, f"a{attempt}_r{rank}.json")) as f:
        return json.load(f)


def normalized(d, run_dir):
    d = json.loads(json.dumps(d).replace(run_dir, "<RUN>"))
    for k in ("ppid", "pid", "preloaded", "learned"):
        d.pop(k, None)
    return d


def compare_warm_and_cold(module):
    root = tempfile.mkdtemp(prefix="ddp-warm-")
    try:
        out_cold = layout(os.path.join(root, "cold"))
        out_warm = layout(os.path.join(root, "warm"))
        port = free_port()
        dumps = {}
        for mode, out in (("off", out_cold), ("auto", out_warm)):
            base = os.path.dirname(out)
            run_dir = os.path.join(root, "run")
            shutil.rmtree(run_dir, ignore_errors=True)
            args = ["pkg.train", "x", "--y"] if module else [os.path.join("pkg", "train.py"), "x", "--y"]
            r, events = launch(base, mode, out, args, {"EXIT_0": "1", "EXIT_1": "7", "SPAWN_CHILD": "1"}, 2, port,
                               run_dir, module)
            check(r.returncode == 0, f"--warm-start {mode}: exit {r.returncode}: {r.stderr[-3000:]}")
            check("warm start off" not in r.stderr, f"--warm-start {mode} fell back: {r.stderr[-2000:]}")
            dumps[mode] = {(a, k): load(out, a, k) for a in (0, 1, 2) for k in (0, 1)}
            started = {(e["attempt"], e["rank"]): e["pid"] for e in events if e["event"] == "rank_started"}
            exited = {(e["attempt"], e["rank"]): e for e in events if e["event"] == "rank_exited"}
            sup = [e for e in events if e["event"] == "started"][0]["supervisor_pid"]
            for (a, k), d in dumps[mode].items():
                check(started[(a, k)] == d["pid"], f"{mode}: attempt {a} rank {k}: event pid {started[(a, k)]}, "
                                                    f"the rank's {d['pid']}")
                check(d["ppid"] == sup, f"{mode}: attempt {a} rank {k}'s parent is {d['ppid']}, not {sup}")
                check(d["spawned"]["main"] == "__mp_main__" and d["spawned_exit"] == 0,
                      f"{mode}: multiprocessing spawn: {d['spawned']} exit {d['spawned_exit']}")
            # the real exit status reaches the supervisor: attempt 1's ranks exit 7
            sevens = [e for (a, k), e in exited.items() if a == 1 and e["pid"] == dumps[mode][(a, k)]["pid"]
                      and e["exit_code"] == 7]
            check(sevens, f"{mode}: no rank of attempt 1 was seen exiting 7: {exited}")
            for k in (0, 1):
                check(not dumps[mode][(0, k)]["preloaded"], f"{mode}: attempt 0 cannot be warm")
                for a in (1, 2):
                    check(dumps[mode][(a, k)]["preloaded"] == (mode != "off") or dumps[mode][(a, k)]["learned"],
                          f"{mode}: attempt {a} rank {k} preloaded torch: {dumps[mode][(a, k)]['preloaded']}")
        for a in (1, 2):
            for k in (0, 1):
                cold = normalized(dumps["off"][(a, k)], os.path.join(root, "run"))
                warm = normalized(dumps["auto"][(a, k)], os.path.join(root, "run"))
                cold = json.loads(json.dumps(cold).replace(os.path.join(root, "cold"), "<ROOT>"))
                warm = json.loads(json.dumps(warm).replace(os.path.join(root, "warm"), "<ROOT>"))
                diff = {key: (cold.get(key), warm.get(key)) for key in set(cold) | set(warm) if cold.get(key) != warm.get(key)}
                if "env" in diff:
                    ce, we = diff["env"]
                    diff["env"] = {v: (ce.get(v), we.get(v)) for v in set(ce) | set(we) if ce.get(v) != we.get(v)}
                check(not diff, f"attempt {a} rank {k}: warm differs from cold: {diff}")
        d = dumps["auto"][(1, 0)]
        check(d["helper"] == "helper next to the script" and d["session_leader"] and d["stdin"] == "/dev/null",
              f"warm rank: {d}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_warm_rank_sees_exactly_what_a_cold_one_does():
    compare_warm_and_cold(module=False)


def test_a_warm_module_rank_sees_exactly_what_a_cold_one_does():
    compare_warm_and_cold(module=True)


def warm_processes(sup):
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if MARK not in f.read():
                    continue
            with open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == sup:
                    found.append(int(pid))
        except (OSError, ValueError):
            pass
    return found


def test_the_warm_process_has_one_thread_no_cuda_and_preloads_what_ranks_imported():
    root = tempfile.mkdtemp(prefix="ddp-warm-")
    try:
        out = layout(root)
        run_dir = os.path.join(root, "run")
        env = dict(os.environ, OUT=out, EXIT_0="1", EXIT_1="1", LEARN_WAIT="4")
        env.pop("DDP_WARM_START", None)
        ev = os.path.join(root, "events.jsonl")
        cmd = [DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--max-restarts", "2",
               "--run-dir", run_dir, "--events", ev, os.path.join(root, "pkg", "train.py")]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root)
        seen = []
        deadline = time.time() + 300
        while p.poll() is None and time.time() < deadline:
            for pid in warm_processes(p.pid):
                try:
                    threads = len(os.listdir(f"/proc/{pid}/task"))
                    with open(f"/proc/{pid}/maps") as f:
                        maps = f.read()
                except OSError:
                    continue
                if "libtorch" in maps:  # torch imported: the state every fork comes from
                    seen.append((threads, "libcuda.so" in maps, "libnccl" in maps and "cuda" in maps))
            time.sleep(0.05)
        _, err = p.communicate(timeout=60)
        check(p.returncode == 0, f"exit {p.returncode}: {err[-3000:]}")
        check(seen, "never saw the warm-start process with torch imported")
        check(all(t == 1 for t, _, _ in seen), f"the warm-start process had more than one thread: {set(seen)}")
        check(not any(c for _, c, _ in seen), "the warm-start process loaded libcuda")
        check(load(out, 1, 0)["preloaded"] and load(out, 1, 1)["preloaded"], "attempt 1 was not warm")
        check(load(out, 2, 0)["learned"] and load(out, 2, 1)["learned"],
              "attempt 2 did not find `wave` (imported by attempt 1's rank 0) preloaded")
        check(not warm_processes(p.pid), "the warm-start process outlived the job")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_warm_process_dies_then_ranks_start_cold_said_once():
    root = tempfile.mkdtemp(prefix="ddp-warm-")
    try:
        out = layout(root)
        run_dir = os.path.join(root, "run")
        env = dict(os.environ, OUT=out, EXIT_0="1", EXIT_1="1", KILL_WARM="1")
        env.pop("DDP_WARM_START", None)
        cmd = [DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--max-restarts", "2",
               "--warm-start", "on", "--run-dir", run_dir, os.path.join(root, "pkg", "train.py")]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root)
        deadline = time.time() + 120
        killed = []
        while not killed and time.time() < deadline and p.poll() is None:
            for pid in warm_processes(p.pid):
                os.kill(pid, 9)
                killed.append(pid)
            time.sleep(0.05)
        open(os.path.join(out, "killed"), "w").close()
        _, err = p.communicate(timeout=300)
        check(killed, "never saw the warm-start process")
        check(p.returncode == 0, f"exit {p.returncode}: {err[-3000:]}")
        check(err.count("warm start off") == 1, f"the fallback is not said exactly once: {err[-3000:]}")
        for a in (1, 2):
            for k in (0, 1):
                check(not load(out, a, k)["preloaded"], f"attempt {a} rank {k} was warm after the process died")
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Slows the warm-start process alone (its command line carries MARK) before it imports torch.
SLOW_SITE = r'''
import time
with open("/proc/self/cmdline", "rb") as f:
    if b"ddp-launch's warm-start process" in f.read():
        time.sleep(60)
'''


def test_a_signal_while_the_restart_waits_for_the_warm_process_is_acted_on_at_once():
    # The restart's ranks wait (up to 30 s) for the warm-start process to import torch: on the
    # supervisor's loop, not in it, so a SIGTERM meanwhile ends the job at once.
    root = tempfile.mkdtemp(prefix="ddp-warm-")
    try:
        site = os.path.join(root, "site")
        os.makedirs(site)
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write(SLOW_SITE)
        script = os.path.join(root, "fail.py")
        with open(script, "w") as f:
            f.write("import sys\nsys.exit(1)\n")
        env = dict(os.environ, PYTHONPATH=site)
        env.pop("DDP_WARM_START", None)
        ev = os.path.join(root, "events.jsonl")
        cmd = [DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--max-restarts", "3",
               "--warm-start", "on", "--run-dir", os.path.join(root, "run"), "--events", ev, script]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root)
        deadline = time.time() + 120
        restarting = False
        while not restarting and time.time() < deadline and p.poll() is None:
            restarting = any(e["event"] == "restarting" for e in read_events(ev)) if os.path.exists(ev) else False
            time.sleep(0.05)
        check(restarting, "the job never restarted")
        time.sleep(1.5)  # past the back-off: the restart now waits for the warm-start process
        check(p.poll() is None, f"the job ended before the signal: {p.returncode}")
        check(warm_processes(p.pid), "no warm-start process to wait for")
        sent = time.time()
        p.send_signal(15)
        _, err = p.communicate(timeout=120)
        took = time.time() - sent
        check(took < 10, f"SIGTERM took {took:.1f} s to end the job (the loop was blocked): {err[-2000:]}")
        check(p.returncode != 0, f"exit {p.returncode} after SIGTERM")
        check(not warm_processes(p.pid), "the warm-start process outlived the job")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_warm_start_on_is_refused_for_no_python_with_a_warning():
    r = subprocess.run([DDP_LAUNCH, "run", "--nproc-per-node", "1", "--warm-start", "on", "--no-python", "true"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and "--no-python ranks start cold" in r.stderr, f"{r.returncode}: {r.stderr}")


if __name__ == "__main__":
    run_tests([
        test_a_warm_rank_sees_exactly_what_a_cold_one_does,
        test_a_warm_module_rank_sees_exactly_what_a_cold_one_does,
        test_the_warm_process_has_one_thread_no_cuda_and_preloads_what_ranks_imported,
        test_the_warm_process_dies_then_ranks_start_cold_said_once,
        test_a_signal_while_the_restart_waits_for_the_warm_process_is_acted_on_at_once,
        test_warm_start_on_is_refused_for_no_python_with_a_warning,
    ])
