"""ddp-launch.exe is one self-contained file: the DLLs it imports (objdump -p's "DLL Name") are all
Windows system DLLs, so no libstdc++-6.dll, libwinpthread-1.dll, yaml-cpp, SQLite or RE2 DLL has to
sit beside it. A system DLL is one that Wine ships as part of its Windows (its x86_64-windows
folder) or an API set (api-ms-win-*); the mingw runtime's DLLs are named as such when they appear."""
import glob
import os
import re
import subprocess

from harness import check, run_tests
from wine import EXE, require_exe

OBJDUMP = os.environ.get("DDP_MINGW_OBJDUMP", "x86_64-w64-mingw32-objdump")
# Debian's libwine: the Windows side of Wine's builtin DLLs.
WINE_SYSTEM_DIRS = [os.environ.get("DDP_WINE_SYSTEM_DLLS", "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows")]
MINGW_RUNTIME = re.compile(r"^(libstdc\+\+|libgcc_s|libwinpthread|libyaml-cpp|libsqlite3|libre2|zlib)", re.I)


def imported_dlls(path):
    r = subprocess.run([OBJDUMP, "-p", path], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"{OBJDUMP} -p {path}: exit {r.returncode}: {r.stderr}")
    return sorted({m.group(1) for m in re.finditer(r"DLL Name: (\S+)", r.stdout)})


def system_dlls():
    names = set()
    for d in WINE_SYSTEM_DIRS:
        names |= {os.path.basename(p).lower() for p in glob.glob(os.path.join(d, "*.dll"))}
    check(len(names) > 100, f"Wine's system DLLs not found in {WINE_SYSTEM_DIRS} (Debian's wine64 package)")
    return names


def test_ddp_launch_exe_imports_only_windows_system_dlls():
    require_exe()
    dlls = imported_dlls(EXE)
    check("KERNEL32.dll".lower() in {d.lower() for d in dlls}, f"objdump found no imports: {dlls}")
    system = system_dlls()
    runtime = [d for d in dlls if MINGW_RUNTIME.match(d)]
    check(not runtime, f"{EXE} needs the DLLs {runtime} beside it: link them statically (-static, "
          "cmake/windows-deps.cmake's static libraries)")
    foreign = [d for d in dlls if d.lower() not in system and not d.lower().startswith("api-ms-win-")]
    check(not foreign, f"{EXE} imports DLLs that are not part of Windows: {foreign} (all: {dlls})")


run_tests([test_ddp_launch_exe_imports_only_windows_system_dlls])
