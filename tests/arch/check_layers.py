#!/usr/bin/python3
"""The layer check: every `#include "…"` of the product must point down (or sideways) the layer order.

    platform ← common ← store ← slurm ← launcher ← jobs ← app        worker: platform, common, store only

Inside launcher/ the sub-folders are ordered too (docs/ARCHITECTURE.md):

    rendezvous ← workers ← outputs ← hang ← supervisor ← run ← commands

and the supervisor's shell entry (launcher/supervisor/supervisor.hpp, run_supervisor) sits above the
rest of supervisor/: a unit that needs the config includes supervisor_config.hpp, not the shell.

OS headers (<unistd.h>, <sys/…> but <sys/types.h>, <windows.h>, <fcntl.h>, <poll.h>, <signal.h>,
socket and resolver headers …) belong to platform/: above it, common/, store/, jobs/ and app/ include
none, and launcher/ only in a file that is Linux-only by nature and named so (`*_linux.cpp`, or in a
`linux/` folder; its Windows half is `*_windows.cpp`). slurm/ (Slurm has no Windows nodes) and
worker/ (the SDK, built with Linux libtorch) are Linux-only layers and are not checked. A breach is
reported as `file:line: OS header <h> above platform/`.

An include that points up (a lower layer reaching into a higher one) or names a file that does not
exist (a stale path, e.g. in a Windows-only half the Linux build never compiles) is reported as
`file:line: from-layer -> to-layer: "header"`, and the script exits 1. tests/ and bench/ may include
anything. Usage: check_layers.py [REPO_ROOT] [--count] (--count: print the number of upward arrows
and exit 0, for measuring).
"""
import pathlib
import re
import sys

# Layers of the product, lowest first; a path's layer is its longest matching prefix.
ORDER = [
    ["platform"],
    ["common"],
    ["store"],
    ["slurm"],
    ["launcher/rendezvous"],
    ["launcher/workers"],
    ["launcher/outputs"],
    ["launcher/hang"],
    ["launcher/supervisor"],
    # The shell's entry (run_supervisor), above the rest of its folder.
    ["launcher/supervisor/supervisor.hpp", "launcher/supervisor/supervisor.cpp"],
    ["launcher/run"],
    ["launcher/commands"],
    ["launcher"],  # a file left at the top of launcher/: as high as launcher/ goes
    ["jobs"],
    ["app"],
]
RANK = {layer: i for i, same in enumerate(ORDER) for layer in same}
# A side branch: the libtorch worker library, linked into the ranks, never into the launcher.
SIDE = {"worker": {"platform", "common", "store", "worker"}}
UNCHECKED = ("tests", "bench")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
OS_HEADER = re.compile(r'^\s*#\s*include\s+<((?:unistd|fcntl|poll|spawn|signal|dirent|pwd|netdb|dlfcn|windows|winsock2|'
                       r'ws2tcpip|tlhelp32|psapi)\.h|sys/(?!types\.h)[^>]+|netinet/[^>]+|arpa/[^>]+)>')
OS_FREE = ("common", "store", "jobs", "app", "launcher")  # top-level layers that must be free of OS headers
SOURCES = ("*.cpp", "*.hpp", "*.h")


def layer_of(path: str):
    best = None
    for layer in list(RANK) + list(SIDE):
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(best):
                best = layer
    return best


def top(layer: str) -> str:
    return layer.split("/")[0]


def allowed(src: str, dst: str) -> bool:
    if src in SIDE:
        return top(dst) in SIDE[src]
    if dst in SIDE:
        return False
    if top(src) == "launcher" and top(dst) == "launcher":
        return RANK[dst] <= RANK[src]
    return RANK[dst] <= RANK[src] or top(dst) == top(src)


def main(argv):
    root = pathlib.Path(next((a for a in argv[1:] if not a.startswith("--")), ".")).resolve()
    count_only = "--count" in argv
    problems, upward = [], 0
    for pattern in SOURCES:
        for file in sorted(root.rglob(pattern)):
            rel = file.relative_to(root).as_posix()
            if rel.startswith(UNCHECKED) or rel.startswith("build") or "/." in "/" + rel:
                continue
            src = layer_of(rel)
            if src is None:
                continue
            linux_only = rel.endswith("_linux.cpp") or "/linux/" in rel
            for n, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
                os_header = OS_HEADER.match(line)
                if os_header and top(src) in OS_FREE and not (top(src) == "launcher" and linux_only):
                    problems.append(f"{rel}:{n}: OS header <{os_header.group(1)}> above platform/ (move the call into "
                                    f"a platform/ concept, or name a Linux-only launcher file *_linux.cpp)")
                    continue
                m = INCLUDE.match(line)
                if not m:
                    continue
                header = m.group(1)
                dst = layer_of(header)
                if dst is None:
                    continue  # a sibling or third-party header ("doctest.h", "detail.hpp")
                if not (root / header).exists():
                    problems.append(f"{rel}:{n}: includes a file that does not exist: \"{header}\"")
                elif not allowed(src, dst):
                    upward += 1
                    problems.append(f"{rel}:{n}: {src} -> {dst}: \"{header}\" runs against the layer order")
    if count_only:
        for p in problems:
            print(p)
        print(f"upward arrows: {upward}")
        return 0
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} include(s) against the layers or the OS rule (tests/arch/check_layers.py has both)",
              file=sys.stderr)
        return 1
    print("layers: every include points down the order; no OS header above platform/ but in *_linux.cpp")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
