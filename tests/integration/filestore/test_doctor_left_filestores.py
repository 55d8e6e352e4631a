"""`ddp-launch doctor` without --filestore lists the stale FileStore files it can find: those
directly in the temporary directory ($TMPDIR) and those a dead run's record there names. Each is a
warning naming `ddp-launch clean PATH`; nothing is removed; a file a live process holds is a
running job's and is not listed; a file that is not a FileStore is never listed."""
import json
import os
import subprocess
import tempfile

from fs_helpers import killed_rendezvous_bytes, open_holder, write_file
from harness import DDP_LAUNCH, PYTHON, check, free_port, run_tests


def doctor(tmpdir):
    env = {**os.environ, "TMPDIR": tmpdir, "DDP_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"}
    r = subprocess.run([DDP_LAUNCH, "doctor", "--json", "--python", PYTHON, "--python-timeout", "60", "--port",
                        str(free_port())], capture_output=True, text=True, timeout=180, env=env)
    check(r.returncode in (0, 1), f"doctor: rc={r.returncode}\n{r.stdout}\n{r.stderr}")
    return [c for c in json.loads(r.stdout)["checks"] if c["check"] == "filestore"]


def test_doctor_lists_stale_filestores_in_tmp_and_dead_records():
    with tempfile.TemporaryDirectory(prefix="ddp_doc_") as tmp:
        stale = os.path.join(tmp, "rdzv")
        write_file(stale, killed_rendezvous_bytes())
        held = os.path.join(tmp, "held")
        write_file(held, killed_rendezvous_bytes())
        write_file(os.path.join(tmp, "notes.txt"), b"not a FileStore\n")
        # A dead run's record (its supervisor pid cannot exist) naming a FileStore elsewhere.
        other = os.path.join(tmp, "sub")
        os.mkdir(other)
        named = os.path.join(other, "store")
        write_file(named, killed_rendezvous_bytes())
        with open(os.path.join(tmp, "ddp-launch-job7-node0.processes.json"), "w") as f:
            json.dump({"supervisor": {"pid": 2 ** 22 + 7, "start_time": 1}, "filestores": [named], "workers": []}, f)
        holder = open_holder(held)
        try:
            checks = doctor(tmp)
        finally:
            holder.kill()
        by_path = {c["details"]["path"]: c for c in checks}
        for path in (stale, named):
            c = by_path.get(path)
            check(c is not None, f"doctor did not list {path}: {checks}")
            check(c["status"] == "warn" and "stale" in c["finding"], f"{path}: {c}")
            check(f"`ddp-launch clean {path}`" in c["action"], f"no clean command for {path}: {c}")
            check(os.path.exists(path), f"doctor removed {path}")
        check("dead" in by_path[named]["finding"] or "gone" in by_path[named]["finding"], by_path[named])
        check(held not in by_path, f"a file in use was listed as left behind: {by_path.get(held)}")
        check(os.path.join(tmp, "notes.txt") not in by_path, "a file that is not a FileStore was listed")


def test_doctor_says_when_there_is_none():
    with tempfile.TemporaryDirectory(prefix="ddp_doc_") as tmp:
        checks = doctor(tmp)
        check(len(checks) == 1 and checks[0]["status"] == "ok" and tmp in checks[0]["finding"], f"{checks}")


if __name__ == "__main__":
    run_tests([test_doctor_lists_stale_filestores_in_tmp_and_dead_records, test_doctor_says_when_there_is_none])
