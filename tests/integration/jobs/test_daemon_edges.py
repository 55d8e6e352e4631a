"""The daemon at its edges (issue 12): a TCP connection flood must not lock the owner out of the
unix socket; --socket never deletes what is not a stale socket; Transfer-Encoding, the bearer
scheme's case, duplicate keys and out-of-range durations; YAML metrics reach a metrics.csv that
`ddp-launch report` charts; the batch policy gives the ranks what `run --global-batch` gives them.
Real daemons, real sockets, real `ddp-launch run` supervisors (shell jobs: no torch needed)."""
import http.client
import json
import os
import resource
import select
import socket
import subprocess
import tempfile
import time

from daemon_harness import Daemon
from harness import DDP_LAUNCH, TestFailure, check, run_tests

D = None  # one daemon for the protocol and job scenarios (TCP on, 2 slots)


def lowered_open_files(n):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return apply


def read_until_closed(socks, deadline):
    """{sock: bytes} for every socket, read until the daemon closed it or the deadline passed."""
    got = {s: b"" for s in socks}
    by_fd = {s.fileno(): s for s in socks}
    poller = select.poll()
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    while by_fd and time.monotonic() < deadline:
        for fd, _ in poller.poll(max(0, min(1000, int((deadline - time.monotonic()) * 1000)))):
            s = by_fd[fd]
            try:
                chunk = s.recv(65536)
            except OSError:  # reset: closed too
                chunk = b""
            if chunk:
                got[s] += chunk
            else:
                poller.unregister(fd)
                del by_fd[fd]
    return got, set(by_fd.values())


def test_tcp_flood_leaves_the_unix_socket_serving():
    # 256 descriptors: 400 idle TCP connections exhausted an uncapped daemon and its unix socket
    # stopped answering. The default cap (half the limit: 128) keeps the rest for the owner.
    d = Daemon("--slots", "2", "--gpus", "0", "--listen", "127.0.0.1:0", "--tcp-auth-timeout", "5",
               preexec_fn=lowered_open_files(256))
    socks = []
    try:
        port = d.tcp_port()
        for _ in range(400):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        flooded = time.monotonic()
        status, body = d.request("GET", "/v1/jobs", timeout=10)
        check(status == 200, f"list on the unix socket during the flood: {status} {body}")
        job = d.submit("name: during-a-flood\nshell: 'echo served'\n")
        d.wait_state(job, "SUCCEEDED", 120, "(submitted on the unix socket while TCP was flooded)")
        # Over the cap: a 503 naming the flag, then closed. Under it: closed without a word once
        # --tcp-auth-timeout passed with no request (long before the 60 s idle timeout). The 5 s
        # timeout outlasts the flood, so no admitted connection has made room for another yet.
        got, still_open = read_until_closed(socks, flooded + 30)
        check(not still_open, f"{len(still_open)} idle unauthenticated connections still open after 30 s")
        refused = [b for b in got.values() if b.startswith(b"HTTP/1.1 503")]
        idle_closed = [b for b in got.values() if b == b""]
        check(len(refused) + len(idle_closed) == 400, f"other answers: {[b[:80] for b in got.values()][:5]}")
        check(len(refused) >= 400 - 128 and len(idle_closed) <= 128,
              f"{len(refused)} refused, {len(idle_closed)} served until the auth timeout (cap 128)")
        check(b"--max-tcp-connections" in refused[0], f"the 503 names the flag: {refused[0]!r}")
        # Capacity is back: an authenticated TCP client is served, the daemon is up.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/v1/jobs", headers={"Authorization": "Bearer " + d.token()})
        check(conn.getresponse().status == 200, "TCP serves again after the flood")
        conn.close()
        check(d.proc.poll() is None, "the daemon stays up")
        check("refusing new ones" in d.log(), "the daemon logs that it refused connections")
    finally:
        for s in socks:
            s.close()
        d.cleanup()


def test_a_tcp_cap_the_open_file_limit_cannot_hold_is_refused():
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([DDP_LAUNCH, "daemon", "--state-dir", os.path.join(tmp, "s"), "--socket",
                              os.path.join(tmp, "d.sock"), "--listen", "127.0.0.1:0", "--max-tcp-connections", "500"],
                             capture_output=True, text=True, timeout=30, preexec_fn=lowered_open_files(256))
    check(out.returncode == 2 and "--max-tcp-connections 500" in out.stderr and "at most 192" in out.stderr,
          f"{out.returncode} {out.stderr}")


def test_daemon_duration_flags_are_range_checked():
    with tempfile.TemporaryDirectory() as tmp:
        for flag, value in [("--slurm-poll-interval", "1e10"), ("--slurm-poll-interval", "1e-12"),
                            ("--tcp-auth-timeout", "1e10"), ("--tcp-auth-timeout", "0"),
                            ("--max-tcp-connections", "0")]:
            out = subprocess.run([DDP_LAUNCH, "daemon", "--state-dir", os.path.join(tmp, "s"), "--socket",
                                  os.path.join(tmp, "d.sock"), flag, value], capture_output=True, text=True, timeout=30)
            check(out.returncode != 0 and flag in out.stderr, f"{flag} {value}: {out.returncode} {out.stderr}")


def test_service_flag_on_linux_names_the_systemd_units_and_touches_nothing():
    # --service is the Windows service manager's (platform/service.hpp); on Linux: a usage error.
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "s")
        out = subprocess.run([DDP_LAUNCH, "daemon", "--service", "--state-dir", state, "--socket",
                              os.path.join(tmp, "d.sock")], capture_output=True, text=True, timeout=30)
        check(out.returncode == 2 and "Windows service manager" in out.stderr and "systemctl --user enable --now"
              in out.stderr, f"{out.returncode} {out.stderr}")
        check(not os.path.exists(state), "the refused daemon made its state directory")


def test_bad_listen_addresses_say_what_is_wrong():
    # One HOST:PORT reader (common/net.hpp): '12x' was port 12, '::1:0' split at the last colon.
    with tempfile.TemporaryDirectory() as tmp:
        for value, why in [("127.0.0.1", "no port"), ("127.0.0.1:12x", "'12x' is not a port number (0..65535)"),
                           ("127.0.0.1:70000", "'70000' is not a port number (0..65535)"),
                           ("::1:0", "write an IPv6 host as [ADDR]"), (":0", "no host")]:
            out = subprocess.run([DDP_LAUNCH, "daemon", "--state-dir", os.path.join(tmp, "s"), "--socket",
                                  os.path.join(tmp, "d.sock"), "--listen", value],
                                 capture_output=True, text=True, timeout=30)
            check(out.returncode == 2 and f"--listen '{value}': {why}; give HOST:PORT" in out.stderr,
                  f"--listen {value}: {out.returncode} {out.stderr}")


def daemon_start(socket_path, state_dir):
    return subprocess.run([DDP_LAUNCH, "daemon", "--state-dir", state_dir, "--socket", socket_path],
                          capture_output=True, text=True, timeout=30)


def test_socket_flag_never_deletes_what_is_not_a_stale_socket():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "precious.txt")
        with open(path, "w") as f:
            f.write("my notes\n")
        out = daemon_start(path, os.path.join(tmp, "s1"))
        check(out.returncode == 2 and f"--socket {path} is a regular file" in out.stderr,
              f"a regular file: {out.returncode} {out.stderr}")
        check(open(path).read() == "my notes\n", "the file is untouched")
        os.mkdir(os.path.join(tmp, "dir"))
        out = daemon_start(os.path.join(tmp, "dir"), os.path.join(tmp, "s1"))
        check(out.returncode == 2 and "is a directory" in out.stderr, f"a directory: {out.stderr}")
        os.symlink(path, os.path.join(tmp, "link"))
        out = daemon_start(os.path.join(tmp, "link"), os.path.join(tmp, "s1"))
        check(out.returncode == 2 and "is a symbolic link" in out.stderr and os.path.exists(path),
              f"a link: {out.stderr}")
        # A live daemon's socket: named, with its pid; it keeps serving.
        out = daemon_start(D.socket, os.path.join(tmp, "s2"))
        check(out.returncode == 2 and f"--socket {D.socket}: another daemon (pid {D.proc.pid})" in out.stderr,
              f"a live socket: {out.returncode} {out.stderr}")
        check(D.request("GET", "/healthz")[0] == 200, "the live daemon still answers")
        # A stale socket (bound, its owner gone) where the daemon's goes: replaced.
        os.mkdir(os.path.join(tmp, "s3"))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(os.path.join(tmp, "s3", "d.sock"))
        s.close()
        d = Daemon(state_dir=os.path.join(tmp, "s3"))
        try:
            check(d.request("GET", "/healthz")[0] == 200, "a daemon starts over a stale socket")
        finally:
            d.stop()


def raw_unix(data, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(D.socket)
    try:
        s.sendall(data)
        got, _ = read_until_closed([s], time.monotonic() + timeout)
        return got[s]
    finally:
        s.close()


def test_transfer_encoding_other_than_chunked_is_400_and_close():
    smuggled = b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n"
    for coding, status in [(b"gzip", b"400"), (b"chunked, gzip", b"400"), (b"gzip, chunked", b"501")]:
        reply = raw_unix(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding +
                         b"\r\n\r\n0\r\n\r\n" + smuggled)
        check(reply.startswith(b"HTTP/1.1 " + status) and reply.count(b"HTTP/1.1 ") == 1,
              f"Transfer-Encoding {coding!r}: one {status!r} answer, the rest never read as a request: {reply!r}")
    # chunked itself is read: the body reaches the YAML parser.
    body = b"name: a\ncommand: [x\n"
    reply = raw_unix(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n" +
                     b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    check(reply.startswith(b"HTTP/1.1 400") and b"not valid YAML" in reply, f"chunked body: {reply!r}")


def test_the_bearer_scheme_is_case_insensitive():
    port, token = D.tcp_port(), D.token()
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/v1/jobs", headers={"Authorization": f"{scheme} {token}"})
        r = conn.getresponse()
        check(r.status == 200, f"scheme {scheme!r}: {r.status} {r.read()!r}")
        conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/v1/jobs", headers={"Authorization": f"Bearerx {token}"})
    check(conn.getresponse().status == 401, "another scheme is refused")
    conn.close()


def test_duplicate_keys_and_durations_out_of_range_are_400_with_position():
    cases = [("name: a\ncommand: [x]\nlimits: {timeout: 10000000000}\n", 3, 19, "limits.timeout must be at most 365d"),
             ("name: a\ncommand: [x]\nlimits: {timeout: 1e-12}\n", 3, 19, "limits.timeout must be at least 1ms"),
             ("name: a\ncommand: [x]\ndistributed: {shutdown_grace: 1e-9}\n", 3, 31, "0 or at least 1ms"),
             ("name: a\ncommand: [x]\nname: b\n", 3, 1, "duplicate key 'name' (first given at line 1, column 1)"),
             ('name: a\nshell: "echo \\0 cut here"\n', 2, 8, "holds a NUL character")]
    for yaml, line, column, message in cases:
        status, body = D.request("POST", "/v1/jobs", yaml, {"X-Ddp-File": "job.yaml"})
        problems = body.get("problems", []) if isinstance(body, dict) else []
        check(status == 400 and any(p["line"] == line and p["column"] == column and message in p["message"]
                                    for p in problems) and f"job.yaml:{line}:{column}:" in body["error"],
              f"{yaml!r}: {status} {body}")


def test_yaml_metrics_reach_a_metrics_csv_that_report_charts():
    job = D.submit("name: charted\nshell: 'for i in 1 2 3 4; do echo \"step $i loss=0.$((10 - i))\"; done'\n"
                   "metrics: {loss: 'loss=([0-9.]+)'}\n")
    j = D.wait_state(job, "SUCCEEDED", 120)
    run_dir = j["run_dir"]
    out = subprocess.run([DDP_LAUNCH, "report", run_dir], capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, f"report {run_dir}: {out.returncode} {out.stdout} {out.stderr}")
    check("0.9" in out.stdout and "0.6" in out.stdout and "run-0" in out.stdout,
          f"the summary shows the job's first and last loss: {out.stdout}")
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        values = [line.split(",") for line in f.read().splitlines()]
    losses = [row for row in values if "loss" in row]
    check(len(losses) == 4, f"four loss values in metrics.csv: {values}")
    check(os.path.exists(os.path.join(run_dir, "loss.svg")), "the chart is written into the run directory")


def ranks_env_files(out_dir):
    result = {}
    for rank in ("0", "1"):
        with open(os.path.join(out_dir, rank)) as f:
            result[rank] = f.read()
    return result


BATCH_SHELL = 'echo "G=$DDP_GLOBAL_BATCH P=$DDP_PER_RANK_BATCH L=$DDP_LR_SCALE" > "$OUT/$RANK"'


def test_batch_policy_gives_the_ranks_what_run_gives_them():
    for policy, flag in [("global_batch", "--global-batch"), ("per_rank_batch", "--per-rank-batch")]:
        with tempfile.TemporaryDirectory() as via_daemon, tempfile.TemporaryDirectory() as via_run:
            job = D.submit(f"name: batch-{policy.replace('_', '-')}\nshell: '{BATCH_SHELL}'\n"
                           f"env: {{OUT: {via_daemon}}}\nresources: {{nproc_per_node: 2}}\n"
                           f"distributed: {{batch_policy: {policy}, batch_size: 8}}\n")
            D.wait_state(job, "SUCCEEDED", 120)
            out = subprocess.run([DDP_LAUNCH, "run", "--nproc-per-node", "2", flag, "8", "--no-python", "/bin/sh",
                                  "-c", BATCH_SHELL], capture_output=True, text=True, timeout=120,
                                 env={**os.environ, "OUT": via_run})
            check(out.returncode == 0, f"run {flag}: {out.stderr}")
            daemon, run = ranks_env_files(via_daemon), ranks_env_files(via_run)
            check(daemon == run, f"{policy}: the daemon's ranks saw {daemon}, run's {run}")
            check("P=" in daemon["0"] and "L=" in daemon["0"] and "P= " not in daemon["0"] and not
                  daemon["0"].rstrip().endswith("L="), f"all three variables are set: {daemon}")


def test_a_nul_byte_cuts_no_reason_log_or_status_short():
    script = os.path.join(D.dir, "nul_worker.sh")
    with open(script, "w") as f:
        f.write("printf '{\"message\": {\"message\": \"ValueError: before\\\\u0000after the nul\", "
                "\"extraInfo\": {\"timestamp\": \"1\"}}}' > \"$TORCHELASTIC_ERROR_FILE\"\n"
                "printf 'out\\000put after the nul\\n'\nexit 3\n")
    job = D.submit(f"name: nul-bytes\ncommand: [/bin/sh, {script}]\n")
    j = D.wait_state(job, "FAILED", 120)
    check("before\x00after the nul" in j["reason"], f"the reason keeps what follows the NUL: {j['reason']!r}")
    status, text = D.request("GET", f"/v1/jobs/{job}/logs?rank=0")
    check(status == 200 and text == "out\x00put after the nul\n", f"the log keeps its bytes: {status} {text!r}")
    out = subprocess.run([DDP_LAUNCH, "status", str(job), "--socket", D.socket], capture_output=True, timeout=30)
    check(out.returncode == 0 and b"before\x00after the nul" in out.stdout, f"status: {out.stdout!r}")
    status, listing = D.request("GET", "/v1/jobs?limit=1000")
    check(any(x["id"] == job and "after the nul" in x["reason"] for x in listing["jobs"]), "list keeps it too")
    # Error messages quoting the client's (percent-decoded) bytes: whole, not cut at the NUL.
    status, body = D.request("GET", "/v1/jobs?state=RUN%00NING")
    check(status == 400 and "'RUN\x00NING' is not one of" in body["error"], f"{status} {body}")
    status, body = D.request("GET", "/v1/jobs/1%002/events")
    check(status == 400 and "'1\x002' is not a job id" in body["error"], f"{status} {body}")
    status, body = D.request("POST", "/v1/jobs", 'name: a\ncommand: [x]\npriority: "1\\0"\n')
    check(status == 400 and "not '1\x00'" in body["error"], f"a spec message: {status} {body}")
    job_file = os.path.join(D.dir, "nul.yaml")
    with open(job_file, "w") as f:
        f.write('name: a\ncommand: [x]\npriority: "1\\0"\nlimits: {timeout: soon}\n')
    out = D.cli("submit", job_file)
    check(out.returncode != 0 and "not '1\\0'" in out.stderr and "nul.yaml:4:19: limits.timeout" in out.stderr,
          f"submit prints the whole message, the NUL as \\0: {out.stderr!r}")


def test_yaml_aliases_cannot_take_the_daemon_down():
    """A self-referencing alias crashed the daemon (SIGSEGV); a 9-level billion laughs held a core
    at 99 % with `list` timing out. Both are 400s at the anchor's place, submitted with the client,
    and the daemon answers `list` at once afterwards."""
    laughs = "name: lol\ncommand: [x]\nl0: &l0 lol\n" + "".join(
        f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))
    with tempfile.TemporaryDirectory(prefix="ddp-alias-") as tmp:
        for name, text, where in [("bomb.yaml", "name: bomb\ncommand: &a [*a]\n", "bomb.yaml:2:10:"),
                                  ("laughs.yaml", laughs, "laughs.yaml:3:5:")]:
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            started = time.monotonic()
            out = D.cli("submit", path, timeout=30)
            check(out.returncode != 0 and where in out.stderr and "anchor" in out.stderr,
                  f"submit {name}: rc {out.returncode} {out.stderr!r}")
            check(D.proc.poll() is None, f"the daemon died on {name}: rc {D.proc.returncode}")
            listed = D.cli("list", timeout=10)
            check(listed.returncode == 0 and time.monotonic() - started < 10,
                  f"list after {name}: rc {listed.returncode} {listed.stderr!r} after {time.monotonic() - started:.1f}s")


def test_a_job_file_over_the_limit_gets_the_limits_message():
    """A 50 MB job file gave "Broken pipe" at the client: the daemon answered 413 and hung up while
    the body was still being sent. `submit` names the limit; a raw client that sends it anyway
    still reads the 413 (the daemon answers before closing), and the daemon keeps serving."""
    with tempfile.TemporaryDirectory(prefix="ddp-big-") as tmp:
        big = os.path.join(tmp, "big.yaml")
        with open(big, "w") as f:
            f.write("name: big\ncommand: [x]\n")
            f.write(("# " + "x" * 1022 + "\n") * (50 * 1024))
        out = D.cli("submit", big, timeout=60)
        check(out.returncode != 0 and "over 1048576 bytes" in out.stderr and "Broken pipe" not in out.stderr,
              f"submit of 50 MB: rc {out.returncode} {out.stderr!r}")
    body = b"name: big\ncommand: [x]\n" + b"#" * (3 << 20)
    conn = http.client.HTTPConnection("localhost", timeout=30)
    conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.sock.settimeout(30)
    conn.sock.connect(D.socket)
    try:
        try:
            conn.request("POST", "/v1/jobs", body=body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon hung up mid-body: its answer is still to be read
        r = conn.getresponse()
        text = r.read().decode()
        check(r.status == 413 and "1048576 bytes" in text, f"raw 3 MiB POST: {r.status} {text!r}")
    finally:
        conn.close()
    check(D.cli("list", timeout=10).returncode == 0, "list after the big submits")


def test_a_global_batch_the_ranks_cannot_split_is_refused_at_submit():
    status, body = D.request("POST", "/v1/jobs", "name: a\ncommand: [x]\nresources: {nproc_per_node: 2}\n"
                                                 "distributed: {batch_policy: global_batch, batch_size: 7}\n")
    check(status == 400 and "cannot be split evenly across 2 ranks" in body["error"] and "use 6 or 8" in body["error"],
          f"{status} {body}")


if __name__ == "__main__":
    D = Daemon("--slots", "2", "--gpus", "0", "--listen", "127.0.0.1:0")
    try:
        run_tests([test_transfer_encoding_other_than_chunked_is_400_and_close, test_the_bearer_scheme_is_case_insensitive,
                   test_duplicate_keys_and_durations_out_of_range_are_400_with_position,
                   test_socket_flag_never_deletes_what_is_not_a_stale_socket,
                   test_a_global_batch_the_ranks_cannot_split_is_refused_at_submit,
                   test_yaml_aliases_cannot_take_the_daemon_down,
                   test_a_job_file_over_the_limit_gets_the_limits_message,
                   test_a_nul_byte_cuts_no_reason_log_or_status_short,
                   test_yaml_metrics_reach_a_metrics_csv_that_report_charts,
                   test_batch_policy_gives_the_ranks_what_run_gives_them,
                   test_tcp_flood_leaves_the_unix_socket_serving,
                   test_a_tcp_cap_the_open_file_limit_cannot_hold_is_refused,
                   test_daemon_duration_flags_are_range_checked,
                   test_service_flag_on_linux_names_the_systemd_units_and_touches_nothing,
                   test_bad_listen_addresses_say_what_is_wrong])
    finally:
        D.cleanup()
