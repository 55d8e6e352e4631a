"""torch 2.x's output options with real worker processes: --duplicate-stdout-filters /
--duplicate-stderr-filters copy every rank's matching lines, with their prefix, to
attempt_N/filtered_stdout.log / filtered_stderr.log in the run's directory (one file per attempt, as
torch's DefaultLogsSpecs places them), and $TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE replaces the
`[rank N]: ` console prefix."""
import os
import re
import subprocess
import tempfile

from harness import DDP_LAUNCH, check, run_tests

# Each rank: matching and non-matching lines on both streams; a filter with an escaped comma.
WORKER = ('echo "step 1 loss=0.5 rank $RANK"; echo "noise $RANK"; echo "acc,top1 90 rank $RANK"; '
          'echo "acc 10 rank $RANK"; echo "WARNING: slow rank $RANK" >&2; echo "debug $RANK" >&2')
# Attempt 0: local rank 1 fails after one matching line; attempt 1: both ranks succeed.
RESTARTING = ('echo "loss attempt $TORCHELASTIC_RESTART_COUNT rank $RANK"; '
              'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "$LOCAL_RANK" = 1 ]; then exit 3; fi')


def launch(*args, env=None, timeout=60):
    return subprocess.run([DDP_LAUNCH, "run", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def only_run_dir(log_dir):
    dirs = [os.path.join(log_dir, n) for n in os.listdir(log_dir) if os.path.isdir(os.path.join(log_dir, n))]
    check(len(dirs) == 1, f"expected one run directory in {log_dir}: {dirs}")
    return dirs[0]


def lines_of(path):
    check(os.path.isfile(path), f"{path} is missing")
    with open(path) as f:
        text = f.read()
    check(text.endswith("\n"), f"{path}: the last line has no newline: {text!r}")
    return sorted(text.splitlines())


def test_matching_lines_of_every_rank_go_to_one_file_per_stream():
    with tempfile.TemporaryDirectory() as d:
        r = launch("--nproc-per-node", "2", "--log-dir", d, "--duplicate-stdout-filters", "loss,acc,,top1",
                   "--duplicate_stderr_filters", "WARN", "--no-python", "/bin/sh", "-c", WORKER)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        attempt = os.path.join(only_run_dir(d), "attempt_0")
        want_out = sorted(f"[rank {k}]: {line} rank {k}" for k in (0, 1) for line in ("step 1 loss=0.5", "acc,top1 90"))
        check(lines_of(os.path.join(attempt, "filtered_stdout.log")) == want_out,
              f"filtered_stdout.log: {lines_of(os.path.join(attempt, 'filtered_stdout.log'))}")
        want_err = sorted(f"[rank {k}]: WARNING: slow rank {k}" for k in (0, 1))
        check(lines_of(os.path.join(attempt, "filtered_stderr.log")) == want_err,
              f"filtered_stderr.log: {lines_of(os.path.join(attempt, 'filtered_stderr.log'))}")
        # The console is unchanged: every line, filtered or not.
        for k in (0, 1):
            check(f"[rank {k}]: noise {k}\n" in r.stdout and f"[rank {k}]: acc 10 rank {k}\n" in r.stdout,
                  f"console stdout: {r.stdout}")
            check(f"[rank {k}]: debug {k}\n" in r.stderr, f"console stderr: {r.stderr}")
    # Only a stream with filters gets a file.
    with tempfile.TemporaryDirectory() as d:
        r = launch("--nproc-per-node", "2", "--log-dir", d, "--duplicate-stderr-filters", "WARN",
                   "--no-python", "/bin/sh", "-c", WORKER)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        attempt = os.path.join(only_run_dir(d), "attempt_0")
        check(len(lines_of(os.path.join(attempt, "filtered_stderr.log"))) == 2, "filtered_stderr.log")
        check(not os.path.exists(os.path.join(attempt, "filtered_stdout.log")), "a filtered_stdout.log without filters")


def test_each_attempt_has_its_own_filtered_file():
    with tempfile.TemporaryDirectory() as d:
        r = launch("--nproc-per-node", "2", "--max-restarts", "1", "--log-dir", d,
                   "--duplicate-stdout-filters", "loss", "--no-python", "/bin/sh", "-c", RESTARTING)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        run = only_run_dir(d)
        # Rank 0 of attempt 0 may be stopped before it prints: only the failing rank's line is certain.
        got = lines_of(os.path.join(run, "attempt_0", "filtered_stdout.log"))
        check("[rank 1]: loss attempt 0 rank 1" in got and all("loss attempt 0 " in x for x in got), f"attempt 0: {got}")
        got = lines_of(os.path.join(run, "attempt_1", "filtered_stdout.log"))
        check(got == sorted(f"[rank {k}]: loss attempt 1 rank {k}" for k in (0, 1)), f"attempt 1: {got}")


def test_without_log_dir_the_temporary_run_directory_is_kept_and_named():
    with tempfile.TemporaryDirectory() as tmp:
        r = launch("--nproc-per-node", "2", "--duplicate-stdout-filters", "loss", "--no-python", "/bin/sh", "-c",
                   WORKER, env={"TMPDIR": tmp})
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        m = re.search(r"no --log-dir: log files go under (\S+)", r.stderr)
        check(m is not None and m.group(1).startswith(tmp), f"no word of where the files are: {r.stderr}")
        got = lines_of(os.path.join(m.group(1), "attempt_0", "filtered_stdout.log"))
        check(got == sorted(f"[rank {k}]: step 1 loss=0.5 rank {k}" for k in (0, 1)), f"filtered_stdout.log: {got}")


def test_the_prefix_template_replaces_the_console_prefix_and_labels_filtered_lines():
    template = "[${role_name}${rank}|${local_rank}]:"
    with tempfile.TemporaryDirectory() as d:
        r = launch("--nproc-per-node", "2", "--role", "trainer", "--log-dir", d, "--duplicate-stderr-filters", "WARN",
                   "--no-python", "/bin/sh", "-c", WORKER, env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": template})
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        for k in (0, 1):
            # torch writes the expanded prefix and the line with nothing between them.
            check(f"\n[trainer{k}|{k}]:noise {k}\n" in "\n" + r.stdout, f"console stdout: {r.stdout}")
            check(f"[trainer{k}|{k}]:debug {k}\n" in r.stderr, f"console stderr: {r.stderr}")
        check("[rank " not in r.stdout, f"the default prefix is still used: {r.stdout}")
        check("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE" not in r.stderr, f"a warning for a valid template: {r.stderr}")
        got = lines_of(os.path.join(only_run_dir(d), "attempt_0", "filtered_stderr.log"))
        check(got == sorted(f"[trainer{k}|{k}]:WARNING: slow rank {k}" for k in (0, 1)), f"filtered_stderr.log: {got}")


def test_unknown_template_names_are_printed_as_written_with_a_warning():
    r = launch("--nproc-per-node", "2", "--no-python", "/bin/sh", "-c", 'echo "hi $RANK"',
               env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "<${host} $$$rank> "})
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    for k in (0, 1):
        check(f"<${{host}} ${k}> hi {k}\n" in r.stdout, f"console stdout: {r.stdout}")
    check("unknown name(s) ${host}, printed as written" in r.stderr, f"no warning: {r.stderr}")


def test_a_flood_of_matching_lines_arrives_whole_and_in_order():
    # 2 × 40000 lines of 80 bytes: under the writer's 8 MiB queue bound, so none may be dropped.
    n = 40000
    flood = f"awk 'BEGIN {{ for (i = 0; i < {n}; i++) printf \"loss %d {'x' * 60}\\n\", i }}'"
    with tempfile.TemporaryDirectory() as d:
        r = launch("--nproc-per-node", "2", "--log-dir", d, "--duplicate-stdout-filters", "loss",
                   "--no-python", "/bin/sh", "-c", flood, timeout=120)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}")
        check("dropped" not in r.stderr, f"lines dropped: {r.stderr[-2000:]}")
        with open(os.path.join(only_run_dir(d), "attempt_0", "filtered_stdout.log")) as f:
            lines = f.read().splitlines()
        for k in (0, 1):
            mine = [x for x in lines if x.startswith(f"[rank {k}]: ")]
            want = [f"[rank {k}]: loss {i} {'x' * 60}" for i in range(n)]
            check(mine == want, f"rank {k}: {len(mine)} of {n} lines, or out of order")


def test_help_names_the_filtered_files():
    r = launch("--help")
    check("--duplicate-stdout-filters" in r.stdout and "filtered_stdout.log" in r.stdout, f"help: {r.stdout[-3000:]}")


run_tests([
    test_matching_lines_of_every_rank_go_to_one_file_per_stream,
    test_each_attempt_has_its_own_filtered_file,
    test_without_log_dir_the_temporary_run_directory_is_kept_and_named,
    test_the_prefix_template_replaces_the_console_prefix_and_labels_filtered_lines,
    test_unknown_template_names_are_printed_as_written_with_a_warning,
    test_a_flood_of_matching_lines_arrives_whole_and_in_order,
    test_help_names_the_filtered_files,
])
