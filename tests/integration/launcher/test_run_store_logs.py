"""`ddp-launch run --store file` (a FileStore rendezvous: cleaned before the launch, fresh per
attempt, removed after), torchrun's log flags (-r/--redirects, -t/--tee, --local-ranks-filter,
--log-dir layout), and the sweep of what a supervisor SIGKILLed with its guardian left, with real
processes."""
import json
import glob
import os
import re
import subprocess
import tempfile
import time

from harness import DDP_LAUNCH, PYTHON, check, run_tests, alive, children, remove_matching, remove_path, restarts

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "store_logs_worker.py")
TREE = os.path.join(HERE, "tree_worker.py")
DIST = ["--dist-url", "{filestore_url}", "--world-size", "{world_size}", "--rank", "{rank}"]


def launch(*args, timeout=60):
    return subprocess.run([DDP_LAUNCH, "run", "--python", PYTHON, *args], capture_output=True, text=True,
                          timeout=timeout)


def read(path):
    with open(path) as f:
        return f.read()


def run_dirs_in(log_dir):
    """The per-run directories (torchrun's <run_id>_<random>) a --log-dir holds."""
    return sorted(p for p in glob.glob(os.path.join(log_dir, "*_*")) if os.path.isdir(p))


def only_run_dir(log_dir):
    dirs = run_dirs_in(log_dir)
    check(len(dirs) == 1, f"expected one run directory in {log_dir}: {dirs}")
    return dirs[0]


def test_filestore_stale_file_of_killed_run_is_removed_before_the_next():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "rdzv", "store")
        sup = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", "--store", "file",
                                "--filestore", path, WORKER, *DIST, "--sleep", "300"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pids = []
        lines = []
        deadline = time.monotonic() + 45
        while len(pids) < 2 and time.monotonic() < deadline:
            line = sup.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"ready pid (\d+)", line)
            if m:
                pids.append(int(m.group(1)))
        if len(pids) < 2:
            sup.kill()
            check(False, f"workers did not meet through the FileStore: {lines} {sup.stderr.read()}")
        check(any(f"filestore {os.path.abspath(path)}" in l for l in lines), f"DDP_FILESTORE_PATH: {lines}")
        check(os.path.exists(path), "no FileStore file at --filestore PATH while the job runs")
        guardians = children(sup.pid) - set(pids)
        sup.kill()
        sup.wait(timeout=10)
        remove_path(os.path.join(tempfile.gettempdir(), f"ddp-launch-none-{sup.pid}"))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(alive(p) for p in pids + list(guardians)):
            time.sleep(0.02)
        check(not [p for p in pids if alive(p)], "the guardian did not kill the workers")
        check(os.path.exists(path), "the killed run left no stale file (the test proves nothing)")

        r = launch("--nproc-per-node", "2", "--store", "file", "--filestore", path, WORKER, *DIST)
        check(r.returncode == 0, f"second run on the stale path: exit {r.returncode}: {r.stderr}")
        check("removed it before the launch" in r.stderr, f"the log does not say the stale file was removed: "
              f"{r.stderr}")
        check("[rank 1]: rank 1 of 2 sum 3 attempt 0" in r.stdout, f"output: {r.stdout}")
        check(not os.path.exists(path), "the FileStore file is still there after the job")


@restarts
def test_filestore_under_run_dir_is_fresh_per_attempt():
    with tempfile.TemporaryDirectory() as d:
        r = launch("--nproc-per-node", "2", "--store", "file", "--log-dir", d, "--max-restarts", "1", WORKER, *DIST,
                   "--fail-rank", "1")
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        path = os.path.join(only_run_dir(d), "filestore")
        for attempt in (0, 1):
            check(f"[rank 0]: rank 0 of 2 sum 3 attempt {attempt} filestore {path}" in r.stdout,
                  f"attempt {attempt} did not meet through {path}: {r.stdout}")
        check("a fresh one for the restart" in r.stderr, f"the restart did not get a fresh file: {r.stderr}")
        check(not os.path.exists(path), "the FileStore file is still there after the job")


def test_filestore_in_use_is_an_error_naming_the_holder():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "store")
        code = ("import sys, time, torch.distributed as dist\n"
                "s = dist.FileStore(sys.argv[1], 2)\ns.set('k', 'v')\nprint('ready', flush=True)\ntime.sleep(60)")
        holder = subprocess.Popen([PYTHON, "-c", code, path], stdout=subprocess.PIPE, text=True)
        try:
            check(holder.stdout.readline().strip() == "ready", "the FileStore holder did not start")
            run_id = f"filestore-in-use-{os.getpid()}"
            r = launch("--nproc-per-node", "1", "--rdzv-id", run_id, "--filestore", path, WORKER, *DIST, timeout=30)
        finally:
            holder.kill()
            holder.wait()
        check(r.returncode != 0, "started on a FileStore path another process uses")
        check(str(holder.pid) in r.stderr, f"the error does not name the holder {holder.pid}: {r.stderr}")
        check(os.path.exists(path), "the file in use was removed")
        # Nothing ran: neither the temporary run directory nor the process record stays behind.
        left = glob.glob(os.path.join(tempfile.gettempdir(), f"ddp-launch-{run_id}-*"))
        check(not left, f"a start that failed left {left}")


def test_redirects_keep_output_off_the_console_and_in_the_files():
    with tempfile.TemporaryDirectory() as d:
        events = os.path.join(d, "events.jsonl")
        r = launch("--nproc-per-node", "2", "-r", "3", "--rdzv-id", "job/7", "--log-dir", d, "--events", events,
                   WORKER)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check("from rank" not in r.stdout + r.stderr, f"redirected output reached the console: {r.stdout}{r.stderr}")
        first = only_run_dir(d)
        # torchrun's layout: <log_dir>/<run_id>_<random>/attempt_<n>/<local_rank>/
        check(re.fullmatch(r"job_7_\w{6}", os.path.basename(first)), f"run directory name: {first}")
        check(f"per-rank log files go under {first}" in r.stderr, f"the log does not name {first}: {r.stderr}")
        started = [json.loads(l) for l in open(events) if '"started"' in l][0]
        check(started["log_dir"] == first and started["run_dir"] == first, f"started event: {started}")
        for rank in (0, 1):
            base = os.path.join(first, "attempt_0", str(rank))
            check(read(os.path.join(base, "stdout.log")) == f"out from rank {rank}\n", f"rank {rank} stdout.log")
            check(read(os.path.join(base, "stderr.log")) == f"err from rank {rank}\n", f"rank {rank} stderr.log")
        check(not os.path.exists(os.path.join(first, "processes.json")), "processes.json left after a clean exit")
        # per local rank, stdout only: rank 0 untouched, rank 1's stdout to its file, its stderr shown
        r = launch("--nproc-per-node", "2", "--redirects", "1:1", "--log-dir", d, WORKER)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check("[rank 0]: out from rank 0" in r.stdout and "[rank 0]: err from rank 0" in r.stderr, "rank 0 hidden")
        check("out from rank 1" not in r.stdout, f"rank 1's redirected stdout on the console: {r.stdout}")
        check("[rank 1]: err from rank 1" in r.stderr, f"rank 1's stderr was not shown: {r.stderr}")
        second = [p for p in run_dirs_in(d) if p != first]
        check(len(second) == 1 and os.path.basename(second[0]).startswith("none_"), f"second run: {run_dirs_in(d)}")
        check(read(os.path.join(second[0], "attempt_0", "1", "stdout.log")) == "out from rank 1\n", "rank 1 stdout")
        check(read(os.path.join(first, "attempt_0", "1", "stdout.log")) == "out from rank 1\n",
              "the second run on the --log-dir touched the first run's files")


def test_tee_without_log_dir_writes_files_under_the_run_dir_and_the_console():
    r = launch("--nproc-per-node", "2", "-t", "3", WORKER)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    for rank in (0, 1):
        check(f"[rank {rank}]: out from rank {rank}" in r.stdout, f"rank {rank} stdout not teed: {r.stdout}")
        check(f"[rank {rank}]: err from rank {rank}" in r.stderr, f"rank {rank} stderr not teed: {r.stderr}")
    m = re.search(r"log files go under (\S+)", r.stderr)
    check(m, f"the log does not say where the files are: {r.stderr}")
    for rank in (0, 1):
        check(read(os.path.join(m.group(1), "attempt_0", str(rank), "stdout.log")) == f"out from rank {rank}\n",
              f"rank {rank} stdout.log under {m.group(1)}")
    remove_path(m.group(1))


def test_local_ranks_filter_hides_rank_1_on_the_console_only():
    with tempfile.TemporaryDirectory() as d:
        r = launch("--nproc-per-node", "2", "--local-ranks-filter", "0", "--tee", "3", "--log-dir", d, WORKER)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check("[rank 0]: out from rank 0" in r.stdout, f"rank 0 hidden: {r.stdout}")
        check("from rank 1" not in r.stdout + r.stderr, f"rank 1 on the console: {r.stdout}{r.stderr}")
        run = only_run_dir(d)
        check(read(os.path.join(run, "attempt_0", "1", "stdout.log")) == "out from rank 1\n", "rank 1 stdout.log")
        check(read(os.path.join(run, "attempt_0", "1", "stderr.log")) == "err from rank 1\n", "rank 1 stderr.log")


def test_temporary_run_dir_removed_unless_it_holds_requested_logs():
    run_id = f"tmpdir-test-{os.getpid()}"
    r = launch("--nproc-per-node", "2", "--rdzv-id", run_id, "--store", "file", WORKER, *DIST)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    left = glob.glob(os.path.join(tempfile.gettempdir(), f"ddp-launch-{run_id}-*"))
    check(not left, f"the temporary run directory (and FileStore) outlived the job: {left}")
    r = launch("--nproc-per-node", "1", "--rdzv-id", run_id, "-r", "1", WORKER)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    m = re.search(r"log files go under (\S+)", r.stderr)
    check(m and read(os.path.join(m.group(1), "attempt_0", "0", "stdout.log")) == "out from rank 0\n",
          f"the redirected output is gone: {r.stderr}")
    remove_path(m.group(1))


def test_bad_log_flag_values_are_usage_errors():
    for args, flag in ((["-r", "4"], "--redirects"), (["--tee", "0:1,x"], "--tee"),
                       (["--local-ranks-filter", "5"], "--local-ranks-filter"),
                       (["--rdzv-endpoint", "127.0.0.1:x"], "--rdzv-endpoint")):
        r = launch("--nproc-per-node", "2", *args, WORKER, timeout=15)
        check(r.returncode != 0, f"{args} accepted")
        check(flag in r.stderr, f"{args}: the error does not name {flag}: {r.stderr}")


def sweep_after_supervisor_and_guardian_killed(same_run, record_path):
    """Starts a 2-rank tree job with `same_run` flags, SIGKILLs its guardian and then itself, and
    checks that the next run with the same flags sweeps the orphaned grandchildren."""
    with tempfile.TemporaryDirectory() as d:
        sup = subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "2", *same_run(d),
                                TREE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        workers, grandchildren = [], []
        deadline = time.monotonic() + 30
        while len(workers) < 2 and time.monotonic() < deadline:
            m = re.search(r"pids (\d+) (\d+)", sup.stdout.readline())
            if m:
                workers.append(int(m.group(1)))
                grandchildren.append(int(m.group(2)))
        try:
            check(len(workers) == 2, "workers did not report their pids")
            record_path = record_path or os.path.join(only_run_dir(d), "processes.json")
            record = json.load(open(record_path))
            check(record["supervisor"]["pid"] == sup.pid, f"processes.json: {record}")
            check(sorted(w["pid"] for w in record["workers"]) == sorted(workers), f"processes.json: {record}")
            guardians = children(sup.pid) - set(workers)
            check(guardians == {record["guardian"]["pid"]}, f"guardian {guardians} vs {record}")
            os.kill(record["guardian"]["pid"], 9)
            sup.kill()
            sup.wait(timeout=10)
            time.sleep(0.5)
            check(all(alive(p) for p in grandchildren), "no orphaned grandchildren (the test proves nothing)")

            r = launch("--nproc-per-node", "1", *same_run(d), WORKER)
            check(r.returncode == 0, f"successor: exit {r.returncode}: {r.stderr}")
            check("swept 2 process(es) a killed supervisor" in r.stderr, f"no sweep reported: {r.stderr}")
            deadline = time.monotonic() + 1
            while time.monotonic() < deadline and any(alive(p) for p in grandchildren):
                time.sleep(0.02)
            check(not [p for p in grandchildren if alive(p)], "the successor did not sweep the orphans")
            check(not os.path.exists(record_path), f"{record_path} left after a clean exit")
        finally:
            for p in workers + grandchildren:
                if alive(p):
                    os.kill(p, 9)
            if sup.poll() is None:
                sup.kill()


def test_successor_on_the_same_log_dir_sweeps_what_a_supervisor_killed_with_its_guardian_left():
    sweep_after_supervisor_and_guardian_killed(lambda d: ["--log-dir", d], None)


def test_successor_with_the_same_run_id_sweeps_too():
    run_id = f"sweep-test-{os.getpid()}"
    try:
        sweep_after_supervisor_and_guardian_killed(
            lambda d: ["--rdzv-id", run_id],
            os.path.join(tempfile.gettempdir(), f"ddp-launch-{run_id}-node0.processes.json"))
    finally:  # the killed supervisor's temporary run directory
        remove_matching(os.path.join(tempfile.gettempdir(), f"ddp-launch-{run_id}-*"))


def test_live_supervisor_is_never_swept():
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as run_dir:
        run_id = f"live-test-{os.getpid()}"
        sups, pids = [], []
        try:
            for same_run in (["--log-dir", d], ["--rdzv-id", run_id], ["--run-dir", run_dir]):
                sups.append(subprocess.Popen([DDP_LAUNCH, "run", "--python", PYTHON, "--nproc-per-node", "1",
                                              *same_run, TREE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             text=True))
                m = re.search(r"pids (\d+) (\d+)", sups[-1].stdout.readline())
                check(m, "the worker did not start")
                pids += [int(m.group(1)), int(m.group(2))]
            # torchrun's layout: runs share a --log-dir, each in its own run directory
            r = launch("--nproc-per-node", "1", "--log-dir", d, WORKER, timeout=30)
            check(r.returncode == 0, f"a second run on a live run's --log-dir: exit {r.returncode}: {r.stderr}")
            check("swept" not in r.stderr, f"claimed a sweep: {r.stderr}")
            check(len(run_dirs_in(d)) == 2, f"two runs, two run directories: {run_dirs_in(d)}")
            check(any(os.path.exists(os.path.join(p, "processes.json")) for p in run_dirs_in(d)),
                  "the live run's processes.json was removed")
            # --run-dir names one exact directory: a live run's is refused, naming it
            r = launch("--nproc-per-node", "1", "--run-dir", run_dir, WORKER, timeout=30)
            check(r.returncode != 0 and f"pid {sups[2].pid}" in r.stderr, f"a second run on a live run's --run-dir: "
                  f"exit {r.returncode}: {r.stderr}")
            r = launch("--nproc-per-node", "1", "--rdzv-id", run_id, WORKER, timeout=30)
            check(r.returncode == 0, f"a second run with a live run's id: exit {r.returncode}: {r.stderr}")
            check("another supervisor" in r.stderr, f"no warning: {r.stderr}")
            check(all(alive(p) for p in pids), "the live runs' processes were killed")
        finally:
            for sup in sups:
                sup.kill()
                sup.wait()
            # the killed run id's record and temporary run directory
            remove_matching(os.path.join(tempfile.gettempdir(), f"ddp-launch-{run_id}-*"))


def test_cleanup_tolerates_a_run_dir_removed_meanwhile():
    # The CI flake of test_live_supervisor_is_never_swept: the cleanup's glob found a killed
    # supervisor's temporary run dir, which its guardian removed before the rmtree got there.
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "ddp-launch-x-1", "attempt_0", "0"))
        open(os.path.join(d, "ddp-launch-x-2.processes.json"), "w").close()
        found = glob.glob(os.path.join(d, "ddp-launch-x-*"))
        check(len(found) == 2, f"fixture: {found}")
        for p in found:  # the guardian (and a successor) remove them meanwhile
            os.rename(p, os.path.join(d, "gone-" + os.path.basename(p)))
        for p in found:
            remove_path(p)  # raised FileNotFoundError in the cleanups before
        remove_matching(os.path.join(d, "ddp-launch-x-*"))
        check(sorted(os.listdir(d)) == sorted("gone-" + os.path.basename(p) for p in found),
              f"removed what it was not asked to: {os.listdir(d)}")


def test_successor_leaves_reused_pids_alone():
    with tempfile.TemporaryDirectory() as d:
        bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
        try:
            fake = {"supervisor": {"pid": 999999999, "pgid": 0, "start_time": 1}, "guardian": {"pid": 0},
                    "attempt": 0, "workers": [{"pid": bystander.pid, "pgid": bystander.pid, "start_time": 1,
                                               "rank": 0, "local_rank": 0}]}
            # where earlier versions kept it, and a run directory of torchrun's layout
            os.makedirs(os.path.join(d, "none_old123"))
            for path in (os.path.join(d, "processes.json"), os.path.join(d, "none_old123", "processes.json")):
                with open(path, "w") as f:
                    json.dump(fake, f)
            r = launch("--nproc-per-node", "1", "--log-dir", d, WORKER)
            check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
            check(bystander.poll() is None, "a process whose start time does not match was killed")
            check("swept" not in r.stderr, f"claimed a sweep: {r.stderr}")
        finally:
            bystander.kill()
            bystander.wait()


run_tests([
    test_filestore_stale_file_of_killed_run_is_removed_before_the_next,
    test_filestore_under_run_dir_is_fresh_per_attempt,
    test_filestore_in_use_is_an_error_naming_the_holder,
    test_redirects_keep_output_off_the_console_and_in_the_files,
    test_tee_without_log_dir_writes_files_under_the_run_dir_and_the_console,
    test_local_ranks_filter_hides_rank_1_on_the_console_only,
    test_temporary_run_dir_removed_unless_it_holds_requested_logs,
    test_bad_log_flag_values_are_usage_errors,
    test_successor_on_the_same_log_dir_sweeps_what_a_supervisor_killed_with_its_guardian_left,
    test_successor_with_the_same_run_id_sweeps_too,
    test_live_supervisor_is_never_swept,
    test_cleanup_tolerates_a_run_dir_removed_meanwhile,
    test_successor_leaves_reused_pids_alone,
])
