"""Issue 25 item 1 through the daemon: a job whose script names its FileStore only by a plain
argument runs on a file a SIGKILLed run left; the job FAILS and its reason names the stale file,
its age and `ddp-launch clean PATH` (from the supervisor's filestore_found event). Whether the file is
still there afterwards is torch's business (its last rank out deletes it), so it is not asserted."""
import os
import sys
import tempfile

from fs_helpers import ARGV_PATH_WORKER, leave_killed_run_filestore
from harness import PYTHON, check, run_tests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jobs"))
from daemon_harness import Daemon  # noqa: E402

TORCH_TIMEOUT = 240


def test_the_jobs_reason_names_the_stale_filestore():
    with tempfile.TemporaryDirectory(prefix="ddp_fs_") as tmp:
        path = os.path.join(tmp, "sharedfile")
        leave_killed_run_filestore(path)
        d = Daemon()
        try:
            job = d.submit(f"name: stale-fs\ncommand: [{PYTHON}, {ARGV_PATH_WORKER}, {path}, '20']\n"
                           "resources: {nproc_per_node: 2}\ndistributed: {shutdown_grace: 3s}\n")
            j = d.wait_state(job, "FAILED", TORCH_TIMEOUT, "(a run on a stale FileStore)")
            reason = j["reason"]
            check(f"stale FileStore {path}" in reason, f"the reason does not name the file: {reason!r}")
            check("last written " in reason and "before the run" in reason, f"no age in the reason: {reason!r}")
            check(f"`ddp-launch clean {path}`" in reason, f"the reason does not name clean: {reason!r}")
            events = d.events(job)
            items = events["events"] if isinstance(events, dict) else events
            check(any(e.get("event") == "filestore_found" and e.get("path") == path for e in items),
                  f"no filestore_found event: {events}")
        finally:
            d.cleanup()


if __name__ == "__main__":
    run_tests([test_the_jobs_reason_names_the_stale_filestore])
