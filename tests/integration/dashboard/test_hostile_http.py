"""The dashboard's TCP address against a hostile or careless client, with a real daemon (no browser):

- HEAD is answered without a body, so pipelined requests after it stay in step; OPTIONS, unknown
  methods and HTTP/1.0 get an answer, never a hang;
- a Host header naming another site (DNS rebinding) is refused by a daemon on 127.0.0.1;
- a client that never authenticates is closed at its deadline counted from its connection, however
  many public requests (login page, files) it makes; a wrong token or login link closes it at once;
- every reply (API JSON, logs, errors) carries `Cache-Control: no-store` and the security headers;
- a cookie of the session's name set by another port's page (cookies are per host) does not hide
  the session; every state-changing route refuses a session's request without its CSRF token or
  from another origin, whatever its Content-Type; a planted session id is never adopted; a logout
  ends the live streams the session opened;
- path traversal, huge headers, bodies and uploads, slow headers, malformed live-stream queries,
  many live streams at once: a clear 4xx or 503, the unix socket keeps answering, and the daemon,
  its running job and its job database are intact afterwards.
"""
import http.client
import os
import re
import socket
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jobs"))

from daemon_harness import Daemon  # noqa: E402
from harness import PYTHON, TestFailure, check, run_tests  # noqa: E402
from test_live_stream import EventReader, rss_kib  # noqa: E402

AUTH_TIMEOUT = 2  # --tcp-auth-timeout of the daemon below
MAX_TCP = 120     # --max-tcp-connections of the daemon below


class Box:
    """One daemon on 127.0.0.1 for every test here, with a running job whose state must survive."""

    def __init__(self):
        self.d = Daemon("--listen", "127.0.0.1:0", "--tcp-auth-timeout", str(AUTH_TIMEOUT),
                        "--max-tcp-connections", str(MAX_TCP), "--slots", "2")
        self.port = self.d.tcp_port()
        self.token = self.d.token()
        self.job = self.d.submit(f"name: survivor\ncommand: [{PYTHON}, -c, 'import time; time.sleep(600)']\n")
        self.d.wait_state(self.job, "RUNNING", 60)
        self.job_pid = self.d.job(self.job).get("pid")

    def bearer(self):
        return {"Authorization": f"Bearer {self.token}"}

    def login(self):
        """A browser's login by the link `ddp-launch ui` prints: (Cookie header, CSRF token)."""
        r = self.d.cli("ui")
        check(r.returncode == 0, f"ui: {r.stderr}")
        target = r.stdout.strip().split(str(self.port), 1)[1]
        status, headers, _ = request(self.port, "GET", target)
        check(status == 303, f"login link: {status} {headers}")
        cookie = headers["Set-Cookie"].split(";")[0]
        status, _, page = request(self.port, "GET", "/", {"Cookie": cookie})
        csrf = re.search(r'name="csrf-token" content="([0-9a-f]+)"', page).group(1)
        return cookie, csrf


BOX = None


def request(port, method, target, headers=None, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, target, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode(errors="replace")
    finally:
        conn.close()


def raw_exchange(port, data, wait=2.0):
    """Sends bytes, returns what comes back until the peer closes or is quiet for `wait` s."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(wait)
    s.sendall(data)
    out = b""
    try:
        while True:
            c = s.recv(1 << 16)
            if not c:
                break
            out += c
    except socket.timeout:
        pass
    finally:
        s.close()
    return out


def parse_responses(data, methods):
    """Splits a pipelined byte stream into responses the way a client does: a HEAD's has no body."""
    out = []
    for m in methods:
        head, sep, rest = data.partition(b"\r\n\r\n")
        check(sep and head.startswith(b"HTTP/1."), f"response {len(out) + 1} ({m}) is not a status line: {data[:80]!r}")
        fields = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(b":") for ln in head.split(b"\r\n")[1:])}
        n = 0 if m == "HEAD" else int(fields.get(b"content-length", b"0"))
        out.append((int(head.split()[1]), fields, rest[:n]))
        data = rest[n:]
    check(data == b"", f"bytes after the last response: {data[:80]!r}")
    return out


def closed_within(sock, seconds):
    """True when the peer closes the connection within `seconds` (what it sends meanwhile is read)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            if not sock.recv(1 << 16):
                return True
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True
    return False


def test_head_options_unknown_methods_http10():
    b = BOX
    host = f"Host: 127.0.0.1:{b.port}\r\nAuthorization: Bearer {b.token}\r\n"
    methods = ["HEAD", "GET", "HEAD", "GET", "HEAD"]
    targets = ["/healthz", "/healthz", "/v1/jobs", "/v1/jobs", "/assets/app.js"]
    data = b"".join(f"{m} {t} HTTP/1.1\r\n{host}\r\n".encode() for m, t in zip(methods, targets))
    got = parse_responses(raw_exchange(b.port, data), methods)
    for (status, fields, body), m, t in zip(got, methods, targets):
        check(status == 200, f"{m} {t}: {status}")
        if m == "HEAD":
            check(body == b"" and int(fields[b"content-length"]) > 0, f"HEAD {t}: length {fields.get(b'content-length')}")
    check(got[0][1][b"content-length"] == got[1][1][b"content-length"], "HEAD and GET /healthz: the same length")
    # HEAD of a stream: refused, without a body either.
    got = parse_responses(raw_exchange(b.port, f"HEAD /ui/events?view=jobs HTTP/1.1\r\n{host}\r\n".encode()), ["HEAD"])
    check(got[0][0] == 405, f"HEAD of the live stream: {got[0][0]}")

    for method in ["OPTIONS", "TRACE", "PROPFIND", "BREW"]:
        status, headers, _ = request(b.port, method, "/v1/jobs", {"Origin": "http://evil.example",
                                                                   "Access-Control-Request-Method": "POST"})
        check(status == 401, f"{method} without credentials: {status}")
        check(not any(k.lower().startswith("access-control-") for k in headers), f"{method}: CORS headers {headers}")
        status, _, _ = request(b.port, method, "/v1/jobs", b.bearer())
        check(status in (404, 405), f"{method} with the token: {status}")
    out = raw_exchange(b.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 200") and out.endswith(b'{"ok":true}\n'), f"HTTP/1.0: {out[-60:]!r}")
    out = raw_exchange(b.port, f"GET /v1/host HTTP/1.0\r\nAuthorization: Bearer {b.token}\r\n\r\n".encode())
    check(out.startswith(b"HTTP/1.1 200") and b"slots_total" in out, f"HTTP/1.0 without Host: {out[:60]!r}")


def test_dns_rebinding_host_header():
    b = BOX
    cookie, csrf = b.login()
    for host in ["evil.example", f"evil.example:{b.port}", f"127.0.0.1.nip.io:{b.port}", f"localhost.evil:{b.port}"]:
        for target, headers in [("/", {"Cookie": cookie}), ("/login", {}), ("/v1/jobs", {"Cookie": cookie}),
                                ("/v1/jobs", b.bearer()), ("/ui/events?view=jobs", {"Cookie": cookie}),
                                (f"/?token={b.token}", {})]:
            status, hdrs, body = request(b.port, "GET", target, {"Host": host, **headers})
            check(status == 403 and "Set-Cookie" not in hdrs, f"Host {host} GET {target}: {status}")
            check("DNS" in body or "loopback" in body, f"the refusal says why: {body[:200]}")
        status, _, _ = request(b.port, "POST", f"/v1/jobs/{b.job}/cancel",
                               {"Host": host, "Cookie": cookie, "X-CSRF-Token": csrf, "Origin": f"http://{host}"})
        check(status == 403, f"Host {host}: cancel {status}")
    for host in [f"127.0.0.1:{b.port}", f"localhost:{b.port}", f"LocalHost:{b.port}", f"[::1]:{b.port}"]:
        status, _, body = request(b.port, "GET", "/v1/host", {"Host": host, "Cookie": cookie})
        check(status == 200, f"Host {host}: {status} {body[:200]}")
    check(BOX.d.job(b.job)["state"] == "RUNNING", "the job was not cancelled by a rebinding page")


def test_auth_deadline_counts_from_the_connection():
    b = BOX
    s = socket.create_connection(("127.0.0.1", b.port))
    start = time.monotonic()
    try:
        # Public requests every 0.3 s: before the fix each one re-armed the deadline.
        closed = False
        while time.monotonic() - start < AUTH_TIMEOUT + 8:
            try:
                s.sendall(f"GET /assets/favicon.svg HTTP/1.1\r\nHost: 127.0.0.1:{b.port}\r\n\r\n".encode())
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if closed_within(s, 0.3):
                closed = True
                break
        took = time.monotonic() - start
        check(closed and took < AUTH_TIMEOUT + 5, f"an unauthenticated client fetching files held its connection "
                                                  f"{took:.1f} s (--tcp-auth-timeout {AUTH_TIMEOUT})")
    finally:
        s.close()
    # A wrong token or login link: the answer, then the connection is closed (no guessing on it).
    for req in [b"GET /?token=0123 HTTP/1.1\r\n", b"GET /jobs?login=abcd HTTP/1.1\r\n",
                b"POST /login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n"]:
        s = socket.create_connection(("127.0.0.1", b.port))
        body = b"token=x" if req.startswith(b"POST") else b""
        s.sendall(req + f"Host: 127.0.0.1:{b.port}\r\n\r\n".encode() + body)
        check(closed_within(s, 5.0), f"{req.splitlines()[0]!r}: still open after a failed login")
        s.close()


def test_every_reply_is_uncached_and_hardened():
    b = BOX
    cookie, _ = b.login()
    for target, headers in [("/v1/jobs", b.bearer()), (f"/v1/jobs/{b.job}", {"Cookie": cookie}),
                            (f"/v1/jobs/{b.job}/logs?rank=supervisor", b.bearer()), ("/v1/host", {"Cookie": cookie}),
                            ("/metrics", b.bearer()), (f"/v1/jobs/{b.job}/events", {"Cookie": cookie}),
                            ("/v1/jobs/999999", b.bearer()), ("/v1/nope", b.bearer()), ("/v1/jobs", {})]:
        status, hdrs, _ = request(b.port, "GET", target, headers)
        for name, want in [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                           ("X-Frame-Options", "DENY"), ("Referrer-Policy", "no-referrer")]:
            check(hdrs.get(name) == want, f"GET {target} ({status}): {name} is {hdrs.get(name)!r}, not {want!r}")
        check("frame-ancestors 'none'" in hdrs.get("Content-Security-Policy", ""), f"GET {target}: no CSP")
    # The followed log and the live stream too.
    for target in [f"/v1/jobs/{b.job}/logs?rank=supervisor&follow=1", "/ui/events?view=host"]:
        s = socket.create_connection(("127.0.0.1", b.port))
        s.settimeout(10)
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{b.port}\r\nAuthorization: Bearer {b.token}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        s.close()
        check(b"Cache-Control: no-store" in head and b"X-Content-Type-Options: nosniff" in head, f"{target}: {head!r}")


def test_a_shadowing_cookie_does_not_log_out():
    b = BOX
    cookie, csrf = b.login()
    name = cookie.split("=")[0]
    for junk in [f"{name}=junk; {cookie}", f"{name}={'0' * 64}; a=1; {cookie}", f"{cookie}; {name}=junk"]:
        status, _, page = request(b.port, "GET", "/jobs", {"Cookie": junk})
        check(status == 200 and "csrf-token" in page, f"Cookie {junk[:50]}…: the login page")
        status, _, _ = request(b.port, "GET", "/v1/host", {"Cookie": junk})
        check(status == 200, f"Cookie {junk[:50]}…: /v1/host {status}")


def test_csrf_on_every_state_changing_route():
    b = BOX
    cookie, csrf = b.login()
    origin = f"http://127.0.0.1:{b.port}"
    jobs_before = b.d.request("GET", "/v1/jobs")[1]["total"]
    routes = [("POST", "/v1/jobs", "name: csrf\ncommand: [/bin/true]\n"), ("POST", "/v1/jobs/validate", "name: x\n"),
              ("POST", f"/v1/jobs/{b.job}/cancel", ""), ("POST", "/v1/dashboard/login-link", ""),
              ("POST", "/logout", ""), ("PUT", "/v1/jobs", "x"), ("DELETE", f"/v1/jobs/{b.job}", ""),
              ("PATCH", f"/v1/jobs/{b.job}", "x")]
    forged = [{}, {"Origin": origin}, {"Origin": "http://evil.example"}, {"Origin": "null"},
              {"Origin": f"http://127.0.0.1:{b.port + 1}", "X-CSRF-Token": csrf},  # another port: same site
              {"X-CSRF-Token": csrf[:-1] + ("0" if csrf[-1] != "0" else "1")}, {"X-CSRF-Token": ""}]
    for method, target, body in routes:
        for extra in forged:
            for ctype in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]:
                status, _, answer = request(b.port, method, target,
                                            {"Cookie": cookie, "Content-Type": ctype, **extra}, body=body)
                check(status == 403, f"{method} {target} {extra} {ctype}: {status} {answer[:120]}")
    check(b.d.request("GET", "/v1/jobs")[1]["total"] == jobs_before, "nothing was submitted")
    check(b.d.job(b.job)["state"] == "RUNNING", "nothing was cancelled")
    status, _, _ = request(b.port, "GET", "/v1/host", {"Cookie": cookie})
    check(status == 200, "the session is still open (the forged logouts did nothing)")
    # Session fixation: a cookie value the daemon did not issue is never adopted; a login issues a new one.
    name = cookie.split("=")[0]
    planted = f"{name}={'ab' * 32}"
    status, headers, _ = request(b.port, "GET", f"/?token={b.token}", {"Cookie": planted})
    check(status == 303 and headers["Set-Cookie"].split(";")[0] != planted, "a login keeps a planted session id")
    status, _, _ = request(b.port, "GET", "/v1/host", {"Cookie": planted})
    check(status == 401, f"the planted session id: {status}")


def test_logout_ends_the_sessions_live_streams():
    b = BOX
    cookie, csrf = b.login()
    other_cookie, _ = b.login()  # another browser: its stream stays
    streams = {}
    for who, c in [("mine", cookie), ("other", other_cookie)]:
        s = socket.create_connection(("127.0.0.1", b.port))
        s.settimeout(10)
        s.sendall(f"GET /ui/events?view=jobs HTTP/1.1\r\nHost: 127.0.0.1:{b.port}\r\nCookie: {c}\r\n\r\n".encode())
        reader = EventReader(s)
        deadline = time.monotonic() + 10
        while reader.next(deadline)[0] != "jobs":
            pass
        streams[who] = reader
    status, _, _ = request(b.port, "POST", "/logout", {"Cookie": cookie, "X-CSRF-Token": csrf,
                                                       "Origin": f"http://127.0.0.1:{b.port}"})
    check(status == 303, f"logout: {status}")
    job = b.d.submit(f"name: after-logout\ncommand: [{PYTHON}, -c, 'pass']\n")
    deadline = time.monotonic() + 10
    try:
        while True:
            event, data = streams["mine"].next(deadline)
            check(not (event == "jobs" and f'"id":{job}' in data), "a logged-out stream got the next job list")
    except TestFailure as e:
        check("ended" in str(e), f"the logged-out stream: {e}")
    except socket.timeout:
        raise TestFailure("the logged-out stream is still open 10 s after the logout")
    while True:  # the other browser's session is untouched
        event, data = streams["other"].next(time.monotonic() + 10)
        if event == "jobs" and f'"id":{job}' in data:
            break
    streams["other"].sock.close()
    status, _, _ = request(b.port, "GET", "/ui/events?view=jobs", {"Cookie": cookie})
    check(status == 401, f"a new stream with the logged-out cookie: {status}")
    b.d.wait_state(job, "SUCCEEDED", 60)


def test_traversal_limits_and_slow_clients():
    b = BOX
    for target in ["/assets/../login.html", "/assets/%2e%2e/%2e%2e/etc/passwd", "/assets/..%2f..%2fjobs.db",
                   "/assets/app.js%00.html", "/assets/%00", "/assets/login.html", "/assets/index.html",
                   "/assets/..\\..\\token", "/%2e%2e/state/token", "/assets//etc/passwd", "/assets/app.js/..",
                   "/v1/jobs/1/logs?rank=../../token", "/v1/jobs/1/logs?rank=0&stream=../../../token"]:
        status, _, body = request(b.port, "GET", target)
        check(status in (400, 401, 404), f"GET {target}: {status}")
        check(b.token not in body and "root:" not in body, f"GET {target} leaked a file")
        status, _, body = request(b.port, "GET", target, b.bearer())
        check(status in (400, 404) and b.token not in body, f"GET {target} with the token: {status}")
    # Huge header, huge body, huge upload from a session: 431 / 413 with a reason, never a hang.
    status, _, body = request(b.port, "GET", "/v1/jobs", {**b.bearer(), "X-Big": "a" * 20000})
    check(status == 431, f"a 20 KB header: {status}")
    status, _, body = request(b.port, "GET", "/", {"Cookie": "x=" + "a" * 20000})
    check(status == 431, f"a 20 KB cookie: {status}")
    cookie, csrf = b.login()
    s = socket.create_connection(("127.0.0.1", b.port))
    s.settimeout(10)
    try:  # the daemon answers and closes before taking it all: a client sees the 413 after EPIPE
        s.sendall(f"POST /v1/jobs/validate HTTP/1.1\r\nHost: 127.0.0.1:{b.port}\r\nCookie: {cookie}\r\n"
                  f"X-CSRF-Token: {csrf}\r\nContent-Type: application/yaml\r\nContent-Length: {2 << 20}\r\n\r\n"
                  .encode() + b"#" * (2 << 20))
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = s.recv(4096)
    s.close()
    check(answer.startswith(b"HTTP/1.1 413") and b"request body" in answer, f"a 2 MB upload: {answer[:200]!r}")
    s = socket.create_connection(("127.0.0.1", b.port))
    s.sendall(f"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1:{b.port}\r\nAuthorization: Bearer {b.token}\r\n"
              f"Content-Length: {1 << 40}\r\n\r\n".encode())
    s.settimeout(10)
    check(s.recv(200).startswith(b"HTTP/1.1 413"), "a 1 TB Content-Length: 413 before the body")
    s.close()
    # Slowloris: a header a byte at a time, never finished, is closed at the auth deadline.
    s = socket.create_connection(("127.0.0.1", b.port))
    start = time.monotonic()
    closed = False
    for ch in b"GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200:
        try:
            s.send(bytes([ch]))
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        if closed_within(s, 0.1):
            closed = True
            break
    check(closed and time.monotonic() - start < AUTH_TIMEOUT + 5, "a slow header held its connection")
    s.close()
    # The live stream's query and Last-Event-ID: bad ones are 400, odd ones harmless.
    for query, want in [("view=job&job=abc", 400), ("view=job&job=99999999999999999999", 400),
                        ("view=job&job=1&rank=../x", 400), ("view=%ff%00", 400), ("view=jobs&state=%00", 400),
                        ("view=jobs%", 400), ("view=job&job=0", 404), ("view=job&job=1e3", 400)]:
        status, _, body = request(b.port, "GET", f"/ui/events?{query}", {**b.bearer(), "Last-Event-ID": "9" * 200})
        check(status == want and "error" in body, f"/ui/events?{query}: {status} {body[:100]}")
    out = raw_exchange(b.port, f"GET /ui/events?view=host HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                               f"{b.token}\r\nLast-Event-ID: \x00\xff\r\n\r\n".encode("latin-1"), wait=1)
    check(out.startswith(b"HTTP/1.1 400"), f"a NUL in Last-Event-ID: {out[:40]!r}")


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_many_live_streams_keep_the_unix_socket_answering():
    b = BOX
    pid = b.d.proc.pid
    before = fd_count(pid)
    rss_before = rss_kib(pid)
    socks = []
    for _ in range(MAX_TCP + 30):
        s = socket.create_connection(("127.0.0.1", b.port))
        s.sendall(f"GET /ui/events?view=job&job={b.job}&rank=supervisor HTTP/1.1\r\nHost: 127.0.0.1:{b.port}\r\n"
                  f"Authorization: Bearer {b.token}\r\n\r\n".encode())
        socks.append(s)
    answered = {}
    for s in socks:
        s.settimeout(10)
        status = s.recv(12)[9:12].decode()
        answered[status] = answered.get(status, 0) + 1
    check(answered == {"200": MAX_TCP, "503": 30}, f"{MAX_TCP + 30} streams: {answered}")
    start = time.monotonic()
    status, body = b.d.request("GET", "/v1/jobs")
    took = time.monotonic() - start
    check(status == 200 and took < 5, f"the unix socket under {MAX_TCP} streams: {status} in {took:.2f} s")
    during = fd_count(pid)
    print(f"{MAX_TCP} live streams: {during - before} more descriptors, RSS {rss_kib(pid) - rss_before} KiB more")
    check(rss_kib(pid) - rss_before < 32 * 1024, f"{MAX_TCP} streams cost {rss_kib(pid) - rss_before} KiB")
    # Each stream: its socket and the log it follows (inotify is shared).
    check(during - before <= 2 * MAX_TCP + 10, f"{during - before} more descriptors for {MAX_TCP} streams")
    for s in socks:
        s.close()
    deadline = time.monotonic() + 10
    while fd_count(pid) > before + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    check(fd_count(pid) <= before + 2, f"descriptors after the streams closed: {fd_count(pid)} (before {before})")


def test_the_daemon_and_its_jobs_are_intact():
    b = BOX
    check(b.d.proc.poll() is None, "the daemon is running")
    j = b.d.job(b.job)
    check(j["state"] == "RUNNING" and j.get("pid") == b.job_pid, f"the job survived: {j}")
    status, _, body = request(b.port, "GET", "/healthz")
    check(status == 200, f"healthz: {status}")
    db = sqlite3.connect(f"file:{os.path.join(b.d.state, 'jobs.db')}?mode=ro", uri=True)
    try:
        check(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "jobs.db integrity")
        rows = dict(db.execute("SELECT id, state FROM jobs").fetchall())
        check(rows.get(b.job) == "RUNNING", f"jobs.db: {rows}")
    finally:
        db.close()
    log = b.d.log()
    check("Traceback" not in log and "internal error" not in log, "the daemon logged no internal error")
    check(b.token not in log, "the daemon's log holds its token (it was sent in URLs and forms above)")


def main():
    global BOX
    BOX = Box()
    try:
        run_tests([test_head_options_unknown_methods_http10, test_dns_rebinding_host_header,
                   test_auth_deadline_counts_from_the_connection, test_every_reply_is_uncached_and_hardened,
                   test_a_shadowing_cookie_does_not_log_out, test_csrf_on_every_state_changing_route,
                   test_logout_ends_the_sessions_live_streams,
                   test_traversal_limits_and_slow_clients, test_many_live_streams_keep_the_unix_socket_answering,
                   test_the_daemon_and_its_jobs_are_intact])
    finally:
        BOX.d.cleanup()


if __name__ == "__main__":
    main()
