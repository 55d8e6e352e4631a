"""The Windows release files under Wine (packaging/build-windows-installer.sh): the NSIS installer
runs silently (/S, /D=), `ddp-launch.exe --version` runs from the install directory, the machine
PATH gains exactly the install directory (read back with `reg query`), the silent uninstaller
removes the files, the Apps & features entry and exactly that PATH entry; a PATH too long for
NSIS's strings is left byte for byte as it was; /SERVICE=1 registers the service with Wine's
service manager and the uninstaller deletes it. The .exe is statically linked (system DLLs only),
the ZIP holds the same files, and the winget/Scoop manifests name its version and SHA256.

Each test leaves the prefix's PATH as it found it (the other windows tests share the prefix)."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import zipfile

import yaml

from harness import TestFailure, check, run_tests
from wine import WineKeptUp, run_wine_command

BUILD = os.environ.get("DDP_WINDOWS_BUILD_DIR", "build-windows")
PREFIX = os.environ["WINEPREFIX"]
ENV_KEY = r"HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment"
UNINST_KEY = r"HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\ddp-launch"
SERVICE_KEY = r"HKLM\SYSTEM\CurrentControlSet\Services\ddp-launch"
# What a statically linked ddp-launch.exe may import: Windows' own DLLs, nothing shipped beside it.
SYSTEM_DLLS = {"advapi32.dll", "bcrypt.dll", "iphlpapi.dll", "kernel32.dll", "msvcrt.dll", "mswsock.dll",
               "ntdll.dll", "rstrtmgr.dll", "shell32.dll", "ws2_32.dll", "user32.dll", "ole32.dll"}


def version():
    with open(os.path.join(BUILD, "packaging", "version.txt"), encoding="utf-8") as f:
        return f.read().strip()


def artifact(name):
    path = os.path.join(BUILD, name)
    if not os.path.isfile(path):
        raise TestFailure(f"{path} is missing: make it with ./packaging/build-windows-installer.sh")
    return path


def setup_exe():
    return artifact(f"ddp-launch-{version()}-setup.exe")


def wine(*args, timeout=120):
    return run_wine_command(*args, timeout=timeout)


def linux_path(windows_dir):
    """C:\\a\\b in the prefix → its Linux path."""
    check(windows_dir[:3].upper() == "C:\\", windows_dir)
    return os.path.join(PREFIX, "drive_c", *windows_dir[3:].split("\\"))


def reg_value(key, name):
    """(type, data) of a registry value, or None (`reg query`'s output: NAME    TYPE    DATA)."""
    r = wine("reg", "query", key, "/v", name)
    if r.returncode != 0:
        return None
    for line in r.stdout.replace("\r", "").splitlines():
        m = re.match(r"^\s+(\S+)\s+(REG_\w+)\s+(.*)$", line)
        if m and m.group(1).lower() == name.lower():
            return m.group(2), m.group(3)
    raise TestFailure(f"reg query {key} /v {name}: no value line in {r.stdout!r}")


def machine_path():
    return reg_value(ENV_KEY, "Path")


def set_machine_path(value):
    r = wine("reg", "add", ENV_KEY, "/v", "Path", "/t", "REG_EXPAND_SZ", "/d", value, "/f")
    check(r.returncode == 0, f"reg add Path: {r.stdout} {r.stderr}")
    check(machine_path() == ("REG_EXPAND_SZ", value), f"PATH not set: {machine_path()}")


class SavedPath:
    """Restores the prefix's machine PATH on leaving, whatever the test did to it."""

    def __enter__(self):
        self.saved = machine_path()
        check(self.saved is not None, "the prefix has no machine PATH")
        return self.saved[1]

    def __exit__(self, *exc):
        if machine_path() != self.saved:
            wine("reg", "add", ENV_KEY, "/v", "Path", "/t", self.saved[0], "/d", self.saved[1], "/f")


def install(*options, timeout=180):
    r = wine(setup_exe(), "/S", *options, timeout=timeout)
    check(r.returncode == 0, f"setup.exe /S {' '.join(options)}: exit {r.returncode}; {r.stderr[-2000:]}")


def uninstall(install_dir, seconds=90):
    """The silent uninstaller; it copies itself to %TEMP% and runs from there, so the command returns
    before the work is done: waits for its registry key to go (its last step)."""
    r = wine(install_dir + "\\uninstall.exe", "/S")
    check(r.returncode == 0, f"uninstall.exe /S: exit {r.returncode}; {r.stderr[-2000:]}")
    # The directory goes just before the key (RMDir, then DeleteRegKey): the file system is watched,
    # the registry (a Wine command per look) asked once it is gone.
    deadline = time.monotonic() + seconds
    while os.path.exists(linux_path(install_dir)) or reg_value(UNINST_KEY, "DisplayName") is not None:
        if time.monotonic() > deadline:
            left = os.listdir(linux_path(install_dir)) if os.path.exists(linux_path(install_dir)) else []
            raise TestFailure(f"the uninstaller did not finish within {seconds}s: {install_dir} holds {left}, "
                              f"its registry key: {reg_value(UNINST_KEY, 'DisplayName')}")
        time.sleep(0.5)


def cleanup(install_dir):
    """After a failed test: the install gone, whatever state it was left in."""
    if os.path.exists(linux_path(install_dir + "\\uninstall.exe")):
        try:
            uninstall(install_dir)
        except TestFailure:
            pass
    shutil.rmtree(linux_path(install_dir), ignore_errors=True)
    shutil.rmtree(linux_path(r"C:\ddp-pkg-test"), ignore_errors=True)
    wine("reg", "delete", UNINST_KEY, "/f")


def entries(path_value):
    return path_value.split(";")


def test_the_exe_is_statically_linked():
    exe = os.path.join(BUILD, "bin", "ddp-launch.exe")
    r = subprocess.run(["x86_64-w64-mingw32-objdump", "-p", exe], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"objdump -p {exe}: {r.stderr}")
    dlls = {m.lower() for m in re.findall(r"DLL Name: (\S+)", r.stdout)}
    check(dlls and dlls <= SYSTEM_DLLS, f"imports beyond Windows' own DLLs: {sorted(dlls - SYSTEM_DLLS)}")


def test_zip_holds_the_exe_and_the_manifests_name_its_version_and_hash():
    v = version()
    zip_path = artifact(f"ddp-launch-{v}-win64.zip")
    with zipfile.ZipFile(zip_path) as z:
        names = sorted(z.namelist())
    check(names == ["LICENSE", "README.md", "ddp-launch.exe", "windows.md"], f"ZIP holds {names}")
    with open(zip_path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    winget = os.path.join(BUILD, "manifests", "winget")
    with open(os.path.join(winget, "ddp-launch.ddp-launch.installer.yaml"), encoding="utf-8") as f:
        inst = yaml.safe_load(f)
    check(inst["PackageVersion"] == v and inst["Installers"][0]["InstallerSha256"] == digest.upper(), f"{inst}")
    check(inst["Installers"][0]["InstallerUrl"].endswith(f"/ddp-launch-{v}-win64.zip"), f"{inst}")
    with open(os.path.join(BUILD, "manifests", "scoop", "ddp-launch.json"), encoding="utf-8") as f:
        scoop = json.load(f)
    check(scoop["version"] == v and scoop["architecture"]["64bit"]["hash"] == digest, f"{scoop}")


def test_silent_install_path_entry_and_uninstall():
    install_dir = r"C:\ddp-pkg-test\launcher"
    with SavedPath() as before:
        # Another entry that merely starts with ours, an empty entry and a trailing ';' stay as they are.
        start = before + r";C:\ddp-pkg-test\launcher-other;;"
        set_machine_path(start)
        try:
            install("/D=" + install_dir)
            files = sorted(os.listdir(linux_path(install_dir)))
            check(files == ["LICENSE", "README.md", "ddp-launch.exe", "uninstall.exe", "windows.md"], f"{files}")
            check(not [f for f in files if f.lower().endswith(".dll")], f"a DLL beside the .exe: {files}")
            r = wine(install_dir + "\\ddp-launch.exe", "--version", timeout=60)
            check(r.returncode == 0 and version() in r.stdout, f"--version: exit {r.returncode}: {r.stdout} {r.stderr}")
            kind, value = machine_path()
            check(kind == "REG_EXPAND_SZ", f"PATH became {kind}")
            check(value == start + ";" + install_dir, f"PATH after install: {value!r}; before: {start!r}")
            check(reg_value(UNINST_KEY, "PathEntry") == ("REG_SZ", install_dir), "the entry is not recorded")
            check(reg_value(UNINST_KEY, "QuietUninstallString") is not None, "no Apps & features entry")
            uninstall(install_dir)
            check(not os.path.exists(linux_path(install_dir)), f"{install_dir} is still there")
            check(machine_path() == ("REG_EXPAND_SZ", start), f"PATH after uninstall: {machine_path()}")
        finally:
            cleanup(install_dir)


def test_an_entry_already_there_is_kept_and_a_too_long_path_is_left_alone():
    install_dir = r"C:\ddp-pkg-test\launcher"
    with SavedPath() as before:
        # Ours already on PATH (differently cased): not added twice, and not the uninstaller's to take.
        start = before + ";" + install_dir.upper()
        set_machine_path(start)
        try:
            install("/D=" + install_dir)
            check(machine_path()[1] == start, f"PATH after install: {machine_path()}")
            check(reg_value(UNINST_KEY, "PathEntry") is None, "an entry not added by us is recorded as ours")
            uninstall(install_dir)
            check(machine_path()[1] == start, f"the uninstaller took an entry it did not add: {machine_path()}")
            # Longer than NSIS's 1024-character strings: ReadRegStr cannot hold it, and writing back what it
            # read would wipe PATH. The installer leaves it unchanged and installs the rest.
            long_path = before + "".join(f";C:\\Tools\\some-long-tool-directory-{i:03d}\\bin" for i in range(40))
            check(len(long_path) > 1100, "the PATH is not long enough to test")
            set_machine_path(long_path)
            install("/D=" + install_dir)
            check(machine_path() == ("REG_EXPAND_SZ", long_path), f"a long PATH was changed: {machine_path()}")
            check(os.path.exists(linux_path(install_dir + "\\ddp-launch.exe")), "not installed")
            uninstall(install_dir)
            check(machine_path() == ("REG_EXPAND_SZ", long_path), f"a long PATH was changed: {machine_path()}")
        finally:
            cleanup(install_dir)


def test_default_directory_and_the_service_option():
    install_dir = r"C:\Program Files\ddp-launch"
    with SavedPath() as before:
        try:
            install("/SERVICE=1")
            check(os.path.exists(linux_path(install_dir + "\\ddp-launch.exe")), "not in Program Files")
            check(machine_path()[1] == before + ";" + install_dir, f"PATH after install: {machine_path()}")
            # Wine's sc.exe has no `qc`: the service manager's view (`sc query`) and its registry key.
            r = wine("sc", "query", "ddp-launch")
            out = r.stdout.replace("\r", "")
            check(r.returncode == 0 and "WIN32_OWN_PROCESS" in out, f"sc query ddp-launch: exit {r.returncode}: {out}")
            check(reg_value(SERVICE_KEY, "ImagePath") == ("REG_SZ", f'"{install_dir}\\ddp-launch.exe" daemon --service'),
                  f"the service runs {reg_value(SERVICE_KEY, 'ImagePath')}")
            check(reg_value(SERVICE_KEY, "Start") == ("REG_DWORD", "0x2"), "the service does not start with Windows")
            # Installed again over it (an upgrade): the service and the PATH entry stay as they are, once,
            # and still the uninstaller's to remove.
            install("/SERVICE=1")
            check(machine_path()[1] == before + ";" + install_dir, f"PATH after a second install: {machine_path()}")
            check(reg_value(UNINST_KEY, "Service") == ("REG_SZ", "ddp-launch"), "the service is no longer recorded")
            uninstall(install_dir)
            r = wine("sc", "query", "ddp-launch")
            check(r.returncode != 0, f"the service is still registered: {r.stdout}")
            check(machine_path()[1] == before, f"PATH after uninstall: {machine_path()}")
        finally:
            cleanup(install_dir)
            wine("sc", "delete", "ddp-launch")


if __name__ == "__main__":
    with WineKeptUp():
        run_tests([test_the_exe_is_statically_linked, test_zip_holds_the_exe_and_the_manifests_name_its_version_and_hash,
                   test_silent_install_path_entry_and_uninstall,
                   test_an_entry_already_there_is_kept_and_a_too_long_path_is_left_alone,
                   test_default_directory_and_the_service_option])
