"""The seed's own case under `ddp-launch run`: a 2-rank torch job whose script meets through
init_method="file://PATH" (its own argument, not --store file) is SIGKILLed, leaving the FileStore
behind; the same command run again succeeds, because run finds the stale file before the launch,
removes it and says so. A file that a live process still uses stops the launch with an error naming
`ddp-launch clean PATH`; a file that is not a FileStore is never touched, nor does it stop the launch."""
import os
import subprocess
import tempfile

from fs_helpers import HERE, Child, killed_rendezvous_bytes, leave_killed_run_filestore, write_file
from harness import DDP_LAUNCH, PYTHON, check, run_tests

WORKER = os.path.join(HERE, "file_init_worker.py")


def command(path, *extra):
    return [DDP_LAUNCH, "run", "--nproc-per-node", "2", "--python", PYTHON, *extra, WORKER,
            "--dist-url", f"file://{path}", "--timeout", "20"]


def test_killed_file_init_run_then_same_command_succeeds():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "sharedfile")
        leave_killed_run_filestore(path, command(path))

        r = subprocess.run(command(path), capture_output=True, text=True, timeout=180)
        check(r.returncode == 0, f"the rerun with the same command failed: rc={r.returncode}\n{r.stdout}\n{r.stderr}")
        for rank in (0, 1):
            check(f"[rank {rank}]: READY sum=3" in r.stdout, f"rank {rank} did not finish: {r.stdout}\n{r.stderr}")
        check(f"FileStore {path} (named by the worker's argument 'file://{path}') was left behind by a killed run: "
              "removed it before the launch" in r.stderr, f"the cleanup was not logged:\n{r.stderr}")


def test_file_in_use_stops_the_launch_naming_clean():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "sharedfile")
        write_file(path, killed_rendezvous_bytes())
        user = Child([PYTHON, "-c", "import time; print('READY', flush=True); time.sleep(120)",
                      f"--dist-url=file://{path}"], "another job")
        try:
            user.wait_line("READY", 30, "the other job to start")
            r = subprocess.run(command(path), capture_output=True, text=True, timeout=60)
        finally:
            user.kill()
        check(r.returncode == 1, f"rc={r.returncode}\n{r.stderr}")
        check(f"`ddp-launch clean {path}`" in r.stderr, f"the error does not name ddp-launch clean PATH:\n{r.stderr}")
        check(f"pid {user.proc.pid}" in r.stderr, f"the process using it is not named:\n{r.stderr}")
        check("[rank" not in r.stdout, f"workers were started on a FileStore in use:\n{r.stdout}")
        check(os.path.exists(path), "run removed a FileStore a live process uses")


def test_files_that_are_not_filestores_are_left_alone():
    """A file:// URL may name anything (a data set): an empty file (harmless: torch starts a FileStore on
    it as on a new one), other content and a directory are not touched, and the launch goes on."""
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        empty, foreign = os.path.join(tmp, "empty"), os.path.join(tmp, "data.tar")
        write_file(empty, b"")
        write_file(foreign, b"my data, not a FileStore\n")
        r = subprocess.run([DDP_LAUNCH, "run", "--no-python", "/bin/echo", f"file://{empty}", f"--data=file://{foreign}",
                            f"file://{tmp}"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"rc={r.returncode}\n{r.stderr}")
        check(os.path.exists(empty) and os.path.isdir(tmp), "run removed an empty file or a directory")
        with open(foreign, "rb") as f:
            check(f.read() == b"my data, not a FileStore\n", "run changed a file that is not a FileStore")
        check(f"names {foreign}, which is not a c10d FileStore" in r.stderr and "left alone" in r.stderr,
              f"no warning about the foreign file:\n{r.stderr}")
        check("removed it before the launch" not in r.stderr, r.stderr)


if __name__ == "__main__":
    run_tests([test_killed_file_init_run_then_same_command_succeeds, test_file_in_use_stops_the_launch_naming_clean,
               test_files_that_are_not_filestores_are_left_alone])
