"""The .deb on a clean Debian 12 (debootstrap minbase + systemd + man-db, the cached root debian-12):
`apt-get install ./ddp-launch_*.deb` adds only Depends and its closure, the binary runs and says
the package's version, `doctor` reports, the unit files pass `systemd-analyze verify` with the
Debian 12 systemd, and each unit's ExecStart, started the way systemd starts it, serves a 2-rank
job for its account (the user unit: by the clients' default socket; the service-account
template: by the socket its comment names).

Every check runs in one overlay over the root, in order; the first one installs the package."""
import re

from debroot import VERSION, daemon_job, deb_field, deb_path, installed_root
from harness import check, run_tests


def root():
    return installed_root("debian-12")


def test_installs_only_what_depends_names():
    root()  # the checks are in expect_package_installs_cleanly


def test_version_is_the_packages():
    _, out, _ = root().run("ddp-launch --version")
    check(out.strip() == f"ddp-launch {VERSION}", f"ddp-launch --version printed {out!r}, expected 'ddp-launch {VERSION}'")
    check(deb_field(deb_path(), "Version") == VERSION, f"the package's Version is not {VERSION}")


def test_doctor_reports_every_check_and_names_the_missing_python():
    # No Python here: doctor's documented outcome is exit 1 with the interpreter check failing.
    rc, out, err = root().run("ddp-launch doctor", check_rc=False)
    text = out + err
    check(rc == 1, f"doctor exited {rc} on a root without Python, expected 1; output: {text[-2000:]}")
    lines = [line for line in text.splitlines() if re.match(r"^\s*(ok|warn|fail)\b", line)]
    check(len(lines) >= 5, f"doctor printed {len(lines)} check lines, expected one per check: {text[-2000:]}")
    check(any(line.lstrip().startswith("fail") and "torch" in line for line in lines),
          f"doctor's failed check does not name torch: {lines}")
    check(not any(line.lstrip().startswith("fail") and "torch" not in line for line in lines),
          f"a check other than Python/torch failed on a clean Debian 12: {lines}")


def test_files_where_debian_expects_them():
    _, out, _ = root().run("dpkg -L ddp-launch")
    files = set(out.split())
    for sub in ["run", "daemon", "submit", "doctor", "completion"]:
        check(f"/usr/share/man/man1/ddp-launch-{sub}.1.gz" in files, f"no man page for '{sub}': {sorted(files)}")
    for path in ["/usr/bin/ddp-launch", "/usr/share/man/man1/ddp-launch.1.gz",
                 "/usr/share/bash-completion/completions/ddp-launch", "/usr/lib/systemd/user/ddp-launch.service",
                 "/usr/lib/systemd/system/ddp-launch@.service", "/usr/share/doc/ddp-launch/copyright",
                 "/usr/share/doc/ddp-launch/changelog.gz", "/usr/share/doc/ddp-launch/README.md"]:
        check(path in files, f"the package has no {path}")
    check(not any(re.search(r"/(unit_|resnet-trainer|gloo-allreduce|bench)", f) for f in files),
          f"test, bench or example binaries in the package: {sorted(files)}")


def test_unit_files_pass_systemd_analyze_verify():
    # As installed (ExecStart must point at an executable). A template verifies through an
    # instance; its User= need not exist for verify.
    _, out, err = root().run(
        "useradd --system ddpverify && cd /usr/lib/systemd/system && "
        "systemd-analyze verify ddp-launch@ddpverify.service 2>&1; "
        "useradd -m verifier && install -d -o verifier -m 700 /run/user/$(id -u verifier) && "
        "setpriv --reuid=verifier --regid=verifier --init-groups env -i HOME=/home/verifier "
        "XDG_RUNTIME_DIR=/run/user/$(id -u verifier) PATH=/usr/bin:/bin "
        "systemd-analyze --user verify /usr/lib/systemd/user/ddp-launch.service 2>&1")
    # verify exits 0 with warnings too; any line it prints about our units is a finding.
    findings = [line for line in (out + err).splitlines() if "ddp-launch" in line]
    check(not findings, f"systemd-analyze verify complained: {findings}")


def test_user_unit_serves_a_job_run_as_its_user():
    out = daemon_job(root(), "/usr/lib/systemd/user/ddp-launch.service", "alice", "rank {rank} of 2 as alice",
                     setup="useradd -m alice")
    check("ExecStart: /usr/bin/ddp-launch daemon" in out, f"unexpected ExecStart: {out}")
    check("state dir: /home/alice/.local/state/ddp-launch owned by alice" in out,
          f"the user unit's state is not in alice's XDG state dir: {out}")


def test_service_account_template_serves_a_job_run_as_the_account():
    out = daemon_job(root(), "/usr/lib/systemd/system/ddp-launch@.service", "ddp", "rank {rank} of 2 as ddp",
                     instance="ddp", setup="useradd --system --user-group --home-dir /nonexistent ddp")
    check("state dir: /var/lib/ddp-launch/ddp owned by ddp" in out, f"the account's state is not in /var/lib: {out}")


if __name__ == "__main__":
    run_tests([test_installs_only_what_depends_names, test_version_is_the_packages,
               test_doctor_reports_every_check_and_names_the_missing_python, test_files_where_debian_expects_them,
               test_unit_files_pass_systemd_analyze_verify, test_user_unit_serves_a_job_run_as_its_user,
               test_service_account_template_serves_a_job_run_as_the_account])
