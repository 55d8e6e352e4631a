"""The daemon's state directory fills up while a job runs (issue 25 item 3.3). The job's end is not
lost: it ends FAILED with its exit code at once (in memory), its slots go to the next job, the full
disk is said (the log, GET /v1/host's state_dir), and once there is room again everything is written
(a daemon killed afterwards finds the same states). Before, the job stayed RUNNING with its slots
held and the next job waited forever, until a daemon restart.
The state directory is a real 8 MiB tmpfs, filled with a file: mounting needs root (CI runs the tests
as root); skipped otherwise."""
import os
import subprocess
import tempfile

from daemon_harness import Daemon
from harness import PYTHON, check, run_tests, wait_until_value

WORKER = """import os, sys, time
gate = sys.argv[1]
deadline = time.monotonic() + 120
while not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.1)
print("leaving with 7", flush=True)
sys.exit(7)
"""


def fill(path):
    """Writes zeros into `path` until the disk says it is full."""
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
        except OSError:
            pass


def test_a_job_ending_on_a_full_state_dir_is_settled_and_written_once_there_is_room():
    with tempfile.TemporaryDirectory() as d:
        state = os.path.join(d, "state")
        os.makedirs(state)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", state], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"     skipped: cannot mount a tmpfs at {state} (needs root): {r.stderr.strip()}", flush=True)
            return
        daemon = None
        try:
            worker = os.path.join(d, "exit7.py")
            with open(worker, "w") as f:
                f.write(WORKER)
            gate = os.path.join(d, "gate")
            daemon = Daemon("--slots", "1", state_dir=d)
            a = daemon.submit(f"name: ends-on-full-disk\ncommand: [{PYTHON}, {worker}, {gate}]\n"
                              "distributed: {shutdown_grace: 3s}\n")
            daemon.wait_state(a, "RUNNING", 120, "(job a)")
            b = daemon.submit(f"name: next\ncommand: [{PYTHON}, -c, 'print(1)']\n")
            check(daemon.job(b)["state"] == "PENDING", "b waits for a's slot")

            filler = os.path.join(state, "filler")
            fill(filler)
            open(gate, "w").close()  # a exits 7 while nothing can be written
            j = daemon.wait_state(a, "FAILED", 60, "(a ended on a full disk: settled in memory)")
            check(j["exit_code"] not in (None, 0), f"a's exit code: {j}")
            host = daemon.request("GET", "/v1/host")[1]
            sd = host["state_dir"]
            check(sd["writable"] is False and sd["path"] == state, f"the full disk in /v1/host: {sd}")
            check("full" in sd["error"] and sd["unsaved_jobs"] >= 1 and sd["since"] > 0, f"{sd}")
            # Its slot went to the next job: b left the queue (whatever the full disk does to it).
            daemon.wait_state(b, ("STARTING", "RUNNING", "SUCCEEDED", "FAILED"), 60, "(b got a's slot)")
            check("cannot write the job database" in daemon.log(), f"log: {daemon.log()[-2000:]}")

            os.unlink(filler)  # room again: what was kept is written, with a bounded back-off
            wait_until_value("the state dir writable again in /v1/host",
                             lambda: daemon.request("GET", "/v1/host")[1]["state_dir"]["writable"], 60)
            daemon.wait_state(b, ("SUCCEEDED", "FAILED"), 120, "(b ends)")
            wait_until_value("nothing left unsaved",
                             lambda: daemon.request("GET", "/v1/host")[1]["state_dir"]["unsaved_jobs"] == 0, 60)
            check("takes writes again" in daemon.log(), f"log: {daemon.log()[-2000:]}")
            # The transitions made while the disk was full are in the database now (read from it).
            states = [t["to"] for t in daemon.events(a)["transitions"]]
            check(states[-1] == "FAILED" and "RUNNING" in states, f"a's transitions, written late: {states}")

            # Nothing was lost: a daemon killed now reads the same states back from its database.
            before = {x: daemon.job(x) for x in (a, b)}
            daemon.kill9()
            daemon.start()
            for x in (a, b):
                after = daemon.job(x)
                check(after["state"] == before[x]["state"] and after["exit_code"] == before[x]["exit_code"],
                      f"job {x} after a restart: {after} (before: {before[x]})")
        finally:
            if daemon:
                daemon.cleanup()
            subprocess.run(["umount", "-l", state], check=False)


run_tests([test_a_job_ending_on_a_full_state_dir_is_settled_and_written_once_there_is_room])
