"""The job daemon end to end: a real `ddp-launch daemon`, real HTTP on its unix socket, real
/usr/bin/python3 gloo jobs under real `ddp-launch run` supervisors."""
import contextlib
import http.client
import json
import os
import random
import socket
import stat
import subprocess
import time

from daemon_harness import HERE, Daemon, alive, gated_job
from harness import PYTHON, LineReader, TestFailure, check, run_tests

D = None  # one daemon for the scenarios below: 2 slots, 2 configured GPUs
TORCH_TIMEOUT = 180  # torch imports take 10-30 s each on a loaded machine


def gate_path(name):
    return os.path.join(D.dir, f"gate-{name}")


def open_gate(name):
    open(gate_path(name), "w").close()


@contextlib.contextmanager
def follow_logs(job):
    """`ddp-launch logs JOB -f` as a child: yields it and its LineReader; when the block is done the
    follower must end by itself (the job ended) with exit code 0. Killed if the block failed."""
    follower = subprocess.Popen([os.environ.get("DDP_LAUNCH", "build/bin/ddp-launch"), "logs", str(job), "-f",
                                 "--socket", D.socket], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield follower, LineReader(follower.stdout)
        follower.wait(timeout=60)
        check(follower.returncode == 0, f"follower exit code {follower.returncode}: {follower.stderr.read()}")
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()


def test_socket_is_private_and_healthy():
    mode = stat.S_IMODE(os.stat(D.socket).st_mode)
    check(mode == 0o600, f"socket mode is {oct(mode)}, not 0600")
    status, body = D.request("GET", "/healthz")
    check(status == 200 and body["ok"] is True, f"/healthz: {status} {body}")


def test_tcp_needs_the_bearer_token():
    port = D.tcp_port()
    token_file = os.path.join(D.state, "token")
    check(stat.S_IMODE(os.stat(token_file).st_mode) == 0o600, "the token file is 0600")
    token = D.token()

    def get(target, headers):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("GET", target, headers=headers)
            r = conn.getresponse()
            return r.status, json.loads(r.read())
        finally:
            conn.close()

    status, body = get("/v1/jobs", {})
    check(status == 401 and "Bearer" in body["error"], f"no token: {status} {body}")
    status, body = get("/v1/jobs", {"Authorization": "Bearer " + "0" * len(token)})
    check(status == 401 and body["error"] == "invalid bearer token", f"wrong token: {status} {body}")
    status, body = get("/v1/jobs", {"Authorization": "Basic eDp5"})
    check(status == 401, f"not a bearer token: {status} {body}")
    status, body = get("/v1/jobs", {"Authorization": "Bearer " + token})
    check(status == 200 and "jobs" in body, f"right token: {status} {body}")
    status, body = get("/healthz", {})
    check(status == 200, f"/healthz is open: {status} {body}")


def test_bad_input_gets_clear_4xx_and_daemon_keeps_serving():
    status, body = D.request("POST", "/v1/jobs", "name: a\ncommand: [x\n", {"X-Ddp-File": "broken.yaml"})
    check(status == 400 and "broken.yaml:" in body["error"] and "not valid YAML" in body["error"], f"{status} {body}")
    status, body = D.request("POST", "/v1/jobs", "name: a\ncommand: [x]\nresources: {gpus: 1}\n")
    check(status == 400 and "unknown key 'gpus'" in body["error"], f"{status} {body}")
    check(body["problems"][0]["line"] == 3, f"problems carry the line: {body}")
    # An oversized body is refused from its Content-Length, before it is read.
    reply = raw_exchange(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n" + b"x" * 65536)
    check(reply.startswith(b"HTTP/1.1 413") and b"1048576" in reply, f"oversized body: {reply[:300]!r}")
    status, body = D.request("GET", "/v1/jobs/999999")
    check(status == 404 and "no job with id 999999" in body["error"], f"unknown id: {status} {body}")
    status, body = D.request("GET", "/v1/jobs/abc")
    check(status == 400 and "not a job id" in body["error"], f"bad id: {status} {body}")
    status, body = D.request("POST", "/v1/jobs/999999/cancel")
    check(status == 404, f"cancel unknown: {status} {body}")
    status, body = D.request("DELETE", "/v1/jobs")
    check(status == 405, f"wrong method: {status} {body}")
    status, body = D.request("GET", "/nope")
    check(status == 404, f"unknown endpoint: {status} {body}")
    status, body = D.request("POST", "/v1/jobs", "name: big\ncommand: [x]\nresources: {nproc_per_node: 64}\n")
    check(status == 422 and "64 CPU slots" in body["error"], f"too big for the host: {status} {body}")


def raw_exchange(data, timeout=10):
    """Sends raw bytes on a fresh connection; returns what came back before the daemon closed or timed out."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(D.socket)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk
    except (socket.timeout, ConnectionResetError, BrokenPipeError):
        return out
    finally:
        s.close()


def test_fuzzed_requests_never_break_the_daemon():
    rng = random.Random(1234)
    seeds = [b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n",
             b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\nname: a\ncommand: [x]",
             b"GET /v1/jobs/1/logs?rank=0&follow=0 HTTP/1.1\r\n\r\n"]
    bad = [b"\x00\xff\xfe garbage\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"POST /v1/jobs HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
           b"GET /v1/jobs?limit=99999999999 HTTP/1.1\r\n\r\n", b"GET /v1/jobs?state=LOST HTTP/1.1\r\n\r\n",
           b"POST /v1/jobs HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", b"GET /v1/jobs/1/logs?rank=../../etc HTTP/1.1\r\n\r\n",
           b"GET /v1/jobs/1/logs?stream=passwd HTTP/1.1\r\n\r\n", b"GET " + b"/a" * 20000 + b" HTTP/1.1\r\n\r\n"]
    for i in range(150):
        if i < len(bad):
            data = bad[i]
        else:
            data = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 6)):
                op = rng.randint(0, 2)
                pos = rng.randrange(len(data))
                if op == 0:
                    data[pos] = rng.randrange(256)
                elif op == 1:
                    del data[pos:pos + rng.randint(1, 8)]
                else:
                    data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            data = bytes(data)
        reply = raw_exchange(data)
        if reply.startswith(b"HTTP/1.1 5"):
            raise TestFailure(f"request {data[:200]!r} got a server error: {reply[:300]!r}")
    status, body = D.request("GET", "/healthz")
    check(status == 200, f"after the fuzz loop /healthz answered {status}")
    check(D.proc.poll() is None, "the daemon died during the fuzz loop")


def test_three_jobs_two_slots_third_waits_then_runs():
    ids = [D.submit(gated_job(f"slots-{i}", gate_path("slots"))) for i in range(3)]
    a = D.wait_state(ids[0], "RUNNING", TORCH_TIMEOUT)
    b = D.wait_state(ids[1], "RUNNING", TORCH_TIMEOUT)
    c = D.job(ids[2])
    check(c["state"] == "PENDING", f"the third job should wait for a slot: {c}")
    check("waiting for resources" in c.get("pending_reason", ""), f"pending reason: {c}")
    check(a["gpus"] == [] and b["gpus"] == [], "jobs without gpus_per_node get no GPUs")
    status, metrics = D.request("GET", "/metrics")
    check('ddpd_jobs{state="PENDING"} 1' in metrics and "ddpd_slots_in_use 2" in metrics and
          "ddpd_queue_length 1" in metrics, f"/metrics: {metrics}")
    listing = D.cli("list")
    check(listing.returncode == 0 and "slots-2" in listing.stdout and "PENDING" in listing.stdout,
          f"ddp-launch list: {listing.stdout} {listing.stderr}")
    open_gate("slots")
    D.wait_state(ids[0], "SUCCEEDED", TORCH_TIMEOUT)
    D.wait_state(ids[1], "SUCCEEDED", TORCH_TIMEOUT)
    c = D.wait_state(ids[2], "SUCCEEDED", TORCH_TIMEOUT, "(the third job, once a slot was free)")
    check(c["exit_code"] == 0 and c["runs"] == 1, f"third job: {c}")
    out = D.cli("logs", str(ids[2]))
    check("sum=1 done" in out.stdout, f"ddp-launch logs: {out.stdout!r} {out.stderr!r}")
    status, m = D.request("GET", f"/v1/jobs/{ids[2]}/metrics")
    check(status == 200, f"job metrics {status} {m}")


def test_two_configured_gpus_never_double_booked():
    gate = gate_path("gpus")
    jobs = [D.submit(f"name: gpu-{i}\ncommand: [{PYTHON}, {HERE}/gpu_worker.py, {gate}]\n"
                     f"resources: {{gpus_per_node: 1}}\n") for i in range(3)]
    first = [D.wait_state(j, "RUNNING", 60) for j in jobs[:2]]
    third = D.job(jobs[2])
    check(third["state"] == "PENDING", f"a third one-GPU job must wait on a two-GPU host: {third}")
    gpus = sorted(g for j in first for g in j["gpus"])
    check(gpus == [0, 1], f"the two running jobs must hold GPU 0 and GPU 1, one each: {first}")
    status, metrics = D.request("GET", "/metrics")
    check("ddpd_gpus_in_use 2" in metrics and "ddpd_gpus_total 2" in metrics, metrics)
    open_gate("gpus")
    seen = {}
    for j in jobs:
        D.wait_state(j, "SUCCEEDED", 60)
        status, text = D.request("GET", f"/v1/jobs/{j}/logs?rank=0")
        seen[j] = text.strip()
    check(seen[jobs[0]] != seen[jobs[1]], f"CUDA_VISIBLE_DEVICES must differ between concurrent jobs: {seen}")
    check(all(v in ("cuda_visible_devices='0'", "cuda_visible_devices='1'") for v in seen.values()), f"{seen}")


def test_cancel_running_job_leaves_no_rank_alive():
    gate = gate_path("never")  # never opened: the ranks wait until cancelled
    job = D.submit(gated_job("cancel-me", gate, ranks=2))
    D.wait_state(job, "RUNNING", TORCH_TIMEOUT)
    j = D.job(job)
    supervisor = j["pid"]
    deadline = time.monotonic() + TORCH_TIMEOUT
    while True:  # both ranks started (their pids are in the event stream)
        pids = [e["pid"] for e in D.events(job)["events"] if e["event"] == "rank_started"]
        if len(pids) == 2:
            break
        check(time.monotonic() < deadline, f"rank_started events: {D.events(job)}")
        time.sleep(0.2)
    for rank in (0, 1):  # both ranks are in the gloo group (training), not merely spawned
        while True:
            status, text = D.request("GET", f"/v1/jobs/{job}/logs?rank={rank}")
            if status == 200 and "ready" in text:
                break
            check(time.monotonic() < deadline, f"rank {rank} never joined the group: {status} {text}")
            time.sleep(0.2)
    check(all(alive(p) for p in pids + [supervisor]), "ranks and supervisor alive before the cancel")
    out = D.cli("cancel", str(job))
    check(out.returncode == 0 and "CANCELLING" in out.stdout, f"ddp-launch cancel: {out.stdout} {out.stderr}")
    j = D.wait_state(job, "CANCELLED", 60)
    check(j["reason"] == "cancelled by request", f"{j}")
    gone = [p for p in pids + [supervisor] if alive(p)]
    check(not gone, f"processes still alive after CANCELLED: {gone}")
    status, body = D.request("POST", f"/v1/jobs/{job}/cancel")
    check(status == 409 and "already finished" in body["error"], f"second cancel: {status} {body}")


def test_logs_follow_streams_until_the_job_ends():
    gate = gate_path("follow")
    job = D.submit(gated_job("follow-me", gate))
    with follow_logs(job) as (follower, lines):
        lines.wait_for("ready", TORCH_TIMEOUT, "the rank's first line, streamed while it runs")
        check(follower.poll() is None, "the follower must keep running while the job runs")
        open_gate("follow")
        lines.wait_for("step 2", 60, "lines printed after the follow began")
        lines.wait_for("done", 60, "the last line")
    j = D.wait_state(job, "SUCCEEDED", 30)
    check(j["state"] == "SUCCEEDED", f"{j}")
    status, body = D.request("GET", f"/v1/jobs/{job}/metrics")
    check(status == 200, f"{status} {body}")


def test_logs_follow_moves_to_the_next_attempt_after_a_restart():
    # attempt 0 waits for its gate and fails; the supervisor restarts the group; attempt 1 waits for
    # its own gate and succeeds. One `logs -f` must show both attempts, in order.
    g0, g1 = gate_path("attempt-0"), gate_path("attempt-1")
    script = (f'n=$TORCHELASTIC_RESTART_COUNT; g={g0}; [ "$n" = 0 ] || g={g1}; echo "attempt $n up"; i=0; '
              'while [ ! -e "$g" ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done; '
              'echo "attempt $n ends"; [ "$n" = 1 ]')
    job = D.submit(f"name: restarts-once\nshell: '{script}'\ndistributed: {{max_restarts: 1, shutdown_grace: 2s}}\n")
    with follow_logs(job) as (follower, lines):
        lines.wait_for("attempt 0 up", 60, "attempt 0's first line")
        open_gate("attempt-0")
        lines.wait_for("attempt 0 ends", 60, "attempt 0's last line")
        switched = lines.wait_for("the job restarted; following", 60, "the switch to attempt 1's file")
        check("/attempt_1/0/stdout.log" in switched, f"followed file after the restart: {switched!r}")
        lines.wait_for("attempt 1 up", 60, "attempt 1's first line, through the same follower")
        check(follower.poll() is None, "the follower must keep running while attempt 1 runs")
        open_gate("attempt-1")
        lines.wait_for("attempt 1 ends", 60, "attempt 1's last line")
    j = D.wait_state(job, "SUCCEEDED", 30)
    check(j["restarts"] == 1, f"one worker-group restart: {j}")
    # torchrun's layout under the run's logs/: job-<id>_<random>/attempt_<k>/<rank>/
    logs = os.path.join(D.state, "jobs", str(job), "run-0", "logs")
    runs = os.listdir(logs)
    check(len(runs) == 1 and runs[0].startswith(f"job-{job}_"), f"run directories in {logs}: {runs}")
    check(sorted(os.listdir(os.path.join(logs, runs[0]))) == ["attempt_0", "attempt_1"],
          f"{os.listdir(os.path.join(logs, runs[0]))}")
    out = D.cli("logs", str(job))
    check(out.stdout == "attempt 1 up\nattempt 1 ends\n", f"`logs` shows the latest attempt: {out.stdout!r}")


def test_logs_follow_moves_to_the_next_run_after_a_daemon_retry():
    # run 0 waits for its gate and exits 3; the daemon retries with a new supervisor (run-1), whose
    # rank prints and succeeds. One `logs -f` shows both runs.
    gate, marker = gate_path("retry-run-0"), os.path.join(D.dir, "retry-run-0-started")
    script = (f'if [ -e {marker} ]; then echo "run 1 up"; exit 0; fi; touch {marker}; echo "run 0 up"; i=0; '
              f'while [ ! -e {gate} ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done; echo "run 0 fails"; exit 3')
    job = D.submit(f"name: retried-once\nshell: '{script}'\n"
                   "restart: {policy: on-failure, max_retries: 1, backoff: {initial: 0s}}\n")
    with follow_logs(job) as (follower, lines):
        lines.wait_for("run 0 up", 60, "run 0's first line")
        open_gate("retry-run-0")
        lines.wait_for("run 0 fails", 60, "run 0's last line")
        switched = lines.wait_for("the job restarted; following", 60, "the switch to run 1's file")
        check("/run-1/logs/" in switched, f"followed file after the retry: {switched!r}")
        lines.wait_for("run 1 up", 60, "run 1's line, through the same follower")
    j = D.wait_state(job, "SUCCEEDED", 30)
    check(j["runs"] == 2, f"one daemon retry: {j}")


def test_metrics_read_every_rank():
    job = D.submit("name: two-rank-metrics\nshell: 'echo loss=$RANK.5; echo loss=$RANK.25'\n"
                   "resources: {nproc_per_node: 2}\nmetrics: {loss: 'loss=([0-9.]+)'}\n")
    D.wait_state(job, "SUCCEEDED", 60)
    status, m = D.request("GET", f"/v1/jobs/{job}/metrics")
    check(status == 200, f"{status} {m}")
    check(m["ranks"] == {"0": {"loss": [0.5, 0.25]}, "1": {"loss": [1.5, 1.25]}}, f"every rank's series: {m}")
    check(m["metrics"] == {"loss": [0.5, 0.25]}, f"rank 0's series: {m}")
    check(m["sources"]["1"].endswith("/attempt_0/1/stdout.log"), f"sources: {m}")
    # Without a step on the line, a value's step is its count on that rank (what metrics.csv says).
    check(m["steps"] == {"0": {"loss": [1, 2]}, "1": {"loss": [1, 2]}}, f"steps: {m}")


def test_metrics_steps_come_from_the_line():
    # A `step` pattern of the job file, or the SDK's `@ddp-metric step=N`, is the step of the values on
    # its line: the dashboard charts against it, as `ddp-launch report` charts metrics.csv.
    job = D.submit("name: stepped-metrics\n"
                   "shell: 'for s in 100 200 300; do echo \"step $s loss=0.$s\"; done; echo \"@ddp-metric step=7 loss=0.7\"'\n"
                   "metrics: {step: '^step ([0-9]+)', loss: 'loss=([0-9.]+)'}\n")
    D.wait_state(job, "SUCCEEDED", 60)
    status, m = D.request("GET", f"/v1/jobs/{job}/metrics")
    check(status == 200, f"{status} {m}")
    check(m["ranks"]["0"]["loss"] == [0.1, 0.2, 0.3, 0.7], f"values: {m}")
    check(m["steps"]["0"]["loss"] == [100, 200, 300, 7], f"steps from the lines: {m}")
    check(m["steps"]["0"]["step"] == [100, 200, 300], f"the step series: {m}")


def test_failure_and_retry_policy():
    gate = gate_path("fail")
    open_gate("fail")
    job = D.submit(f"name: succeeds\ncommand: [{PYTHON}, {HERE}/gpu_worker.py, {gate}]\n"
                   "restart: {policy: on-failure, max_retries: 1, backoff: {initial: 0s}}\n")
    j = D.wait_state(job, "SUCCEEDED", 60)
    check(j["runs"] == 1, f"{j}")
    job = D.submit("name: exits-3\nshell: 'echo about to fail; exit 3'\n"
                   "restart: {policy: on-failure, max_retries: 1, backoff: {initial: 100ms}}\n")
    j = D.wait_state(job, "FAILED", 60)
    check(j["runs"] == 2 and "exited with code 3" in j["reason"] and "retries exhausted" in j["reason"], f"{j}")
    states = [t["to"] for t in D.events(job)["transitions"]]
    check("RESTARTING" in states, f"transitions: {states}")
    job = D.submit("name: oom\nshell: 'echo CUDA out of memory >&2; exit 1'\n"
                   "restart: {policy: on-failure, max_retries: 3, no_retry_log_patterns: ['CUDA out of memory']}\n")
    j = D.wait_state(job, "FAILED", 60)
    check(j["runs"] == 1 and "no-retry pattern" in j["reason"], f"{j}")
    job = D.submit("name: too-slow\nshell: 'sleep 120'\nlimits: {timeout: 1s}\ndistributed: {shutdown_grace: 2s}\n")
    j = D.wait_state(job, "FAILED", 60)
    check(j["reason"].startswith("timed out after 1s"), f"{j}")
    status, metrics = D.request("GET", "/metrics")
    check("ddpd_job_restarts_total 1" in metrics, f"one daemon retry so far: {metrics}")


def test_reason_names_the_root_cause_not_the_rank_that_lost_its_peer():
    # Rank 1 raises (its @record error file first) and lingers with its gloo connections closed; rank 0
    # fails in all_reduce on the lost peer and is reaped first. The supervisor's root_cause event names
    # rank 1; the job's reason (and `status`) must too, not the first rank_exited (rank 0).
    worker = os.path.join(HERE, "..", "launcher", "allreduce_worker.py")
    job = D.submit(f"name: loses-a-peer\ncommand: [{PYTHON}, {worker}, --lose-peer-rank, '1']\n"
                   "resources: {nproc_per_node: 2}\ndistributed: {shutdown_grace: 30s}\n")
    j = D.wait_state(job, "FAILED", TORCH_TIMEOUT)
    events = D.events(job)["events"]
    exits = [e for e in events if e["event"] == "rank_exited" and (e.get("exit_code") or e.get("signal"))]
    causes = [e for e in events if e["event"] == "root_cause"]
    check(exits and exits[0]["rank"] == 0, f"rank 0 (lost its peer) is reaped first, as the scenario needs: {exits}")
    check(len(causes) == 1 and causes[0]["rank"] == 1, f"the supervisor names rank 1 the root cause: {causes}")
    check(j["reason"].startswith("rank 1 ") and "ValueError: bad batch at step 7 on rank 1" in j["reason"],
          f"the reason names rank 1 and its error, not rank 0: {j}")
    out = D.cli("status", str(job))
    check(out.returncode == 0 and "reason:    rank 1 " in out.stdout, f"status shows the root cause: {out.stdout}")


def test_no_daemon_is_a_clear_error():
    out = subprocess.run([os.environ.get("DDP_LAUNCH", "build/bin/ddp-launch"), "list", "--socket",
                          os.path.join(D.dir, "nobody.sock")], capture_output=True, text=True, timeout=30)
    check(out.returncode != 0 and "nobody.sock" in out.stderr and "ddp-launch daemon" in out.stderr,
          f"{out.returncode} {out.stderr}")


if __name__ == "__main__":
    D = Daemon("--slots", "2", "--gpus", "2", "--listen", "127.0.0.1:0")
    try:
        run_tests([test_socket_is_private_and_healthy, test_tcp_needs_the_bearer_token, test_bad_input_gets_clear_4xx_and_daemon_keeps_serving,
                   test_fuzzed_requests_never_break_the_daemon, test_no_daemon_is_a_clear_error,
                   test_two_configured_gpus_never_double_booked, test_failure_and_retry_policy,
                   test_reason_names_the_root_cause_not_the_rank_that_lost_its_peer,
                   test_three_jobs_two_slots_third_waits_then_runs, test_cancel_running_job_leaves_no_rank_alive,
                   test_logs_follow_streams_until_the_job_ends,
                   test_logs_follow_moves_to_the_next_attempt_after_a_restart,
                   test_logs_follow_moves_to_the_next_run_after_a_daemon_retry, test_metrics_read_every_rank,
                   test_metrics_steps_come_from_the_line])
    finally:
        D.cleanup()
