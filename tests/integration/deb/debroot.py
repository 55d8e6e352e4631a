"""Host-side helpers of the .deb tests: the package built by packaging/build-deb.sh, and a
throw-away Debian 12 root to install it in (an overlay over a root that tests/chroot/prepare.sh
caches, so every test starts from the same clean system and leaves the cache unchanged)."""
import atexit
import fcntl
import glob
import os
import re
import shutil
import subprocess
import tempfile

from harness import TestFailure, check

SOURCE_DIR = os.environ.get("DDP_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "../../..")))
VERSION = os.environ.get("DDP_VERSION", "")
DEB_DIR = os.path.join(SOURCE_DIR, "build-release")
RUN_IN_ROOT = os.path.join(SOURCE_DIR, "tests/chroot/run-in-root.sh")
CACHE = os.environ.get("DDP_CHROOT_CACHE", "/var/cache/ddp-launch/chroots")
HERE = os.path.dirname(os.path.abspath(__file__))


def deb_path():
    """The .deb of this version that packaging/build-deb.sh made (the package test runs it first)."""
    found = sorted(glob.glob(os.path.join(DEB_DIR, f"ddp-launch_{VERSION}_*.deb")))
    if not found:
        raise TestFailure(f"no {DEB_DIR}/ddp-launch_{VERSION}_*.deb: run packaging/build-deb.sh "
                          "(ctest runs it as the test integration.deb.package)")
    return found[0]


def readme_install_command():
    """The apt-get line of the README's `deb-install` recipe, without sudo (the test is root)."""
    with open(os.path.join(SOURCE_DIR, "README.md")) as f:
        m = re.search(r"<!-- recipe: deb-install -->\n```sh\n(.*?)```", f.read(), re.S)
    check(m, "README.md has no '<!-- recipe: deb-install -->' block")
    lines = [line.split("#")[0].strip() for line in m.group(1).splitlines()]
    check(lines and lines[0] == "./packaging/build-deb.sh", f"the README's install does not start with build-deb.sh: {lines}")
    apt = [line for line in lines if "apt-get install" in line]
    check(len(apt) == 1, f"the README's install has no single apt-get install line: {lines}")
    return apt[0].removeprefix("sudo ")


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], check=True, capture_output=True, text=True).stdout.strip()


class Root:
    """An overlay over the cached root `name`; commands run in it with run-in-root.sh, one at a
    time (the overlay's upper layer may not be shared by two mounts). Use as a context manager."""

    def __init__(self, name):
        self.name = name
        if os.geteuid() != 0:
            raise TestFailure("the .deb tests install the package in a chroot and need root (mount, chroot)")
        if not os.path.isfile(os.path.join(CACHE, name, ".ddp-chroot-stamp")):
            raise TestFailure(f"no {name} root at {os.path.join(CACHE, name)}: run tests/chroot/prepare.sh "
                              "(builds it once per machine, a few minutes)")
        # Downloaded packages outlive the overlay: the second run installs without the network.
        self.archives = os.path.join(CACHE, f"{name}.apt-archives")
        os.makedirs(os.path.join(self.archives, "partial"), exist_ok=True)
        self.overlay = tempfile.mkdtemp(prefix=f"ddp-deb-{name}.")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.overlay, ignore_errors=True)

    def run(self, script, timeout=120, check_rc=True, what=None):
        """Runs `script` with bash -euo pipefail inside; returns (rc, stdout, stderr). In its own pid
        namespace: whatever it starts (a daemon) ends with it, also when it fails or times out.
        DDP_TEST_SUITE goes in: the suite's last test finds by it what outlived its test."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("DDP_") or k in ("DDP_CHROOT_CACHE", "DDP_TEST_SUITE")}
        argv = [RUN_IN_ROOT, self.name, "--bind", SOURCE_DIR, "--bind", DEB_DIR, "--bind", self.archives,
                "--overlay", self.overlay, "--pid-namespace", "--", "/bin/bash", "-euo", "pipefail", "-c", script]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd="/")
        except subprocess.TimeoutExpired as e:
            raise TestFailure(f"{what or script!r} in {self.name} did not finish within {timeout}s; "
                              f"output tail: {(e.stdout or b'')[-2000:]!r} {(e.stderr or b'')[-2000:]!r}")
        if check_rc and p.returncode != 0:
            raise TestFailure(f"{what or script!r} in {self.name} exited {p.returncode}; stdout tail: "
                              f"{p.stdout[-2000:]}; stderr tail: {p.stderr[-3000:]}")
        return p.returncode, p.stdout, p.stderr

    def installed(self):
        _, out, _ = self.run("dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n'", what="dpkg-query")
        return {line.split()[1] for line in out.splitlines() if line.startswith("ii")}

    def apt_install_deb(self):
        """The README's install command (`sudo apt-get install ./build-release/ddp-launch_*.deb`,
        run from the repository root as root), with apt's default settings (Recommends included);
        returns the packages it added besides ddp-launch."""
        before = self.installed()
        command = readme_install_command()
        apt = f"DEBIAN_FRONTEND=noninteractive apt-get -q -y -o Dir::Cache::Archives={self.archives}/"
        install = f"cd {SOURCE_DIR} && {command.replace('apt-get', apt, 1)}"
        # The archive cache is shared by runs in other worktrees: one apt at a time uses it.
        with open(os.path.join(self.archives, ".ddp-test-lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            rc, out, err = self.run(install, timeout=300, check_rc=False)
            if rc != 0:
                # The cached lists may name versions the mirror has since replaced: refresh and retry.
                self.run(f"{apt} update && {install}", timeout=300,
                         what=f"{command} (after an apt-get update; the first try: {err[-1500:]})")
        after = self.installed()
        check("ddp-launch" in after, f"ddp-launch is not installed after {command}")
        return after - before - {"ddp-launch"}

    def depends_closure(self):
        """ddp-launch's Depends and Pre-Depends, recursively, as apt resolves them here."""
        _, out, _ = self.run("apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts "
                             "--no-breaks --no-replaces --no-enhances ddp-launch", what="apt-cache depends")
        return {line.strip().strip("<>") for line in out.splitlines() if line and not line[0].isspace()}

    def library_owners(self, binary="/usr/bin/ddp-launch"):
        """{shared library path: the package that owns it} for every library the binary loads."""
        _, out, _ = self.run(f"ldd {binary}", what="ldd")
        missing = [line.strip() for line in out.splitlines() if "not found" in line]
        check(not missing, f"libraries of {binary} not found in {self.name}: {missing}")
        paths = [line.split("=>")[1].split("(")[0].strip() for line in out.splitlines() if "=>" in line]
        owners = {}
        for path in paths:
            # Debian 12 is merged-/usr: a package may list /lib/x or /usr/lib/x for the same file.
            script = (f"p={path}; for c in $p $(readlink -f $p) /usr$p ${{p#/usr}}; do "
                      "dpkg-query -S $c 2>/dev/null && break; done | head -1")
            _, found, _ = self.run(script, what=f"dpkg-query -S {path}")
            owners[path] = found.split(":")[0].strip() if found.strip() else None
        return owners


def expect_package_installs_cleanly(root, deb):
    """The install checks both roots share: the README's apt-get command installs this .deb and
    pulls nothing beyond Depends and its closure, and every library the binary loads comes from a
    package in that closure. Returns the added set."""
    added = root.apt_install_deb()
    _, out, _ = root.run("dpkg-query -W -f '${Version}' ddp-launch", what="dpkg-query ddp-launch")
    check(out == deb_field(deb, "Version"), f"installed ddp-launch {out}, the built .deb is {deb_field(deb, 'Version')}")
    closure = root.depends_closure()
    extra = sorted(added - closure)
    check(not extra, f"apt-get install pulled packages outside Depends' closure: {extra} "
                     f"(Depends: {deb_field(deb, 'Depends')})")
    owners = root.library_owners()
    unowned = {p: o for p, o in owners.items() if o is None or o not in closure}
    check(not unowned, f"libraries ddp-launch loads whose package is not in Depends' closure: {unowned}")
    return added


_installed = {}


def installed_root(name):
    """Root `name` with the package installed by expect_package_installs_cleanly, made on the
    first call (it prints what apt added) and shared by a test module's cases; removed at exit."""
    if name not in _installed:
        root = Root(name)
        atexit.register(root.__exit__, None, None, None)
        deb = deb_path()
        added = expect_package_installs_cleanly(root, deb)
        print(f"# {name}: Depends: {deb_field(deb, 'Depends')}", flush=True)
        print(f"# {name}: apt-get install added {len(added)} packages: {' '.join(sorted(added))}", flush=True)
        _installed[name] = root
    return _installed[name]


def daemon_job(root, unit, account, rank_line, instance="", command="", setup=":"):
    """Runs unit_daemon.sh in `root` after `setup` (which makes the account): the daemon of
    `unit` started as systemd would, a 2-rank job (`command`, default: print rank and user)
    submitted as `account`. Checks the job succeeded and each rank printed rank_line.format(rank=R);
    returns the script's output."""
    args = " ".join(f"'{a}'" for a in [unit, account, instance] + ([command] if command else []))
    _, out, _ = root.run(f"{setup} && {HERE}/unit_daemon.sh {args}", timeout=180,
                         what=f"the daemon of {unit} and a job as {account}")
    check(re.search(r"^status: .*SUCCEEDED", out, re.M), f"the job did not succeed: {out}")
    for rank in (0, 1):
        check(f"output: {rank_line.format(rank=rank)}" in out, f"rank {rank} did not print '{rank_line}': {out}")
    return out
