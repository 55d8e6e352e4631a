#!/usr/bin/env python3
"""Job daemon benchmark.

1. submit → supervisor spawned: POST /v1/jobs of a trivial job (/bin/true) on an idle daemon.
   The daemon schedules and posix_spawns the supervisor before it answers, so the POST round
   trip covers parse + SQLite commits + spawn; "started" is the supervisor's own `started` event
   (its process is up and has run its main), measured from just before the POST.
2. API latency at a fixed rate with 1 000 jobs in the database (one holds the only slot, 999 wait):
   daemon_loadgen, open loop, list / status / both, at --rate req/s for --seconds.

Usage: python3 bench/run_daemon_bench.py --build-dir build [--samples 30] [--rate 1000] [--seconds 10]
Goals: submit → spawned ≤ 10 ms; API p99 ≤ 5 ms at 1 000 req/s.
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


class Daemon:
    def __init__(self, binary, slots):
        self.dir = tempfile.mkdtemp(prefix="ddp-daemon-bench-")
        self.socket = os.path.join(self.dir, "d.sock")
        self.proc = subprocess.Popen([binary, "daemon", "--state-dir", os.path.join(self.dir, "state"), "--socket",
                                      self.socket, "--slots", str(slots), "--gpus", "0"],
                                     stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "log"), "w"), text=True)
        line = self.proc.stdout.readline()
        if "listening" not in line:
            raise SystemExit(f"daemon did not start: {line!r}")
        self.conn = UnixHTTPConnection(self.socket)

    def request(self, method, target, body=None):
        self.conn.request(method, target, body=body)
        r = self.conn.getresponse()
        return r.status, json.loads(r.read())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        for name in os.listdir("/proc"):  # supervisors of this bench left running (the sleeper)
            if name.isdigit():
                try:
                    argv = open(f"/proc/{name}/cmdline", "rb").read().split(b"\0")
                except OSError:
                    continue
                if any(a.startswith(self.dir.encode()) for a in argv) and b"run" in argv[1:2]:
                    os.killpg(int(name), signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(p * len(s)))]


def bench_submit(binary, samples):
    d = Daemon(binary, 4)
    post, started = [], []
    try:
        for i in range(samples):
            t0 = time.time()
            status, job = d.request("POST", "/v1/jobs", f"name: lat-{i}\ncommand: [/bin/true]\n")
            t1 = time.time()
            assert status == 201, job
            post.append((t1 - t0) * 1000)
            deadline = time.monotonic() + 60
            while True:
                _, j = d.request("GET", f"/v1/jobs/{job['id']}")
                if j["state"] in ("SUCCEEDED", "FAILED"):
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"job {job['id']} did not finish: {j}")
                time.sleep(0.01)
            _, ev = d.request("GET", f"/v1/jobs/{job['id']}/events")
            st = [e for e in ev["events"] if e["event"] == "started"]
            if st:
                started.append((st[0]["time"] - t0) * 1000)
    finally:
        d.stop()
    return post, started


def bench_api(binary, loadgen, jobs, rate, seconds):
    d = Daemon(binary, 1)
    results = []
    try:
        d.request("POST", "/v1/jobs", "name: holder\nshell: 'sleep 600'\n")
        for i in range(jobs - 1):
            status, _ = d.request("POST", "/v1/jobs", f"name: queued-{i}\ncommand: [/bin/true]\n")
            assert status == 201
        for mix in ("list", "status", "list,status"):
            out = subprocess.run([loadgen, "--socket", d.socket, "--rate", str(rate), "--seconds", str(seconds),
                                  "--max-id", str(jobs), "--mix", mix], capture_output=True, text=True, timeout=seconds + 60)
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        _, m = d.request("GET", "/v1/jobs?limit=1")
        results.append({"jobs_in_db": m["total"]})
    finally:
        d.stop()
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=1000)
    a = ap.parse_args()
    binary = os.path.join(a.build_dir, "bin", "ddp-launch")
    loadgen = os.path.join(a.build_dir, "bin", "daemon_loadgen")
    post, started = bench_submit(binary, a.samples)
    print(f"submit → spawned (POST answered, supervisor spawned), {len(post)} samples: "
          f"median {statistics.median(post):.2f} ms, p90 {pct(post, 0.9):.2f} ms, max {max(post):.2f} ms")
    if started:
        print(f"submit → supervisor's started event, {len(started)} samples: median {statistics.median(started):.2f} ms, "
              f"p90 {pct(started, 0.9):.2f} ms, max {max(started):.2f} ms")
    for r in bench_api(binary, loadgen, a.jobs, a.rate, a.seconds):
        print(json.dumps(r))


if __name__ == "__main__":
    sys.exit(main())
