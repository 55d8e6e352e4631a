"""The bash completion and the man pages the build makes (target ddp-launch-docs) agree with the
binary's own --help: every command `--help` lists completes, every option a command's --help
lists completes, values complete as they should; the generated file is what `completion bash`
prints; a man page per command renders with its NAME line. Runs against the build tree's binary."""
import functools
import gzip
import os
import re
import subprocess

from harness import DDP_LAUNCH, TestFailure, check, run_tests

PKG_DIR = os.environ.get("DDP_PACKAGING_DIR", "build/packaging")


def help_of(*command):
    return subprocess.run([DDP_LAUNCH, *command, "--help"], capture_output=True, text=True, timeout=30,
                          check=True).stdout


@functools.cache
def completion_script():
    """What `ddp-launch completion bash` prints (the binary does not change during the test)."""
    return subprocess.run([DDP_LAUNCH, "completion", "bash"], capture_output=True, text=True, check=True).stdout


@functools.cache
def commands():
    return re.findall(r"^  ([a-z][a-z0-9-]*)\s", help_of().split("Subcommands:")[1], re.M)


def options_in_help(text):
    names = set()
    for line in text.splitlines():
        m = re.match(r"^  (-[^\s]+)", line)
        if m:
            names.update(n for n in m.group(1).split(",") if n.startswith("-"))
    return names


def complete(*words):
    """COMPREPLY for the command line `ddp-launch WORDS...` with the cursor on the last word, and
    whether the function handed over to bash's default (file name) completion."""
    line = ["ddp-launch", *words]
    driver = completion_script() + r"""
compopt() { echo "COMPOPT $*"; }   # the builtin works only while readline completes
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_ddp_launch
printf 'REPLY %s\n' "${COMPREPLY[@]}"
"""
    p = subprocess.run(["bash", "-c", driver, "bash", *line], capture_output=True, text=True, timeout=30)
    if p.returncode != 0 or p.stderr:
        raise TestFailure(f"completion of {line} failed ({p.returncode}): {p.stderr}")
    replies = {ln[len("REPLY "):] for ln in p.stdout.splitlines() if ln.startswith("REPLY ") and ln != "REPLY "}
    return replies, "COMPOPT -o default" in p.stdout


def test_generated_file_is_what_the_binary_prints():
    with open(os.path.join(PKG_DIR, "bash-completion/ddp-launch")) as f:
        built = f.read()
    check(built == completion_script(),
          "build/packaging/bash-completion/ddp-launch differs from `ddp-launch completion bash`")


def test_every_command_completes():
    replies, _ = complete("")
    check(replies == set(commands()), f"completion offers {sorted(replies)}, --help lists {commands()}")
    replies, _ = complete("da")
    check(replies == {"daemon"}, f"'da' completes to {replies}")


def test_every_option_of_every_command_completes():
    for command in ["", *commands()]:
        words = [command] if command else []
        expected = options_in_help(help_of(*words))
        replies, _ = complete(*words, "-")
        check(replies == expected, f"'{command or 'ddp-launch'} -': completion offers {sorted(replies)}, "
                                   f"--help lists {sorted(expected)}")


def test_values_choices_files_and_the_scripts_own_arguments():
    replies, _ = complete("--log-level", "")
    check(replies == {"trace", "debug", "info", "warn", "error", "critical", "off"}, f"--log-level: {replies}")
    replies, _ = complete("--log-level", "debug", "ru")
    check(replies == {"run"}, f"a valued option's value was taken for a command: {replies}")
    replies, default = complete("run", "--nproc-per-node", "")
    check(not replies and default, f"run --nproc-per-node VALUE should fall back to files: {replies} {default}")
    replies, _ = complete("run", "--nproc-per-node", "2", "--max-re")
    check(replies == {"--max-restarts"}, f"run's options after a value: {replies}")
    replies, default = complete("run", "train.py", "--")
    check(not replies and default, f"after run's SCRIPT the words are the script's: {replies} {default}")
    replies, default = complete("submit", "")
    check(not replies and default, f"submit's FILE should complete file names: {replies} {default}")
    replies, _ = complete("logs", "-f", "--std")  # --st is also --state-dir (the clients find the daemon by it)
    check(replies == {"--stderr"}, f"a flag must not swallow the next word: {replies}")


def test_a_man_page_per_command_that_renders():
    for name in ["ddp-launch", *(f"ddp-launch-{c}" for c in commands())]:
        path = os.path.join(PKG_DIR, "man1", f"{name}.1.gz")
        check(os.path.isfile(path), f"no man page {path}")
        with gzip.open(path, "rt") as f:
            roff = f.read()
        check(f".SH NAME\n{name} \\- " in roff, f"{name}.1: no NAME line: {roff[:400]}")
        check("/build/" not in roff and DDP_LAUNCH not in roff, f"{name}.1 names the build tree")
        p = subprocess.run(["man", "--warnings", "-l", path], capture_output=True, text=True, timeout=30,
                           env={**os.environ, "MANWIDTH": "100"})
        check(p.returncode == 0 and "SYNOPSIS" in p.stdout, f"man -l {path} exited {p.returncode}: {p.stderr[-500:]}")
        check(not p.stderr.strip(), f"man --warnings on {name}.1: {p.stderr[-1000:]}")


if __name__ == "__main__":
    run_tests([test_generated_file_is_what_the_binary_prints, test_every_command_completes,
               test_every_option_of_every_command_completes, test_values_choices_files_and_the_scripts_own_arguments,
               test_a_man_page_per_command_that_renders])
