"""The seed's stale FileStore on Windows, under Wine: `ddp-launch.exe clean` removes a stale file
(path or file:///Z:/… URL); one held open by an orphaned process (its launcher gone) is diagnosed as
in use by a dead run and kept, and `--force` ends that process and removes the file; a live holder
is never ended; a holder nothing names makes the removal fail with a clear error (Windows will not
delete a file open without delete sharing). `run --store file` removes a stale file before the launch
and gives every rank its file:///Z:/… URL; a script naming a FileStore held by a dead run is refused
with the command that fixes it."""
import os
import subprocess
import sys
import tempfile
import time

from harness import LineReader, check, run_tests
from wine import CHILD, run_exe, wait_gone_windows, wine_command, windows_path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "filestore"))
from fs_helpers import killed_rendezvous_bytes, write_file  # noqa: E402


def url(path):
    return "file:///" + windows_path(path).replace("\\", "/")


def start_orphan_holder(path):
    """A holder of `path` whose parent exits at once (its launcher is gone); returns its Windows pid.
    The holder keeps the output pipe it inherited: only the first line is read."""
    launcher = subprocess.Popen(wine_command(CHILD, "orphan", "hold", windows_path(path), "120000"),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = LineReader(launcher.stdout, launcher, "ddp-test-child orphan")
    line = out.wait_for("orphan ", 60, "the orphan's pid", prefix=True)
    launcher.wait(timeout=60)
    out.wait_for("holding", 60, f"the orphan holding {path}", prefix=True)
    return line.split()[1]


class Holder:
    """A live process (started from Linux: it has no Windows parent, so it is no orphan) holding a file
    open: `with Holder(argv, env) as pid`."""

    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(wine_command(CHILD, *argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env)

    def __enter__(self):
        LineReader(self.proc.stdout, self.proc, "holder").wait_for("holding", 60, "the holder", prefix=True)
        return self.proc

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def test_stale_file_is_removed_by_path_and_by_url():
    with tempfile.TemporaryDirectory(prefix="ddp-win-fs-") as tmp:
        for name, arg in (("a", None), ("b", "url")):
            path = os.path.join(tmp, name)
            write_file(path, killed_rendezvous_bytes())
            r = run_exe("clean", url(path) if arg else windows_path(path))
            check(r.returncode == 0, f"exit {r.returncode}: {r.stdout} {r.stderr}")
            check("verdict: stale" in r.stdout and "removed" in r.stdout, r.stdout)
            check(not os.path.exists(path), f"{path} is still there")


def test_non_ascii_path_is_found_and_printed_as_given():
    # Issue 25, 3.8: a path with é and 中 reached clean as the ANSI code page's '?' and was "absent";
    # its name is printed as UTF-8, as given.
    env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}  # Wine's Unix names: UTF-8
    with tempfile.TemporaryDirectory(prefix="ddp-win-José-") as tmp:
        path = os.path.join(tmp, "store-é中")
        write_file(path, killed_rendezvous_bytes())
        r = run_exe("clean", "--dry-run", windows_path(path), env=env, encoding="utf-8", errors="replace")
        check(r.returncode == 0 and "verdict: stale" in r.stdout, f"exit {r.returncode}: {r.stdout} {r.stderr}")
        check(f"{windows_path(path)}: c10d FileStore" in r.stdout, f"the name is not printed as given: {r.stdout}")
        r = run_exe("clean", url(path), env=env, encoding="utf-8", errors="replace")
        check(r.returncode == 0 and "removed" in r.stdout, f"exit {r.returncode}: {r.stdout} {r.stderr}")
        check(not os.path.exists(path), f"{path} is still there")


def test_orphaned_holder_is_diagnosed_then_ended_with_force():
    with tempfile.TemporaryDirectory(prefix="ddp-win-fs-") as tmp:
        path = os.path.join(tmp, "rdzv")
        write_file(path, killed_rendezvous_bytes())
        holder = start_orphan_holder(path)
        time.sleep(1)
        r = run_exe("clean", url(path))
        check(r.returncode == 1, f"exit {r.returncode}: {r.stdout} {r.stderr}")
        check("verdict: in use" in r.stdout, r.stdout)
        check(f"pid {holder} " in r.stdout and "names it in its command line" in r.stdout, r.stdout)
        check(f"pid {holder} belongs to a dead run: its parent" in r.stdout, r.stdout)
        check("clean --force" in r.stdout, f"no hint naming --force: {r.stdout}")
        check(os.path.exists(path), "removed without --force")
        r = run_exe("clean", "--force", url(path))
        check(r.returncode == 0, f"exit {r.returncode}: {r.stdout} {r.stderr}")
        check(f"ended pid {holder}" in r.stdout and "removed" in r.stdout, r.stdout)
        check(not os.path.exists(path), f"{path} is still there")
        check(not wait_gone_windows([holder], 10), f"the holder {holder} still runs")


def test_live_holder_is_never_ended():
    with tempfile.TemporaryDirectory(prefix="ddp-win-fs-") as tmp:
        path = os.path.join(tmp, "rdzv")
        write_file(path, killed_rendezvous_bytes())
        with Holder(["hold", windows_path(path), "120000"]) as holder:
            r = run_exe("clean", "--force", windows_path(path))
            check(r.returncode == 1, f"exit {r.returncode}: {r.stdout} {r.stderr}")
            check("verdict: in use" in r.stdout and "dead run" not in r.stdout, r.stdout)
            check(holder.poll() is None, "a live holder was ended")
            check(os.path.exists(path), "a file in use was removed")


def test_holder_nothing_names_makes_the_removal_fail_clearly():
    with tempfile.TemporaryDirectory(prefix="ddp-win-fs-") as tmp:
        path = os.path.join(tmp, "rdzv")
        write_file(path, killed_rendezvous_bytes())
        with Holder(["hold-env", "HELD_FILE", "120000"], env=dict(os.environ, HELD_FILE=windows_path(path))):
            r = run_exe("clean", windows_path(path))
            check(r.returncode == 1, f"exit {r.returncode}: {r.stdout} {r.stderr}")
            check("a process has it open" in r.stdout, f"no reason for the failed removal: {r.stdout}")
            check(os.path.exists(path), "removed while open")


def test_run_store_file_removes_a_stale_file_and_gives_windows_urls():
    with tempfile.TemporaryDirectory(prefix="ddp-win-fs-") as tmp:
        path = os.path.join(tmp, "fs")
        write_file(path, killed_rendezvous_bytes())
        r = run_exe("run", "--nproc-per-node", "2", "--store", "file", "--filestore", url(path), "--no-python",
                    CHILD, "print", "url {filestore_url}", timeout=120)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        check("removed it before the launch" in r.stderr, f"the stale file was not reported: {r.stderr}")
        expected = url(path)
        out = r.stdout.replace("\r", "")
        for rank in (0, 1):
            check(f"[rank {rank}]: url {expected}" in out, f"rank {rank} got no {expected}: {out}")


def test_run_refuses_a_filestore_held_by_a_dead_run():
    with tempfile.TemporaryDirectory(prefix="ddp-win-fs-") as tmp:
        path = os.path.join(tmp, "init")
        write_file(path, killed_rendezvous_bytes())
        holder = start_orphan_holder(path)
        try:
            time.sleep(1)
            r = run_exe("run", "--nproc-per-node", "2", "--no-python", CHILD, "print", f"--dist-url={url(path)}",
                        timeout=120)
            check(r.returncode == 1, f"exit {r.returncode}: {r.stderr}")
            check("in use" in r.stderr and "clean" in r.stderr, f"no error naming clean: {r.stderr}")
        finally:
            run_exe("clean", "--force", windows_path(path))
            check(not wait_gone_windows([holder], 10), f"the holder {holder} still runs")


run_tests([
    test_stale_file_is_removed_by_path_and_by_url,
    test_non_ascii_path_is_found_and_printed_as_given,
    test_orphaned_holder_is_diagnosed_then_ended_with_force,
    test_live_holder_is_never_ended,
    test_holder_nothing_names_makes_the_removal_fail_clearly,
    test_run_store_file_removes_a_stale_file_and_gives_windows_urls,
    test_run_refuses_a_filestore_held_by_a_dead_run,
])
