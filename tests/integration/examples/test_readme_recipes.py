"""The README's "From torchrun to ddp-launch" recipes, run as written: each `<!-- recipe: NAME -->`
block is taken from README.md and run by bash from a directory that looks like the repository
root (its examples/), with build/bin first on
PATH and a python3 that imports torch. Only what would collide between test runs is changed: the
/tmp paths go to a temporary directory and the store's fixed port becomes a free one. Every recipe
must exit 0 and show that the ranks trained."""
import os
import re
import signal
import subprocess
import tempfile

from harness import PYTHON, LineReader, check, free_port, run_tests

SOURCE = os.environ.get("DDP_SOURCE_DIR", ".")
BIN = os.environ.get("DDP_BIN_DIR", "build/bin")
TMP = tempfile.mkdtemp(prefix="ddp-readme-")
# The recipes run from a directory of their own that looks like the repository root (examples/),
# so that what they write (the daemon's job file) stays out of the checkout.
WORK = os.path.join(TMP, "work")
os.makedirs(WORK)
os.symlink(os.path.join(os.path.abspath(SOURCE), "examples"), os.path.join(WORK, "examples"))


def recipes():
    with open(os.path.join(SOURCE, "README.md")) as f:
        text = f.read()
    found = dict(re.findall(r"<!-- recipe: ([\w-]+) -->\n```sh\n(.*?)```", text, re.S))
    check({"env", "tcp", "file", "daemon-server", "daemon-client", "manual-env", "imagenet"} <= set(found),
          f"README recipes found: {sorted(found)}")
    return found


def environment():
    env = dict(os.environ)
    python_dir = os.path.dirname(PYTHON)  # the python3 with torch comes first, after our binary
    env["PATH"] = f"{os.path.abspath(BIN)}:{python_dir}:{env.get('PATH', '')}"
    state = os.path.join(TMP, "state")
    env.update({"XDG_STATE_HOME": state, "XDG_RUNTIME_DIR": os.path.join(TMP, "runtime")})
    env.pop("DDP_DAEMON_SOCKET", None)
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    return env


def localised(script):
    script = script.replace("/tmp/", TMP + "/")
    return script.replace("29511", str(free_port()))


def run_recipe(name, timeout=240):
    script = localised(recipes()[name])
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=WORK, env=environment(),
                       capture_output=True, text=True, timeout=timeout)
    check(r.returncode == 0, f"recipe {name}: rc={r.returncode}\n{script}\nstdout: {r.stdout[-3000:]}\n"
                             f"stderr: {r.stderr[-3000:]}")
    return r


def trained(r, name):
    check("Epoch: [0]" in r.stdout and "Loss" in r.stdout, f"recipe {name}: no training progress:\n{r.stdout[-2000:]}")


def test_env():
    trained(run_recipe("env"), "env")


def test_tcp_with_placeholders():
    trained(run_recipe("tcp"), "tcp")


def test_file_twice_on_the_same_path():
    trained(run_recipe("file"), "file")
    trained(run_recipe("file"), "file (again, same path)")


def test_manual_env_against_a_standalone_store():
    trained(run_recipe("manual-env"), "manual-env")


def test_imagenet_with_batch_policy_and_report():
    r = run_recipe("imagenet")
    check("-b 32" not in r.stdout, "placeholder left unexpanded")
    check("batch: global 64 = 2 ranks × 32" in r.stderr, f"no batch line:\n{r.stderr[-2000:]}")
    check("first loss" in r.stdout and os.path.exists(os.path.join(TMP, "imagenet-r2", "loss.svg")),
          f"report did not summarise or chart:\n{r.stdout[-2000:]}")


def test_daemon():
    env = environment()
    server = subprocess.Popen(["bash", "-c", "exec " + recipes()["daemon-server"].strip()], cwd=WORK, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        LineReader(server.stdout, server, "daemon").wait_for("listening unix=", 60, "the daemon to listen")
        r = run_recipe("daemon-client", timeout=300)
        check("Epoch: [0]" in r.stdout, f"the job's log shows no training:\n{r.stdout[-2000:]}")
        check("SUCCEEDED" in r.stdout, f"the job did not succeed:\n{r.stdout[-2000:]}")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


if __name__ == "__main__":
    run_tests([test_env, test_tcp_with_placeholders, test_file_twice_on_the_same_path,
               test_manual_env_against_a_standalone_store, test_imagenet_with_batch_policy_and_report, test_daemon])
