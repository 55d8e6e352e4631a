"""`ddp-launch run`'s option rules end to end (launcher/run/run_options.hpp): sbatch rejects what run
rejects, torchrun flags new to ddp-launch with real torch 1.13 workers (--run-path,
--shutdown-timeout), the interpreter chosen without --python, PET_* forms of our own flags, and the
literal --rank warning."""
import glob
import json
import os
import resource
import signal
import socket
import stat
import subprocess
import tempfile

from harness import DDP_LAUNCH, PYTHON, check, free_port, run_tests

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "allreduce_worker.py")

# Bad run options: each is refused by `run` before anything starts, and by `sbatch` before a script
# is written, with the same message.
BAD_RUN_OPTIONS = [
    (["--memory-limit-per-rank", "abc"], "--memory-limit-per-rank 'abc' is not a size"),
    (["--rdzv-conf", "join_timeout=5"], "--rdzv-conf is for --rdzv-backend c10d"),
    (["--memory-limit-per-rank", "abc", "--rdzv-conf", "join_timeout=5"], "--rdzv-conf is for --rdzv-backend c10d"),
    (["--nproc-per-node", "0"], "--nproc-per-node '0' is not a positive number"),
    (["--rdzv-backend", "etcd"], "--rdzv-backend: must be one of static | c10d, not 'etcd'"),
    (["--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--rdzv-conf", "joint_timeout=5"],
     "--rdzv-conf: unknown key 'joint_timeout'"),
    (["--rdzv-endpoint", "h:99999"], "'99999' is not a port number"),
    (["--signals-to-handle", "SIGKILL"], "'SIGKILL' is not a signal that can be handled"),
    (["--gpu-low-window", "2 hours"], "--gpu-low-window: must be a duration"),
    (["--nproc-per-node", "2", "--redirects", "5:1"], "--redirects"),
    (["--store", "rank0", "--filestore", "/tmp/x"], "--filestore needs --store file"),
    (["--run-dir", "/tmp/a", "--log-dir", "/tmp/b"], "--run-dir /tmp/a and --log-dir /tmp/b differ"),
    (["--max-restarts", "-2"], "--max-restarts: must be an integer from 0 to 1000, not '-2'"),
    (["--lr-warmup-steps", "10"], "--lr-warmup-steps"),
    (["--numa-binding", "socket"], "--numa-binding socket: ddp-launch binds by 'node'"),
    (["--metric", "loss"], "--metric"),
    (["--straggler-threshold", "1.5"], "--straggler-threshold 1.5 is out of range"),
    (["--straggler-threshold", "fast"], "--straggler-threshold 'fast' is not a number"),
]


def clean_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PET_"))}
    env["CUDA_VISIBLE_DEVICES"] = "7,9"  # the workers use gloo: any value does
    return env


def test_sbatch_rejects_what_run_rejects():
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "job.sh")
        for options, message in BAD_RUN_OPTIONS:
            run = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON] + options + [WORKER],
                                 capture_output=True, text=True, timeout=30, env=clean_env())
            check(run.returncode == 2, f"run {options}: exit {run.returncode}, expected 2: {run.stderr}")
            check(message in run.stderr, f"run {options}: {message!r} not in {run.stderr!r}")
            sb = subprocess.run([DDP_LAUNCH, "sbatch", "--output-script", script] + options + [WORKER],
                                capture_output=True, text=True, timeout=30, env=clean_env())
            check(sb.returncode == 2, f"sbatch {options}: exit {sb.returncode}, expected 2: {sb.stderr}")
            check(message in sb.stderr, f"sbatch {options}: {message!r} not in {sb.stderr!r}")
            check(not os.path.exists(script), f"sbatch {options}: wrote {script} anyway")
        # And what run accepts, sbatch writes (the c10d endpoint comes from Slurm on the nodes).
        for options in (["--nproc-per-node", "2", "--memory-limit-per-rank", "4G"],
                        ["--rdzv-backend", "c10d", "--nnodes", "2:4", "--rdzv-conf", "join_timeout=5,close_timeout=9"]):
            sb = subprocess.run([DDP_LAUNCH, "sbatch", "--output-script", script] + options + [WORKER],
                                capture_output=True, text=True, timeout=30, env=clean_env())
            check(sb.returncode == 0 and os.path.exists(script), f"sbatch {options}: exit {sb.returncode}: {sb.stderr}")
            os.unlink(script)


def test_sbatch_submit_leaves_no_half_written_temporary_script():
    # --submit writes the script to a temporary file first; when that write fails (a full disk: here
    # a 16-byte file size limit, SIGXFSZ ignored so the write returns EFBIG) the file was left behind
    # and the error named --output-script, a flag the user did not give.
    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))

    with tempfile.TemporaryDirectory() as d:
        pattern = ["/tmp/ddp-launch-sbatch-*", os.path.join(d, "ddp-launch-sbatch-*")]
        before = {p for g in pattern for p in glob.glob(g)}
        r = subprocess.run([DDP_LAUNCH, "sbatch", "--submit", "--nproc-per-node", "2", WORKER], capture_output=True,
                           text=True, timeout=30, env={**clean_env(), "TMPDIR": d}, preexec_fn=small_files)
        left = {p for g in pattern for p in glob.glob(g)} - before
        check(r.returncode == 1, f"exit {r.returncode}, expected 1: {r.stderr}")
        check(not left, f"temporary scripts left behind: {sorted(left)}")
        for needle in ("cannot write the temporary script " + d, "File too large", "--output-script FILE", "TMPDIR"):
            check(needle in r.stderr, f"{needle!r} not in {r.stderr!r}")


def test_run_path_runs_the_script_with_runpy_like_torchrun():
    with tempfile.TemporaryDirectory() as d:
        for spelling in ("--run-path", "--run_path"):
            r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", spelling, WORKER,
                                "--dump-env", d], capture_output=True, text=True, timeout=120, env=clean_env())
            check(r.returncode == 0, f"{spelling}: exit {r.returncode}: {r.stderr}")
            check("rank 1 of 2 sum 3" in r.stdout, f"{spelling}: no all_reduce result: {r.stdout!r}")
        # What the script sees: sys.argv[0] is the script, __name__ is "__main__".
        probe = os.path.join(d, "probe.py")
        with open(probe, "w") as f:
            f.write("import json, os, sys\n"
                    "json.dump({'argv': sys.argv, 'name': __name__},"
                    " open(os.path.join(sys.argv[2], 'r' + os.environ['RANK'] + '.json'), 'w'))\n")
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--run-path", probe, "--out", d],
                           capture_output=True, text=True, timeout=60, env=clean_env())
        check(r.returncode == 0, f"probe: exit {r.returncode}: {r.stderr}")
        seen = json.load(open(os.path.join(d, "r0.json")))
        check(seen == {"argv": [probe, "--out", d], "name": "__main__"}, f"the script saw {seen}")


def test_interpreter_that_can_import_torch_is_chosen_and_named():
    # python3 first on PATH cannot import torch (-S: no site-packages); /usr/bin/python3 can.
    with tempfile.TemporaryDirectory() as d:
        fake = os.path.join(d, "python3")
        with open(fake, "w") as f:
            f.write(f"#!/bin/sh\nexec {PYTHON} -S \"$@\"\n")
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        env = clean_env()
        env.pop("PYTHON_EXEC", None)
        env.pop("VIRTUAL_ENV", None)
        env.pop("CONDA_PREFIX", None)
        env["PATH"] = d + os.pathsep + env.get("PATH", "")
        r = subprocess.run([DDP_LAUNCH, "run", "--nproc-per-node", "2", WORKER], capture_output=True, text=True,
                           timeout=120, env=env)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check("/usr/bin/python3" in r.stderr and "which can import torch" in r.stderr and
              f"{fake}" not in r.stdout, f"the choice was not named: {r.stderr}")
        check("python3 cannot import torch" in r.stderr, f"the skipped interpreter was not named: {r.stderr}")
        # An active virtualenv whose interpreter has torch comes first.
        venv = os.path.join(d, "venv")
        os.makedirs(os.path.join(venv, "bin"))
        os.symlink(PYTHON, os.path.join(venv, "bin", "python"))
        env["VIRTUAL_ENV"] = venv
        r = subprocess.run([DDP_LAUNCH, "run", WORKER], capture_output=True, text=True, timeout=120, env=env)
        check(r.returncode == 0, f"venv: exit {r.returncode}: {r.stderr}")
        check(f"the active virtualenv ($VIRTUAL_ENV={venv})" in r.stderr, f"venv not named: {r.stderr}")


def test_environment_forms_of_global_batch_store_and_run_dir():
    with tempfile.TemporaryDirectory() as d:
        run_dir = os.path.join(d, "kept")
        env = dict(clean_env(), PET_GLOBAL_BATCH="64", PET_STORE="file", PET_RUN_DIR=run_dir)
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", WORKER, "--dist-url",
                            "{filestore_url}", "--world-size", "{world_size}", "--rank", "{rank}", "--dump-env", d],
                           capture_output=True, text=True, timeout=120, env=env)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        for rank in (0, 1):
            e = json.load(open(os.path.join(d, f"rank{rank}.json")))
            check(e.get("DDP_GLOBAL_BATCH") == "64" and e.get("DDP_PER_RANK_BATCH") == "32",
                  f"rank {rank}: batch variables {e.get('DDP_GLOBAL_BATCH')} {e.get('DDP_PER_RANK_BATCH')}")
            check(e.get("DDP_FILESTORE_PATH", "").startswith(run_dir), f"rank {rank}: not a FileStore under "
                  f"PET_RUN_DIR: {e.get('DDP_FILESTORE_PATH')}")
        check(os.path.isdir(run_dir), "PET_RUN_DIR was not kept")


def test_literal_rank_in_the_script_arguments_is_named_before_launch():
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "ignores_args.py")
        with open(script, "w") as f:
            f.write("print('started', flush=True)\n")
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", script, "--rank", "0",
                            "--world-size", "2"], capture_output=True, text=True, timeout=60, env=clean_env())
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check("--rank 0" in r.stderr and "--rank {rank}" in r.stderr, f"no warning with the fix: {r.stderr}")
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", script, "--rank", "{rank}"],
                           capture_output=True, text=True, timeout=60, env=clean_env())
        check(r.returncode == 0 and "--rank {rank}" not in r.stderr, f"warned about a placeholder: {r.stderr}")
        # Ranks that then fail to meet (here: a rank whose --rank is not its RANK exits 1): the job's failure
        # ends with the cause seen before launch.
        strict = os.path.join(d, "checks_rank.py")
        with open(strict, "w") as f:
            f.write("import os, sys\n"
                    "sys.exit(0 if sys.argv[sys.argv.index('--rank') + 1] == os.environ['RANK'] else 1)\n")
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--shutdown-grace", "5",
                            strict, "--rank", "0"], capture_output=True, text=True, timeout=60, env=clean_env())
        check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
        tail = r.stderr[r.stderr.find("job FAILED"):]
        check("job FAILED" in r.stderr and "a likely cause, seen before launch" in tail and "--rank {rank}" in tail,
              f"the failure does not end with the cause: {r.stderr}")


def test_virtual_local_rank_gives_each_worker_local_rank_0_and_its_own_device():
    with tempfile.TemporaryDirectory() as d:
        for spelling, visible, expect in (("--virtual-local-rank", "7,9", ["7", "9"]),
                                          ("--virtual_local_rank", None, ["0", "1"])):
            env = clean_env()
            if visible is None:
                env.pop("CUDA_VISIBLE_DEVICES")
            else:
                env["CUDA_VISIBLE_DEVICES"] = visible
            r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", spelling, WORKER,
                                "--dump-env", d], capture_output=True, text=True, timeout=120, env=env)
            check(r.returncode == 0, f"{spelling}: exit {r.returncode}: {r.stderr}")
            for rank in (0, 1):
                e = json.load(open(os.path.join(d, f"rank{rank}.json")))
                check(e["RANK"] == str(rank) and e["LOCAL_RANK"] == "0" and e["CUDA_VISIBLE_DEVICES"] == expect[rank],
                      f"{spelling}: rank {rank} saw LOCAL_RANK={e['LOCAL_RANK']} "
                      f"CUDA_VISIBLE_DEVICES={e.get('CUDA_VISIBLE_DEVICES')}")
        # Without the flag: the real local rank and the inherited list.
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", WORKER, "--dump-env", d],
                           capture_output=True, text=True, timeout=120, env=clean_env())
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        e = json.load(open(os.path.join(d, "rank1.json")))
        check(e["LOCAL_RANK"] == "1" and e["CUDA_VISIBLE_DEVICES"] == "7,9", f"without the flag: {e['LOCAL_RANK']}")


def non_loopback_address():
    """This host's address on the interface of its default route; None when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))  # no packet is sent
        except OSError:
            return None
        addr = s.getsockname()[0]
    return None if addr.startswith("127.") else addr


def test_local_addr_is_the_address_gloo_advertises_across_nodes():
    addr = non_loopback_address()
    check(addr is not None, "this test needs a non-loopback IPv4 interface")
    with tempfile.TemporaryDirectory() as d:
        port = free_port()
        common = ["--nnodes", "2", "--master-addr", "127.0.0.1", "--master-port", str(port), "--local-addr", addr]
        env = clean_env()
        env.pop("GLOO_SOCKET_IFNAME", None)
        nodes = [subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--node-rank", str(n), *common, WORKER,
                                   "--dump-env", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env) for n in (0, 1)]
        outs = [n.communicate(timeout=120) for n in nodes]
        check(all(n.returncode == 0 for n in nodes), f"exit codes {[n.returncode for n in nodes]}: {outs}")
        for rank in (0, 1):
            e = json.load(open(os.path.join(d, f"rank{rank}.json")))
            check(e.get("GLOO_SOCKET_IFNAME") not in (None, "", "lo"), f"rank {rank}: GLOO_SOCKET_IFNAME="
                  f"{e.get('GLOO_SOCKET_IFNAME')!r}")
        check(f"[{addr}:1]: rank 1 of 2 sum 3" in outs[1][0], f"the prefix does not name --local-addr: {outs[1][0]}")


def allowed_cpus_of_node0():
    with open("/sys/devices/system/node/node0/cpulist") as f:
        listed = set()
        for part in f.read().strip().split(","):
            lo, _, hi = part.partition("-")
            listed.update(range(int(lo), int(hi or lo) + 1))
    return sorted(listed & os.sched_getaffinity(0))


def test_numa_binding_sets_each_worker_cpu_affinity():
    check(os.path.isdir("/sys/devices/system/node/node0"), "this test needs /sys/devices/system/node")
    cpus = allowed_cpus_of_node0()
    with tempfile.TemporaryDirectory() as d:
        probe = os.path.join(d, "affinity.py")
        with open(probe, "w") as f:
            f.write("import json, os, sys\n"
                    "json.dump(sorted(os.sched_getaffinity(0)),"
                    " open(os.path.join(sys.argv[1], 'cpus' + os.environ['LOCAL_RANK'] + '.json'), 'w'))\n")
        r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--numa-binding", "node",
                            probe, d], capture_output=True, text=True, timeout=60, env=clean_env())
        check(r.returncode == 0, f"node: exit {r.returncode}: {r.stderr}")
        on_nodes = [json.load(open(os.path.join(d, f"cpus{i}.json"))) for i in (0, 1)]
        check(on_nodes[0] == cpus, f"node: local rank 0 runs on {on_nodes[0]}, node 0 has {cpus}")
        if len(cpus) >= 2:
            r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--numa-binding",
                                "exclusive", probe, d], capture_output=True, text=True, timeout=60, env=clean_env())
            check(r.returncode == 0, f"exclusive: exit {r.returncode}: {r.stderr}")
            sets = [set(json.load(open(os.path.join(d, f"cpus{i}.json")))) for i in (0, 1)]
            check(sets[0] and sets[1] and not (sets[0] & sets[1]) and sets[0] | sets[1] <= set(cpus),
                  f"exclusive: not disjoint CPUs of node 0: {sets}")


def test_torch_rdzv_conf_keys_are_accepted_with_one_warning_each():
    # TorchX's dist.ddp passes join_timeout=600,close_timeout=600,timeout=600.
    r = subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, "--rdzv-backend", "c10d", "--rdzv-endpoint",
                        f"127.0.0.1:{free_port()}", "--rdzv-conf", "join_timeout=600,close_timeout=600,timeout=600",
                        WORKER], capture_output=True, text=True, timeout=120, env=clean_env())
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    check(r.stderr.count("--rdzv-conf close_timeout:") == 1 and r.stderr.count("--rdzv-conf timeout:") == 1,
          f"not one warning per key: {r.stderr}")


if __name__ == "__main__":
    run_tests([
        test_sbatch_rejects_what_run_rejects,
        test_sbatch_submit_leaves_no_half_written_temporary_script,
        test_run_path_runs_the_script_with_runpy_like_torchrun,
        test_interpreter_that_can_import_torch_is_chosen_and_named,
        test_environment_forms_of_global_batch_store_and_run_dir,
        test_literal_rank_in_the_script_arguments_is_named_before_launch,
        test_virtual_local_rank_gives_each_worker_local_rank_0_and_its_own_device,
        test_local_addr_is_the_address_gloo_advertises_across_nodes,
        test_numa_binding_sets_each_worker_cpu_affinity,
        test_torch_rdzv_conf_keys_are_accepted_with_one_warning_each,
    ])
