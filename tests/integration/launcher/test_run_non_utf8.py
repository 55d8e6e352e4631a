"""Bytes that are not UTF-8 in a worker's argv (issue 25, 3.7): strict JSON dumping of argv threw,
so with --metric the worker exited 0 and the run 1 with an empty run.json, and with a file:// path
in argv the worker never started and a processes.json.tmp was left. Every record that holds argv,
env or paths writes such bytes as {"base64": …} (common/json_bytes.hpp), and they read back the
same bytes. Real `ddp-launch run` with /bin/sh workers (no torch needed)."""
import base64
import json
import os
import subprocess
import tempfile

from harness import DDP_LAUNCH, check, run_tests


def bytes_of(value):
    """json_bytes.hpp's reading: a string, or {"base64": …}."""
    if isinstance(value, str):
        return value.encode()
    check(isinstance(value, dict) and list(value) == ["base64"], f"not a string or {{'base64': …}}: {value!r}")
    return base64.b64decode(value["base64"], validate=True)


def run(*args, timeout=60):
    return subprocess.run([DDP_LAUNCH, "run", "--no-python", *args], capture_output=True, timeout=timeout)


def no_tmp_left(run_dir):
    left = [n for n in os.listdir(run_dir) if n.endswith(".tmp")]
    check(not left, f"temporary files left in {run_dir}: {left}")


def events_parse(run_dir):
    path = os.path.join(os.path.dirname(run_dir), "events.jsonl")
    if os.path.exists(path):
        with open(path, "rb") as f:
            for line in f:
                json.loads(line)


def test_metrics_with_a_non_utf8_argument():
    with tempfile.TemporaryDirectory(prefix="ddp-nonutf8-") as tmp:
        run_dir = os.path.join(tmp, "run")
        arg = b"caf\xe9-\xff"
        for code in (0, 3):
            r = run("--run-dir", run_dir, "--events", os.path.join(tmp, "events.jsonl"), "--metric", r"loss=loss=([0-9.]+)",
                    "/bin/sh", "-c", f"echo loss=1.5; exit {code}", "worker", arg)
            # As for any run: 0 when the worker succeeds, 1 (the job failed) when it exits 3.
            check(r.returncode == (0 if code == 0 else 1), f"exit {r.returncode}, the worker's {code}: {r.stderr[-2000:]!r}")
            check(code == 0 or b"exited with code 3" in r.stderr, f"the summary: {r.stderr[-2000:]!r}")
            with open(os.path.join(run_dir, "run.json"), "rb") as f:
                info = json.loads(f.read())
            command = [bytes_of(v) for v in info["command"]]
            check(command[-1] == arg and command[-2] == b"worker", f"run.json's command: {info['command']!r}")
            no_tmp_left(run_dir)
            events_parse(run_dir)


def test_a_file_url_that_is_not_utf8_reaches_the_worker_and_the_record():
    with tempfile.TemporaryDirectory(prefix="ddp-nonutf8-") as tmp:
        run_dir = os.path.join(tmp, "run")
        store = tmp.encode() + b"/store-\xff\xfe"
        copy = os.path.join(tmp, "record-copy.json")
        # The worker copies the run record once it names the FileStore, and prints its argument.
        script = (f'for i in $(seq 100); do grep -q base64 "{run_dir}/processes.json" 2>/dev/null && break; '
                  f'sleep 0.1; done; cp "{run_dir}/processes.json" "{copy}"; printf "%s" "$1"')
        r = run("--run-dir", run_dir, "--events", os.path.join(tmp, "events.jsonl"), "/bin/sh", "-c", script,
                "worker", b"file://" + store)
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]!r}")
        check(b"file://" + store in r.stdout, f"the worker did not get its argument: {r.stdout!r}")
        with open(copy, "rb") as f:
            record = json.loads(f.read())
        stores = [bytes_of(v) for v in record.get("filestores", [])]
        check(store in stores, f"the record's filestores: {record.get('filestores')!r}, want {store!r}")
        no_tmp_left(run_dir)
        events_parse(run_dir)


if __name__ == "__main__":
    run_tests([test_metrics_with_a_non_utf8_argument,
               test_a_file_url_that_is_not_utf8_reaches_the_worker_and_the_record])
