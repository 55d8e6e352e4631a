"""`ddp-launch ui` and the dashboard's server side without a browser, with a real daemon:

- `ui` prints a one-time login URL of the daemon its socket leads to (TCP address from GET
  /v1/daemon, a code from POST /v1/dashboard/login-link, never the token); it logs in once, a second
  visit (the browser history's copy) gets the login page; `--open` hands it to xdg-open; a daemon
  without --listen gets an error naming the flag;
- the token URL redirects without the token and sets the session cookie; the session reads the
  API; a session's cancel without its CSRF token is refused (403), with it accepted;
- the live stream follows a rank's log across a worker-group restart (the marker line, then the
  next attempt's lines), as `logs -f` does.
"""
import http.client
import json
import os
import re
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jobs"))

from daemon_harness import Daemon  # noqa: E402
from harness import DDP_LAUNCH, PYTHON, TestFailure, check, run_tests  # noqa: E402
from test_live_stream import EventReader, open_stream  # noqa: E402


def http_get(port, target, headers=None, method="GET", body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, target, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode()
    finally:
        conn.close()


def test_ui_without_listen():
    d = Daemon()
    try:
        r = d.cli("ui")
        check(r.returncode == 1 and "--listen" in r.stderr and r.stdout == "", f"ui without --listen: {r}")
    finally:
        d.cleanup()


def test_ui_and_sessions():
    d = Daemon("--listen", "127.0.0.1:0")
    try:
        port = d.tcp_port()
        token = d.token()
        r = d.cli("ui")
        check(r.returncode == 0, f"ui: {r.stderr}")
        m = re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?login=([0-9a-f]{{48}})\n", r.stdout)
        check(m and token not in r.stdout, f"ui printed {r.stdout!r}")
        check("one-time" in r.stderr, f"ui says the link is for one login: {r.stderr!r}")
        status, headers, _ = http_get(port, f"/?login={m.group(1)}")
        check(status == 303 and headers["Location"] == "/" and "Set-Cookie" in headers, f"login link: {status} {headers}")
        status, headers, page = http_get(port, f"/?login={m.group(1)}")
        check(status == 401 and "Set-Cookie" not in headers and "used already" in page, f"login link again: {status}")

        # --open: the URL goes to xdg-open (a stand-in on PATH that records its argv).
        bindir = os.path.join(d.dir, "bin")
        os.makedirs(bindir)
        opener = os.path.join(bindir, "xdg-open")
        with open(opener, "w") as f:
            f.write(f"#!/bin/sh\necho \"$@\" > {d.dir}/opened\n")
        os.chmod(opener, stat.S_IRWXU)
        r = subprocess.run([DDP_LAUNCH, "ui", "--open", "--socket", d.socket], capture_output=True, text=True,
                           timeout=60, env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"})
        check(r.returncode == 0, f"ui --open: {r.stderr}")
        check(open(os.path.join(d.dir, "opened")).read().strip() == r.stdout.strip(), "xdg-open got the URL")

        # The token URL: 303 to the same page without it, and the session cookie.
        status, headers, _ = http_get(port, f"/jobs?state=RUNNING&token={token}")
        check(status == 303 and headers["Location"] == "/jobs?state=RUNNING", f"token URL: {status} {headers}")
        cookie = headers["Set-Cookie"]
        check(re.match(rf"ddp_session_{port}=[0-9a-f]{{64}}; Path=/; HttpOnly; SameSite=Strict$", cookie), cookie)
        session = cookie.split(";")[0]
        status, _, page = http_get(port, "/jobs", {"Cookie": session})
        csrf = re.search(r'name="csrf-token" content="([0-9a-f]+)"', page).group(1)
        status, _, body = http_get(port, "/v1/host", {"Cookie": session})
        check(status == 200 and json.loads(body)["slots_total"] > 0, f"the session reads the API: {status} {body}")

        job = d.submit(f"name: sleeper\ncommand: [{PYTHON}, -c, 'import time; time.sleep(300)']\n")
        d.wait_state(job, "RUNNING", 60)
        status, _, body = http_get(port, f"/v1/jobs/{job}/cancel", {"Cookie": session}, method="POST")
        check(status == 403 and "X-CSRF-Token" in json.loads(body)["error"], f"no CSRF token: {status} {body}")
        status, _, body = http_get(port, f"/v1/jobs/{job}/cancel",
                                   {"Cookie": session, "X-CSRF-Token": csrf, "Origin": "http://evil.example"},
                                   method="POST")
        check(status == 403, f"another origin: {status} {body}")
        status, _, body = http_get(port, f"/v1/jobs/{job}/cancel",
                                   {"Cookie": session, "X-CSRF-Token": csrf, "Origin": f"http://127.0.0.1:{port}"},
                                   method="POST")
        check(status == 202, f"the page's cancel: {status} {body}")
        d.wait_state(job, "CANCELLED", 60)

        # Logout forgets the session.
        status, headers, _ = http_get(port, "/logout", {"Cookie": session, "X-CSRF-Token": csrf}, method="POST")
        check(status == 303 and "Max-Age=0" in headers["Set-Cookie"], f"logout: {status} {headers}")
        status, _, _ = http_get(port, "/v1/host", {"Cookie": session})
        check(status == 401, f"after logout: {status}")
    finally:
        d.cleanup()


def test_live_log_follows_a_restart():
    d = Daemon("--listen", "127.0.0.1:0")
    try:
        port = d.tcp_port()
        token = d.token()
        marker = os.path.join(d.dir, "second")
        # Attempt 0 prints and fails; attempt 1 (the worker-group restart) prints and succeeds.
        program = (f"import os, sys, time\nsecond = os.path.exists('{marker}')\nopen('{marker}', 'a').close()\n"
                   "time.sleep(1.5)\nprint('attempt two' if second else 'attempt one', flush=True)\n"
                   "sys.exit(0 if second else 4)\n")
        job = d.submit(f"name: flaky\ncommand: [{PYTHON}, -c, {json.dumps(program)}]\n"
                       "distributed: {max_restarts: 1}\n")
        reader = EventReader(open_stream(port, token, f"/ui/events?view=job&job={job}&rank=0"))
        text = ""
        deadline = time.monotonic() + 90
        while "attempt two" not in text:
            if time.monotonic() > deadline:
                raise TestFailure(f"the live log never showed the restarted attempt: {text!r}; job: {d.job(job)}")
            event, data = reader.next(deadline)
            if event == "log":
                text += json.loads(data)["text"]
        check(text.index("attempt one") < text.index("the job restarted; following") < text.index("attempt two"),
              f"the live log across the restart: {text!r}")
        d.wait_state(job, "SUCCEEDED", 60)
    finally:
        d.cleanup()


if __name__ == "__main__":
    run_tests([test_ui_without_listen, test_ui_and_sessions, test_live_log_follows_a_restart])
