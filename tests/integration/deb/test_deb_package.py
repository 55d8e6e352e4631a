"""packaging/build-deb.sh builds ddp-launch_<version>_<arch>.deb (the fixture of the other .deb
tests), and the package is what Debian expects: its version is the project's and the binary's,
Depends comes from dpkg-shlibdeps (shared libraries only, no torch), it holds the binary, the unit
files naming the installed binary, a man page per command, the completion, the copyright and
changelog, and nothing else, and lintian finds no error or warning."""
import io
import os
import re
import subprocess
import tarfile
import tempfile

from debroot import SOURCE_DIR, VERSION, deb_field
from harness import check, run_tests

_deb = None


def deb():
    global _deb
    if _deb is None:
        p = subprocess.run([os.path.join(SOURCE_DIR, "packaging/build-deb.sh")], capture_output=True, text=True,
                           timeout=1100)
        check(p.returncode == 0, f"packaging/build-deb.sh exited {p.returncode}: {p.stdout[-2000:]} {p.stderr[-3000:]}")
        _deb = p.stdout.strip().splitlines()[-1]
        check(os.path.isfile(_deb), f"build-deb.sh printed {_deb!r}, which is no file")
        print(f"# {_deb}: {os.path.getsize(_deb) / 1e6:.1f} MB", flush=True)
    return _deb


def _tar_bytes():
    return io.BytesIO(subprocess.run(["dpkg-deb", "--fsys-tarfile", deb()], capture_output=True, check=True).stdout)


def package_files():
    with tarfile.open(fileobj=_tar_bytes()) as t:
        return {m.name.lstrip("."): m for m in t.getmembers() if not m.isdir()}


def read_member(path):
    with tarfile.open(fileobj=_tar_bytes()) as t:
        return t.extractfile("." + path).read()


def test_name_version_and_arch():
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    check(os.path.basename(deb()) == f"ddp-launch_{VERSION}_{arch}.deb", f"unexpected file name {deb()}")
    check(deb_field(deb(), "Package") == "ddp-launch", "Package is not ddp-launch")
    check(deb_field(deb(), "Version") == VERSION, f"Version {deb_field(deb(), 'Version')} is not {VERSION}")
    check(deb_field(deb(), "Architecture") == arch, f"Architecture is not {arch}")


def test_packaged_binary_says_the_version():
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "ddp-launch")
        with open(exe, "wb") as f:
            f.write(read_member("/usr/bin/ddp-launch"))
        os.chmod(exe, 0o755)
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    check(out == f"ddp-launch {VERSION}", f"the packaged ddp-launch --version printed {out!r}")


def test_depends_are_shared_libraries_from_shlibdeps():
    depends = [d.strip() for d in deb_field(deb(), "Depends").split(",")]
    names = [re.split(r"[ (]", d)[0] for d in depends]
    check("libc6" in names, f"Depends has no libc6, so it did not come from dpkg-shlibdeps: {depends}")
    check(all(re.match(r"^lib[a-z0-9.+-]+$", n) and not n.endswith("-dev") for n in names),
          f"Depends names something other than runtime libraries: {depends}")
    # The same list dpkg-shlibdeps computes for the packaged binary (it wants a debian/control).
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "debian"))
        with open(os.path.join(d, "debian/control"), "w") as f:
            f.write("Source: ddp-launch\n\nPackage: ddp-launch\nArchitecture: any\n")
        with open(os.path.join(d, "ddp-launch"), "wb") as f:
            f.write(read_member("/usr/bin/ddp-launch"))
        p = subprocess.run(["dpkg-shlibdeps", "-O", "-eddp-launch"], cwd=d, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"dpkg-shlibdeps failed: {p.stderr[-2000:]}")
    computed = sorted(x.strip() for x in p.stdout.strip().split("=", 1)[1].split(","))
    check(sorted(depends) == computed, f"Depends {depends} is not dpkg-shlibdeps' {computed}")
    check("python3-torch" in deb_field(deb(), "Suggests"), "python3-torch is not suggested")
    check(not deb_field(deb(), "Recommends"), "the package recommends something: apt would install it by default")


def test_contents_are_the_binary_units_docs_and_nothing_else():
    files = package_files()
    expected_fixed = {"/usr/bin/ddp-launch", "/usr/lib/systemd/user/ddp-launch.service",
                      "/usr/lib/systemd/system/ddp-launch@.service", "/usr/share/bash-completion/completions/ddp-launch",
                      "/usr/share/doc/ddp-launch/copyright", "/usr/share/doc/ddp-launch/changelog.gz",
                      "/usr/share/doc/ddp-launch/README.md"}
    check(expected_fixed <= set(files), f"missing: {sorted(expected_fixed - set(files))}")
    others = [f for f in files if f not in expected_fixed and not re.match(
        r"^/usr/share/(man/man1/ddp-launch(-[a-z]+)?\.1\.gz|doc/ddp-launch/docs/[A-Za-z_.-]+\.(md|json)"
        r"|doc/ddp-launch/docs/images/[A-Za-z_.-]+\.png)$", f)]
    check(not others, f"unexpected files in the package: {others}")
    check(files["/usr/bin/ddp-launch"].mode & 0o777 == 0o755, "the binary is not mode 0755")
    check(all(m.uname == "root" and m.gname == "root" for m in files.values()), "files not owned by root:root")
    file_type = subprocess.run(["file", "-"], input=read_member("/usr/bin/ddp-launch"), capture_output=True).stdout
    check(b"stripped" in file_type and b"not stripped" not in file_type, f"the binary is not stripped: {file_type}")


def test_unit_files_start_the_installed_binary():
    for unit in ["/usr/lib/systemd/user/ddp-launch.service", "/usr/lib/systemd/system/ddp-launch@.service"]:
        text = read_member(unit).decode()
        starts = re.findall(r"^ExecStart=(\S+) daemon\b", text, re.M)
        check(starts == ["/usr/bin/ddp-launch"], f"{unit}: ExecStart is {starts}, expected /usr/bin/ddp-launch daemon")
        check(re.search(r"^KillMode=process$", text, re.M), f"{unit}: jobs must outlive a daemon restart (KillMode)")


def test_a_man_page_for_every_command():
    files = package_files()
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "ddp-launch")
        with open(exe, "wb") as f:
            f.write(read_member("/usr/bin/ddp-launch"))
        os.chmod(exe, 0o755)
        help_text = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30).stdout
    commands = re.findall(r"^  ([a-z][a-z0-9-]*)\s", help_text.split("Subcommands:")[1], re.M)
    check(len(commands) >= 10, f"--help lists only {commands}")
    missing = [c for c in commands if f"/usr/share/man/man1/ddp-launch-{c}.1.gz" not in files]
    check(not missing, f"no man page for: {missing}")


def test_lintian_finds_no_error_or_warning():
    p = subprocess.run(["lintian", "--tag-display-limit", "0", "--fail-on", "error,warning", deb()],
                       capture_output=True, text=True, timeout=300)
    tags = [line for line in p.stdout.splitlines() if re.match(r"^[EW]: ", line)]
    check(p.returncode == 0 and not tags, f"lintian (exit {p.returncode}): {tags or p.stderr[-2000:]}")
    infos = [line for line in p.stdout.splitlines() if line.startswith(("I:", "P:"))]
    if infos:
        print(f"# lintian info: {infos}", flush=True)


if __name__ == "__main__":
    run_tests([test_name_version_and_arch, test_packaged_binary_says_the_version,
               test_depends_are_shared_libraries_from_shlibdeps, test_contents_are_the_binary_units_docs_and_nothing_else,
               test_unit_files_start_the_installed_binary, test_a_man_page_for_every_command,
               test_lintian_finds_no_error_or_warning])
