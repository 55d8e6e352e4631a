"""Host-side helpers for the torch 2.x tests: run a command in a cached chroot built by
tests/chroot/prepare.sh, with the project directory bound at the same path inside."""
import json
import os
import subprocess

from harness import TestFailure

SOURCE_DIR = os.environ.get("DDP_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
RUN_IN_ROOT = os.path.join(SOURCE_DIR, "tests/chroot/run-in-root.sh")
CACHE = os.environ.get("DDP_CHROOT_CACHE", "/var/cache/ddp-launch/chroots")
HERE = os.path.dirname(os.path.abspath(__file__))
# What a test waits for a chroot python to start, import torch and finish its work. Starting
# python and importing torch alone takes about 4 s on an idle 2-core machine.
CHROOT_RUN_TIMEOUT = 50.0


def require_root(name):
    """Fails (never skips) when the chroot is missing, saying how to build it."""
    if os.geteuid() != 0:
        raise TestFailure("the torch2x tests run torch in a chroot and need root (mount, chroot)")
    stamp = os.path.join(CACHE, name, ".ddp-chroot-stamp")
    if not os.path.isfile(stamp):
        raise TestFailure(f"no {name} chroot at {os.path.join(CACHE, name)}: run tests/chroot/prepare.sh "
                          "(builds it once per machine, about 3 minutes and 1.4 GB)")


def chroot_cmd(name, *argv):
    return [RUN_IN_ROOT, name, "--bind", SOURCE_DIR, "--", *argv]


def start_in_root(name, *argv, env=None):
    """Starts argv inside chroot `name`; stdout and stderr piped, text mode."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.Popen(chroot_cmd(name, *argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=full_env, cwd="/")


def finish(proc, what, timeout=CHROOT_RUN_TIMEOUT):
    """Waits for a chroot process; returns (rc, stdout, stderr). Kills it past the timeout."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise TestFailure(f"{what} did not finish within {timeout:.0f}s; stderr tail: {err[-2000:]}")
    return proc.returncode, out, err


def result_line(out, err, what):
    """The JSON after 'RESULT ' that the in-chroot scripts print last."""
    for line in reversed(out.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise TestFailure(f"{what} printed no RESULT line; stdout tail: {out[-1000:]!r}; stderr tail: {err[-2000:]}")
