"""The .deb on Debian 12 with python3-torch (torch 1.13; the cached root debian-12-torch): it
installs cleanly there too, `doctor` passes with that torch, `ddp-launch run --nproc-per-node 2`
trains a real DDP step over gloo, and a job submitted to the user unit's daemon does the same as
its user."""
import re

from debroot import HERE, daemon_job, installed_root
from harness import check, run_tests


def root():
    return installed_root("debian-12-torch")


def test_installs_only_what_depends_names():
    root()  # the checks are in debroot.expect_package_installs_cleanly


def test_doctor_passes_with_debian_torch():
    rc, out, err = root().run("ddp-launch doctor", check_rc=False)
    text = out + err
    check(rc == 0, f"doctor exited {rc} with python3-torch installed; output: {text[-2000:]}")
    check(re.search(r"ok.*torch 1\.13", text), f"doctor did not find torch 1.13: {text[-2000:]}")


def test_run_two_ranks_of_ddp_on_gloo():
    _, out, err = root().run(f"cd /tmp && OMP_NUM_THREADS=1 ddp-launch run --nproc-per-node 2 {HERE}/gloo_ddp.py",
                             timeout=180, what="ddp-launch run --nproc-per-node 2")
    text = out + err
    for rank in (0, 1):
        check(re.search(rf"rank {rank} of 2: sum 3 grad_agree True", text), f"rank {rank}'s line is missing: {text[-3000:]}")


def test_daemon_of_the_user_unit_runs_a_torch_job():
    daemon_job(root(), "/usr/lib/systemd/user/ddp-launch.service", "bob",
               "rank {rank} of 2: sum 3 grad_agree True user bob", command="[python3, /tmp/gloo_ddp.py]",
               setup=f"useradd -m bob && install -m 644 {HERE}/gloo_ddp.py /tmp/gloo_ddp.py")


if __name__ == "__main__":
    run_tests([test_installs_only_what_depends_names, test_doctor_passes_with_debian_torch,
               test_run_two_ranks_of_ddp_on_gloo, test_daemon_of_the_user_unit_runs_a_torch_job])
