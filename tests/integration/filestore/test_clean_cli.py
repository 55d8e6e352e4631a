"""`ddp-launch clean` on crafted FileStore files and real processes: a torn tail is named and
removed, a file a live process has open or names (argv, environment, relative path) is reported
in use and kept, one kept in use only by an orphan of a dead run is ended with --force, --dry-run
removes nothing, and bad paths are clear errors (exit 2)."""
import os
import subprocess
import tempfile

from fs_helpers import Child, clean, killed_rendezvous_bytes, open_holder, record, torn_bytes, wait_until, write_file
from harness import PYTHON, alive, check, run_tests, wait_dead

SLEEPER = "import sys, time; print('READY', flush=True); time.sleep(120)"


def sleeper(name, *extra, **kw):
    """A live process that does nothing but exist; `extra` argv entries name the file or not."""
    c = Child([PYTHON, "-c", SLEEPER, *extra], name, **kw)
    c.wait_line("READY", 30, "the helper process to start")
    return c


def test_torn_tail_named_by_dry_run_then_removed():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "torn")
        write_file(path, torn_bytes())
        r = clean("--dry-run", path)
        check(r.returncode == 0, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
        check("torn tail at offset 11: the key needs 10 bytes, 6 are present" in r.stdout,
              f"torn tail not named with offset and what is missing:\n{r.stdout}")
        check("verdict: torn" in r.stdout and "spins at 100% CPU" in r.stdout, f"no torn verdict/why:\n{r.stdout}")
        check("/a = \"1\"" in r.stdout, f"records before the torn tail not listed:\n{r.stdout}")
        check(os.path.exists(path), "--dry-run removed the torn file")
        r = clean(path)
        check(r.returncode == 0 and "removed" in r.stdout, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
        check(not os.path.exists(path), "torn file still there after clean")


def test_dry_run_removes_nothing():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "rdzv")
        data = killed_rendezvous_bytes() + record("cleanup/", "1")
        write_file(path, data)
        os.utime(path, (1_000_000_000, 1_000_000_000))
        r = clean("--dry-run", path)
        check(r.returncode == 0, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
        check("verdict: stale" in r.stdout and "cleanup/ 1" in r.stdout and "would remove" in r.stdout,
              f"dry-run report:\n{r.stdout}")
        st = os.stat(path)
        with open(path, "rb") as f:
            check(f.read() == data, "--dry-run changed the bytes")
        check(st.st_mtime == 1_000_000_000, "--dry-run touched the file")


def test_open_file_is_in_use_and_kept():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "rdzv")
        write_file(path, killed_rendezvous_bytes())
        # Path passed on stdin, so only the open fd gives this process away.
        holder = open_holder(path)
        try:
            r = clean(path)
            check(r.returncode == 1, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
            check(f"pid {holder.proc.pid} (" in r.stdout and "has it open" in r.stdout,
                  f"holder not named:\n{r.stdout}")
            check("verdict: in use" in r.stdout and f"kill {holder.proc.pid}" in r.stdout, r.stdout)
            check(os.path.exists(path), "clean removed a file a live process has open")
        finally:
            holder.kill()


def test_process_naming_the_path_is_in_use_and_kept():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "rdzv")
        write_file(path, killed_rendezvous_bytes())
        children = []
        try:
            by_argv = sleeper("by argv", f"--init_method=file://{path}?world_size=2")
            children.append(by_argv)
            by_env = sleeper("by env", env={**os.environ, "MY_INIT_METHOD": f"file://{path}"})
            children.append(by_env)
            by_cwd = sleeper("by relative path", "--store", "rdzv", cwd=tmp)
            children.append(by_cwd)
            unrelated = sleeper("unrelated", f"{path}2", f"/elsewhere{path}")
            children.append(unrelated)
            r = clean(path)
            check(r.returncode == 1, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
            for c, how in ((by_argv, "command line"), (by_env, "environment"), (by_cwd, "command line")):
                check(f"pid {c.proc.pid} (" in r.stdout and how in r.stdout, f"{c.name} not named:\n{r.stdout}")
            check(f"pid {unrelated.proc.pid} " not in r.stdout, f"a longer name counted as the path:\n{r.stdout}")
            check(os.path.exists(path), "clean removed a file a live process names")
        finally:
            for c in children:
                c.kill()
        r = clean(path)
        check(r.returncode == 0 and not os.path.exists(path), f"once they are gone it is stale:\n{r.stdout}")


ORPHAN = """import os, sys, time
if os.fork():
    os._exit(0)  # the orphan's parent, a launcher that dies
print(os.getpid(), flush=True)
time.sleep(120)
"""


def test_orphan_of_a_dead_run_is_named_and_ended_only_with_force():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "rdzv")
        write_file(path, killed_rendezvous_bytes())
        launcher = subprocess.Popen([PYTHON, "-c", ORPHAN, f"--dist-url=file://{path}"], stdout=subprocess.PIPE,
                                    text=True)
        orphan = int(launcher.stdout.readline())
        launcher.wait(timeout=30)
        try:
            wait_until(lambda: open(f"/proc/{orphan}/stat").read().rsplit(")", 1)[1].split()[1] == "1", 10,
                       "the orphan to be re-parented to init")
            r = clean(path)
            check(r.returncode == 1, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
            check(f"pid {orphan} belongs to a dead run: it was re-parented to init" in r.stdout, r.stdout)
            check("clean --force" in r.stdout and os.path.exists(path), f"kept, with the hint:\n{r.stdout}")
            r = clean("--force", path)
            check(r.returncode == 0, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
            check(f"ended pid {orphan}" in r.stdout and not os.path.exists(path), r.stdout)
            check(not wait_dead([orphan], 10), f"the orphan {orphan} still runs")
        finally:
            if alive(orphan):
                os.kill(orphan, 9)


def test_several_paths_stale_one_removed_in_use_one_kept():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        stale, busy = os.path.join(tmp, "stale"), os.path.join(tmp, "busy")
        write_file(stale, killed_rendezvous_bytes())
        write_file(busy, killed_rendezvous_bytes())
        user = sleeper("user", busy)
        try:
            r = clean(stale, f"file://{busy}?world_size=2")
            check(r.returncode == 1, f"rc={r.returncode}\n{r.stdout}{r.stderr}")
            check(not os.path.exists(stale), "the stale one was not removed")
            check(os.path.exists(busy), "the busy one was removed")
        finally:
            user.kill()


def test_bad_paths_are_clear_errors():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        missing = os.path.join(tmp, "missing")
        r = clean(missing)
        check(r.returncode == 2 and "no such file" in r.stderr and "check the path" in r.stderr,
              f"missing: rc={r.returncode} {r.stderr}")
        r = clean("--missing-ok", missing)
        check(r.returncode == 0 and "absent" in r.stdout, f"--missing-ok: rc={r.returncode} {r.stdout}{r.stderr}")

        r = clean(tmp)
        check(r.returncode == 2 and "is a directory" in r.stderr and "file:// in init_method" in r.stderr,
              f"directory: rc={r.returncode} {r.stderr}")
        check(os.path.isdir(tmp), "directory removed")

        text = os.path.join(tmp, "notes.txt")
        write_file(text, b"these are my notes, not a FileStore\n")
        r = clean(text)
        check(r.returncode == 2 and "not a c10d FileStore file" in r.stderr and "offset 0" in r.stderr,
              f"text file: rc={r.returncode} {r.stderr}")
        check(os.path.exists(text), "a non-FileStore file was removed")

        r = clean()
        check(r.returncode != 0 and "paths" in r.stderr, f"no path: rc={r.returncode} {r.stderr}")


def test_empty_file_is_not_evidence_without_force():
    """Issue 12: clean deleted any empty file. An empty file is kept unless --force says it was a FileStore."""
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        empty = os.path.join(tmp, "empty")
        write_file(empty, b"")
        for args in ((empty,), ("--dry-run", empty), (f"file://{empty}",)):
            r = clean(*args)
            check(r.returncode == 2, f"clean {args}: rc={r.returncode}\n{r.stdout}{r.stderr}")
            check("empty file is no evidence" in r.stderr and "--force" in r.stderr,
                  f"clean {args}: no reason or no --force hint:\n{r.stderr}")
            check(os.path.exists(empty), f"clean {args} removed an empty file that nothing shows is a FileStore")
        r = clean("--force", "--dry-run", empty)
        check(r.returncode == 0 and "would remove" in r.stdout and os.path.exists(empty),
              f"--force --dry-run: rc={r.returncode}\n{r.stdout}{r.stderr}")
        r = clean("--force", empty)
        check(r.returncode == 0 and "removed" in r.stdout, f"--force: rc={r.returncode}\n{r.stdout}{r.stderr}")
        check(not os.path.exists(empty), "--force did not remove the empty file")


def test_lock_holder_is_named():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "rdzv")
        write_file(path, killed_rendezvous_bytes())
        holder = open_holder(path, lock=True)
        try:
            r = clean("--lock-timeout", "0.5", path)
            check(r.returncode == 1 and f"pid {holder.proc.pid}" in r.stdout and "holds LOCK_EX" in r.stdout,
                  f"rc={r.returncode}\n{r.stdout}{r.stderr}")
            check(os.path.exists(path), "removed while locked")
        finally:
            holder.kill()


run_tests([
    test_torn_tail_named_by_dry_run_then_removed,
    test_dry_run_removes_nothing,
    test_open_file_is_in_use_and_kept,
    test_process_naming_the_path_is_in_use_and_kept,
    test_orphan_of_a_dead_run_is_named_and_ended_only_with_force,
    test_several_paths_stale_one_removed_in_use_one_kept,
    test_bad_paths_are_clear_errors,
    test_lock_holder_is_named,
    test_empty_file_is_not_evidence_without_force,
])
