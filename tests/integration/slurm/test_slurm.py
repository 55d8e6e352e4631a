"""ddp-launch on a real Slurm 22.05 cluster started here (2 emulated nodes, slurm_cluster.py):
`srun -N2 ddp-launch run` trains 4 gloo ranks with the topology taken from SLURM_*; a script from
`ddp-launch sbatch --submit` completes; scancel of a running job leaves no process behind."""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import DDP_LAUNCH, PYTHON, LineReader, check, run_tests  # noqa: E402
from slurm_cluster import SlurmCluster, alive, skip_unless_available  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "slurm_worker.py")
LAUNCH = os.path.abspath(DDP_LAUNCH)
CLUSTER = None


def records(out_dir, n, timeout, what):
    deadline = time.monotonic() + timeout
    while len(glob.glob(os.path.join(out_dir, "rank*.json"))) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: only {sorted(os.listdir(out_dir))} of {n} rank records within {timeout}s")
        time.sleep(0.2)
    return {r["rank"]: r for r in (json.load(open(p)) for p in glob.glob(os.path.join(out_dir, "rank*.json")))}


def check_four_ranks(recs, job_id):
    check(sorted(recs) == [0, 1, 2, 3], f"ranks {sorted(recs)}")
    for r in recs.values():
        check(r["world"] == 4 and r["sum"] == 10.0, f"rank {r['rank']}: world {r['world']} sum {r['sum']}")
        check(r["GROUP_RANK"] == r["SLURM_NODEID"], f"node rank {r['GROUP_RANK']} is not SLURM_NODEID {r}")
        check(r["TORCHELASTIC_RUN_ID"] == str(job_id), f"run id {r['TORCHELASTIC_RUN_ID']} is not the job id")
        check(r["MASTER_ADDR"] == "127.0.0.1", f"MASTER_ADDR {r['MASTER_ADDR']}: n1's NodeAddr is 127.0.0.1")
    check({r["SLURMD_NODENAME"] for r in recs.values()} == {"n1", "n2"}, f"nodes used: {recs}")
    check({recs[0]["GROUP_RANK"], recs[2]["GROUP_RANK"]} == {"0", "1"}, "ranks 0-1 on node 0, 2-3 on node 1")
    check(len({r["MASTER_PORT"] for r in recs.values()}) == 1, "every rank meets at one port")


def test_srun_two_nodes_trains_with_slurm_topology():
    with tempfile.TemporaryDirectory() as out:
        r = CLUSTER.run(["srun", "-N2", "--ntasks-per-node=1", "--kill-on-bad-exit=1", LAUNCH, "run",
                         "--nproc-per-node", "2", "--python", PYTHON, WORKER, "--out", out],
                        timeout=240, check=False, cwd=CLUSTER.jobs_dir)
        check(r.returncode == 0, f"srun exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
        recs = records(out, 4, 5, "srun -N2")
        job_id = recs[0]["SLURM_JOB_ID"]
        check_four_ranks(recs, job_id)
        # One line per supervisor says what came from Slurm.
        lines = [l for l in r.stderr.splitlines() if f"Slurm job {job_id} step 0:" in l]
        check(len(lines) == 2, f"expected one Slurm line per node, got {lines}\n{r.stderr}")
        check(any("node rank 1" in l for l in lines) and any("node rank 0" in l for l in lines), f"{lines}")
        check(all("store host n1 is 127.0.0.1" in l for l in lines), f"store host not resolved: {lines}")


def test_srun_c10d_joins_at_the_endpoint_from_slurm():
    """--rdzv-backend c10d under srun: the endpoint is the first node and the derived port, the node
    rank a hint from SLURM_NODEID; no flag names the topology."""
    with tempfile.TemporaryDirectory() as out:
        r = CLUSTER.run(["srun", "-N2", "--ntasks-per-node=1", "--kill-on-bad-exit=1", LAUNCH, "run",
                         "--rdzv-backend", "c10d", "--nproc-per-node", "2", "--python", PYTHON, WORKER, "--out", out],
                        timeout=240, check=False, cwd=CLUSTER.jobs_dir)
        check(r.returncode == 0, f"srun exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}")
        recs = records(out, 4, 5, "srun -N2 c10d")
        check_four_ranks(recs, recs[0]["SLURM_JOB_ID"])


def test_srun_explicit_master_port_wins():
    with tempfile.TemporaryDirectory() as out:
        from harness import free_port
        port = free_port()
        r = CLUSTER.run(["srun", "-N2", "--ntasks-per-node=1", "--kill-on-bad-exit=1", LAUNCH, "run",
                         "--nproc-per-node", "1", "--master-port", str(port), "--python", PYTHON, WORKER,
                         "--out", out], timeout=240, check=False, cwd=CLUSTER.jobs_dir)
        check(r.returncode == 0, f"srun exit {r.returncode}\nstderr: {r.stderr}")
        recs = records(out, 2, 5, "srun --master-port")
        check(all(x["MASTER_PORT"] == str(port) for x in recs.values()), f"--master-port lost: {recs}")
        check("kept from flags: --master-port" in r.stderr, f"no mention of the kept flag: {r.stderr}")


def test_srun_two_tasks_per_node_is_refused():
    r = CLUSTER.run(["srun", "-N1", "-n2", LAUNCH, "run", "--nproc-per-node", "1", "--python", PYTHON, WORKER,
                     "--out", "/nonexistent"], timeout=120, check=False, cwd=CLUSTER.jobs_dir)
    check(r.returncode != 0, "two tasks on one node were accepted")
    check("--ntasks-per-node=1" in r.stderr and "2 tasks on 1 node" in r.stderr,
          f"the error does not explain the fix: {r.stderr}")


def test_unknown_store_host_is_named():
    """A first node that neither DNS nor Slurm knows: exit 2 naming the node and the fix, at once."""
    env = dict(CLUSTER.env, SLURM_JOB_ID="77", SLURM_STEP_ID="0", SLURM_STEP_NUM_NODES="2", SLURM_NODEID="1",
               SLURM_STEP_NODELIST="nosuch[1-2]", SLURM_STEP_NUM_TASKS="2")
    r = subprocess.run([LAUNCH, "run", "--no-python", "/bin/true"], capture_output=True, text=True, timeout=60,
                       env=env)
    check(r.returncode == 2, f"exit {r.returncode}: {r.stderr}")
    check("cannot find the address of Slurm node nosuch1" in r.stderr and "--master-addr" in r.stderr,
          f"the error does not name the node and the fix: {r.stderr}")


def test_batch_script_without_srun_runs_on_one_node_and_says_so():
    with tempfile.TemporaryDirectory() as out:
        os.chmod(out, 0o777)
        r = CLUSTER.run(["sbatch", "--parsable", "-N2", "--ntasks-per-node=1", "-J", "nosrun", "-o", "nosrun-%j.out",
                         "--wrap", f"{LAUNCH} run --nproc-per-node 1 --python {PYTHON} {WORKER} --out {out}"],
                        timeout=60, cwd=CLUSTER.jobs_dir)
        job_id = r.stdout.strip().split(";")[0]
        info = CLUSTER.wait_job_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, 180)
        text = open(os.path.join(CLUSTER.jobs_dir, f"nosrun-{job_id}.out")).read()
        check(info["JobState"] == "COMPLETED", f"job {job_id} {info['JobState']}: {text}")
        check("not in an srun step: running on this node only" in text, f"no warning in the job output: {text}")
        recs = records(out, 1, 5, "batch-script run")
        check(recs[0]["world"] == 1, f"world {recs[0]['world']}: expected this node alone")


def submit(out, *extra, name):
    r = subprocess.run([LAUNCH, "sbatch", "--nnodes", "2", "--nproc-per-node", "2", "--python", PYTHON,
                        "--job-name", name, "--time", "10", "--submit", *extra, WORKER, "--out", out],
                       capture_output=True, text=True, timeout=60, env=CLUSTER.env, cwd=CLUSTER.jobs_dir)
    check(r.returncode == 0, f"ddp-launch sbatch --submit exit {r.returncode}: {r.stderr}")
    job_id = r.stdout.strip()
    check(job_id.isdigit(), f"no job id on stdout: {r.stdout!r}")
    return job_id


def test_sbatch_script_submitted_completes():
    with tempfile.TemporaryDirectory() as out:
        os.chmod(out, 0o777)
        job_id = submit(out, name="ddp-sbatch-test")
        info = CLUSTER.wait_job_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}, 240)
        log = os.path.join(CLUSTER.jobs_dir, f"ddp-sbatch-test-{job_id}.out")
        text = open(log).read() if os.path.exists(log) else f"(no {log})"
        check(info["JobState"] == "COMPLETED" and info.get("ExitCode") == "0:0",
              f"job {job_id}: {info.get('JobState')} {info.get('ExitCode')}\n{text}")
        check(info.get("NumNodes") == "2", f"job ran on {info.get('NumNodes')} nodes")
        check_four_ranks(records(out, 4, 5, "sbatch job"), job_id)
        check("rank 3 of 4 sum 10" in text, f"job output lacks rank 3's line: {text}")


def sbatch_wait(out, *extra, name, **kw):
    return subprocess.Popen([LAUNCH, "sbatch", "--nnodes", "2", "--nproc-per-node", "2", "--python", PYTHON,
                             "--job-name", name, "--submit", "--wait", "--wait-timeout", "300", *extra, WORKER,
                             "--out", out], env=CLUSTER.env, cwd=CLUSTER.jobs_dir, text=True, **kw)


def test_sbatch_wait_streams_output_and_returns_the_job_status():
    with tempfile.TemporaryDirectory() as out:
        os.chmod(out, 0o777)
        p = sbatch_wait(out, name="ddp-wait-ok", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = p.communicate(timeout=300)
        check(p.returncode == 0, f"exit {p.returncode}\nstdout: {stdout}\nstderr: {stderr}")
        job_id = stdout.splitlines()[0]
        check(job_id.isdigit(), f"the first line is not the job id: {stdout!r}")
        check("rank 3 of 4 sum 10" in stdout, f"the job's output was not streamed: {stdout!r}")
        check(f"job {job_id} succeeded (ExitCode=0:0)" in stderr, f"no final state line: {stderr}")


def test_sbatch_wait_reports_a_failed_job():
    with tempfile.TemporaryDirectory() as out:
        os.chmod(out, 0o777)
        r = subprocess.run([LAUNCH, "sbatch", "--nnodes", "2", "--nproc-per-node", "1", "--python", PYTHON,
                            "--job-name", "ddp-wait-fail", "--submit", "--wait", "--wait-timeout", "300", WORKER,
                            "--out", out, "--rank0-exit", "3"], env=CLUSTER.env, cwd=CLUSTER.jobs_dir,
                           capture_output=True, text=True, timeout=300)
        # The job's status is srun's, the highest of its tasks': 1 from the failing node's supervisor, or
        # 143 when the other supervisor was still running and --kill-on-bad-exit stopped it with SIGTERM.
        check(r.returncode in (1, 143), f"exit {r.returncode}, expected 1 or 143\n{r.stderr}")
        check(f"failed (ExitCode={r.returncode}:0)" in r.stderr, f"no failed state line: {r.stderr}")
        check("Root cause: rank 0" in r.stdout and "exited with code 3" in r.stdout,
              f"the streamed job output lacks the supervisor's failure summary: {r.stdout}")


def test_sbatch_wait_cancels_the_job_on_sigterm():
    with tempfile.TemporaryDirectory() as out:
        os.chmod(out, 0o777)
        p = sbatch_wait(out, "--shutdown-grace", "3", name="ddp-wait-cancel", stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
        try:
            job_id = p.stdout.readline().strip()
            check(job_id.isdigit(), f"no job id: {job_id!r}")
            records(out, 4, 180, "held job")
            p.send_signal(signal.SIGTERM)
            stdout, stderr = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        check(p.returncode == 143, f"exit {p.returncode}, expected 128+SIGTERM from CANCELLED 0:15\n{stderr}")
        check("cancelling job" in stderr and "cancelled" in stderr, f"no cancel lines: {stderr}")
        check(CLUSTER.job_info(job_id).get("JobState") == "CANCELLED", "the job is not CANCELLED")
        deadline = time.monotonic() + 30
        while slurm_job_pids(job_id) and time.monotonic() < deadline:
            time.sleep(0.2)
        check(not slurm_job_pids(job_id), f"processes of job {job_id} live on: {slurm_job_pids(job_id)}")


def slurm_job_pids(job_id):
    """Processes whose environment says SLURM_JOB_ID=job_id (srun tasks inherit it, workers too)."""
    needle = f"SLURM_JOB_ID={job_id}".encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    with open(f"/proc/{d}/stat") as s:
                        if s.read().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(int(d))
        except OSError:
            continue
    return found


def test_scancel_leaves_no_process():
    with tempfile.TemporaryDirectory() as out:
        os.chmod(out, 0o777)
        job_id = submit(out, "--shutdown-grace", "3", name="ddp-cancel-test")
        CLUSTER.wait_job_state(job_id, {"RUNNING"}, 120)
        recs = records(out, 4, 180, "held job")
        workers = [r["pid"] for r in recs.values()]
        before = slurm_job_pids(job_id)
        check(all(p in before for p in workers), f"workers {workers} not found by SLURM_JOB_ID among {before}")
        CLUSTER.run(["scancel", job_id], timeout=30)
        info = CLUSTER.wait_job_state(job_id, {"CANCELLED"}, 60)
        deadline = time.monotonic() + 30
        while slurm_job_pids(job_id) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = slurm_job_pids(job_id)
        descr = {p: open(f"/proc/{p}/cmdline").read().replace("\0", " ") for p in left if os.path.exists(f"/proc/{p}")}
        check(not left, f"after scancel ({info.get('JobState')}) these processes of job {job_id} live on: {descr}")


def test_cluster_of_a_killed_owner_is_stopped():
    """A test SIGKILLed (or timed out by ctest) leaves no Slurm daemon or job behind: the guard stops them."""
    code = ("import sys, time; sys.path.insert(0, %r); from slurm_cluster import SlurmCluster; "
            "c = SlurmCluster(nodes=1).start(); time.sleep(600)" % HERE)
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        up = LineReader(owner.stdout).wait_for("slurm cluster up", 60, "the owner's cluster starting")
        base = up.split(" under ", 1)[1].split()[0]
        check(base.startswith("/tmp/ddp-slurm-"), f"the owner printed no cluster dir: {base!r}")
        pids = []
        for f in ("run/slurmctld.pid", "run/slurmd-n1.pid", "munge/munged.pid"):
            with open(os.path.join(base, f)) as fh:
                pids.append(int(fh.read().strip()))
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 30
    while (os.path.isdir(base) or any(alive(p) for p in pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    check(not os.path.isdir(base), f"{base} is still there 30s after its owner died")
    left = [p for p in pids if alive(p)]
    check(not left, f"daemons {left} of the dead owner's cluster still run")


def _exit_on_sigterm(*_):
    sys.exit(143)  # unwinds through `with SlurmCluster`, which stops the cluster


if __name__ == "__main__":
    skip_unless_available()
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    with SlurmCluster(nodes=2) as CLUSTER:
        run_tests([test_srun_two_nodes_trains_with_slurm_topology, test_srun_c10d_joins_at_the_endpoint_from_slurm,
                   test_srun_explicit_master_port_wins,
                   test_srun_two_tasks_per_node_is_refused, test_unknown_store_host_is_named,
                   test_batch_script_without_srun_runs_on_one_node_and_says_so, test_sbatch_script_submitted_completes,
                   test_scancel_leaves_no_process, test_sbatch_wait_streams_output_and_returns_the_job_status,
                   test_sbatch_wait_reports_a_failed_job, test_sbatch_wait_cancels_the_job_on_sigterm,
                   test_cluster_of_a_killed_owner_is_stopped])
