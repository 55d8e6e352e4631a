"""packaging/: what run-demo.sh installs (only the demo's packages) and what it and run-tests.sh
print (one line per phase with the seconds since the start; the build's thousands of lines
condensed; a phase's log shown only when it fails). Real scripts, real bash; the demo itself end to
end with a few steps when the tests' build directory is the one it builds (build/)."""
import os
import re
import shutil
import subprocess
import tempfile
import time

from harness import check, run_tests

SOURCE = os.environ["DDP_SOURCE_DIR"]
PACKAGING = os.path.join(SOURCE, "packaging")
PHASE = re.compile(r"^\[ *(\d+) s\] ")
# What only the tests need: none of it may be installed by the demo.
TEST_ONLY = {"wine64", "g++-mingw-w64-x86-64-posix", "chromium", "slurmctld", "slurmd", "slurm-client", "munge",
             "debootstrap", "lintian", "help2man", "clang", "libclang-rt-dev", "gdb", "python3-torch",
             "libboost-all-dev"}


def packages(*flags):
    r = subprocess.run([os.path.join(PACKAGING, "install-deps.sh"), *flags, "--list"], capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 0, f"install-deps.sh {flags} --list: exit {r.returncode}: {r.stderr}")
    return r.stdout.split()


def test_demo_installs_only_the_demo_packages():
    demo, everything = packages("--demo"), packages()
    check(demo and len(set(demo)) == len(demo), f"demo list: {demo}")
    check(set(demo) <= set(everything), f"demo packages missing from the full list: {set(demo) - set(everything)}")
    check(not set(demo) & TEST_ONLY, f"the demo installs test-only packages: {sorted(set(demo) & TEST_ONLY)}")
    check(TEST_ONLY <= set(everything), f"the full list lost test packages: {sorted(TEST_ONLY - set(everything))}")
    for needed in ("libtorch-dev", "cmake", "ninja-build", "libre2-dev", "libgloo-dev", "python3"):
        check(needed in demo, f"the demo needs {needed}: {demo}")
    r = subprocess.run([os.path.join(PACKAGING, "install-deps.sh"), "--bogus"], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 2 and "--bogus" in r.stderr and "--demo" in r.stderr, f"bad option: {r.stderr}")


def bash(script, env=None, timeout=60):
    return subprocess.run(["bash", "-c", f'set -euo pipefail; . "{PACKAGING}/progress.sh"; {script}'],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "DDP_PROGRESS_T0": str(int(time.time())), **(env or {})})


def test_build_progress_is_a_dozen_lines():
    with tempfile.TemporaryDirectory() as d:
        # What ninja prints for 283 steps when its output is not a terminal, and a warning between.
        fake = 'for i in $(seq 1 283); do echo "[$i/283] Building CXX object launcher/x$i.o"; ' \
               '[ $i = 7 ] && echo "warning: noise"; done; true'
        r = bash(f"build_quietly fake bash -c '{fake}'", env={"DDP_PROGRESS_LOGS": d})
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
        lines = r.stdout.splitlines()
        check(3 <= len(lines) <= 12, f"{len(lines)} lines for 283 steps: {r.stdout}")
        check(all(PHASE.match(x) and re.search(r"building \[\d+/283\]…$", x) for x in lines), f"lines: {r.stdout}")
        check(lines[-1].endswith("building [283/283]…"), f"the last step is not shown: {lines[-1]}")
        check("noise" not in r.stdout + r.stderr, f"the build's own output was printed: {r.stdout} {r.stderr}")
        log = open(os.path.join(d, "fake.log")).read()
        check("[283/283] Building CXX" in log and "warning: noise" in log, "the log lost the build's output")

        # A slow build: a line every DDP_BUILD_EVERY_S seconds even between the percentage marks.
        slow = 'for i in 1 2 3; do echo "[$i/1000] step"; sleep 1.2; done'
        r = bash(f"build_quietly slow bash -c '{slow}'",
                 env={"DDP_PROGRESS_LOGS": d, "DDP_BUILD_EVERY_S": "1", "DDP_BUILD_EVERY_PCT": "50"})
        check(r.returncode == 0 and len(r.stdout.splitlines()) == 3, f"a line per 1 s: {r.stdout} {r.stderr}")

        # A failed build: non-zero, the failed step and the compiler's error shown, and where the log is.
        failing = 'echo "[1/3] ok"; echo "[2/3] Building CXX object a.o"; echo "FAILED: a.o"; ' \
                  'echo "a.cpp:3:1: error: expected ;"; exit 1'
        r = bash(f"build_quietly failing bash -c '{failing}' || echo rc=$?", env={"DDP_PROGRESS_LOGS": d})
        check("rc=1" in r.stdout, f"a failed build did not fail: {r.stdout} {r.stderr}")
        shown = r.stderr.splitlines()[1:]  # after the line naming the failed command
        check("FAILED: a.o" in shown and "a.cpp:3:1: error: expected ;" in shown and "[1/3] ok" not in shown,
              f"the failure is not shown (from ninja's FAILED: on): {r.stderr}")
        check(os.path.join(d, "failing.log") in r.stderr, f"the log's path is not given: {r.stderr}")

        # quietly: silent when the command succeeds, its output shown when it fails.
        r = bash("quietly ok echo hidden; quietly bad bash -c 'echo why >&2; exit 3' || echo rc=$?",
                 env={"DDP_PROGRESS_LOGS": d})
        check("hidden" not in r.stdout + r.stderr and "rc=3" in r.stdout and "why" in r.stderr,
              f"quietly: {r.stdout} {r.stderr}")


def test_run_demo_prints_its_phases():
    bin_dir = os.environ["DDP_BIN_DIR"]
    if os.path.realpath(bin_dir) != os.path.realpath(os.path.join(SOURCE, "build", "bin")):
        print(f"     run-demo.sh builds {SOURCE}/build, not this build ({bin_dir}): skipped", flush=True)
        return
    start = time.monotonic()
    # Deps present and the build up to date (this test runs from it): install and build say so in a line each.
    # A demo started by hand has its own clock: not the one run-tests.sh (the suite's caller) exported.
    r = subprocess.run([os.path.join(PACKAGING, "run-demo.sh")], capture_output=True, text=True, timeout=240,
                       env={**{k: v for k, v in os.environ.items() if k != "DDP_PROGRESS_T0"}, "STEPS": "20"})
    took = time.monotonic() - start
    # The demo keeps its run directory for the user; the test does not.
    for out in set(re.findall(r"(/tmp/ddp-launch-demo\.[A-Za-z0-9]+)/", r.stdout + r.stderr)):
        shutil.rmtree(out, ignore_errors=True)
    check(r.returncode == 0, f"run-demo.sh exit {r.returncode}: {r.stdout[-3000:]} {r.stderr[-3000:]}")
    phases = [x for x in r.stdout.splitlines() if PHASE.match(x)]
    text = "\n".join(phases)
    for want in ("dependencies", "packages present", "configuring", "building", "training…", "report…"):
        check(want in text, f"no '{want}' phase line: {text}")
    check(int(PHASE.match(phases[-1]).group(1)) <= took + 1, f"elapsed times: {text}")
    check(len(r.stdout.splitlines()) < 80, f"run-demo.sh printed {len(r.stdout.splitlines())} lines: {r.stdout}")
    check("demo summary: 2 ranks" in r.stdout and "replicas agree (parameter hash): yes" in r.stdout,
          f"no demo summary: {r.stdout[-2000:]}")


run_tests([
    test_demo_installs_only_the_demo_packages,
    test_build_progress_is_a_dozen_lines,
    test_run_demo_prints_its_phases,
])
