#!/bin/bash
# make-root.sh NAME [--force|--check] -- build the cached Debian chroot NAME (roots.sh lists
# them): torch-2.6 and torch-2.14, where the torch2x integration tests run real torch 2.x clients
# and servers; debian-12 and debian-12-torch, where the .deb test installs the package.
#
# The roots live in $CHROOT_CACHE/NAME (default /var/cache/ddp-launch/chroots) so a machine
# builds each one once (2-3 minutes, 0.3-1.4 GB). A root counts as built when its stamp file
# records the same configuration (and, for a torch root, torch still imports there); then this
# is a few-second no-op.
# A build goes into NAME.partial and is renamed at the end, so an interrupted build never
# leaves a tree that looks finished.
#
#   --force   rebuild even when built      --check   exit 0 if built, 1 if not; change nothing
# Environment: DDP_CHROOT_MIRROR (default http://deb.debian.org/debian).
# Needs root and the Debian mirror.
set -euo pipefail
# Parsed whole before it runs, so editing or updating this file mid-build cannot derail it.
{

HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
. "$HERE/roots.sh"

NAME=${1:-}
SUITE=$(suite_of "$NAME")
[ -n "$SUITE" ] || { echo "usage: $0 {$(echo "$KNOWN_ROOTS" | tr ' ' '|')} [--force|--check]" >&2; exit 2; }
shift
FORCE=0; CHECK=0
for a in "$@"; do
    case "$a" in
        --force) FORCE=1 ;;
        --check) CHECK=1 ;;
        *) echo "make-root.sh: unknown option '$a' (use --force or --check)" >&2; exit 2 ;;
    esac
done

MIRROR=${DDP_CHROOT_MIRROR:-http://deb.debian.org/debian}
ROOT=$CHROOT_CACHE/$NAME
PART=$ROOT.partial
STAMP=.ddp-chroot-stamp
PKGS=$(packages_of "$NAME")
KEEP_LISTS=$(keeps_apt_lists "$NAME")
HAS_TORCH=0
case " $PKGS " in *" python3-torch "*) HAS_TORCH=1 ;; esac
CONFIG="suite=$SUITE mirror=$MIRROR pkgs=$PKGS"
[ "$KEEP_LISTS" = 1 ] && CONFIG="$CONFIG lists=kept+updates+security"
RUN="$HERE/run-in-root.sh"

log() { printf '[make-root %s %(%H:%M:%S)T] %s\n' "$NAME" -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap and chroot need it)"
mkdir -p "$CHROOT_CACHE"
command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap (packaging/install-deps.sh installs it)"

# The stamp is written only after torch imported with gloo in the finished tree, so a matching
# stamp plus torch's files still there is proof enough for the no-op path; importing torch again
# would cost seconds per call (more on a busy machine). --check does import it.
built() {  # $1 = root dir
    [ -f "$1/$STAMP" ] && grep -qxF "config: $CONFIG" "$1/$STAMP" && [ -x "$1/usr/bin/apt-get" ] &&
        { [ "$HAS_TORCH" = 0 ] ||
          { [ -x "$1/usr/bin/python3" ] && [ -f "$1/usr/lib/python3/dist-packages/torch/__init__.py" ]; }; }
}
imports_torch() {  # $1 = root dir
    [ "$HAS_TORCH" = 0 ] && return 0
    DDP_CHROOT_DIR="$1" "$RUN" "$NAME" -- python3 -c \
        'import torch.distributed as d; assert d.is_gloo_available()' >/dev/null 2>&1
}

# Never delete through a live mount (a bind of the project dir would be deleted with it).
remove_tree() {  # $1 = dir
    [ -e "$1" ] || return 0
    if awk -v p="$1/" 'index($2, p) == 1 {f=1} END {exit !f}' /proc/mounts; then
        die "something is mounted under $1; unmount it before rebuilding"
    fi
    rm -rf --one-file-system "$1"
}

# Two concurrent callers (prepare.sh and a test run, two helpers) must not build the same root twice.
exec 8>"$CHROOT_CACHE/.$NAME.lock"
if ! flock -n 8; then log "another build of $ROOT is under way; waiting for it"; flock 8; fi

if [ "$CHECK" = 1 ]; then
    if built "$ROOT" && imports_torch "$ROOT"; then exit 0; fi
    exit 1
fi
if [ "$FORCE" = 0 ] && built "$ROOT"; then
    log "already built ($(sed -n '2p' "$ROOT/$STAMP")); nothing to do"
    exit 0
fi

T0=$(date +%s)
remove_tree "$PART"
mkdir -p "$PART"
log "debootstrap --variant=minbase $SUITE (log: $PART.debootstrap.log)"
debootstrap --variant=minbase "$SUITE" "$PART" "$MIRROR" >"$PART.debootstrap.log" 2>&1 \
    || { tail -20 "$PART.debootstrap.log" >&2; die "debootstrap $SUITE failed; see $PART.debootstrap.log (is $MIRROR reachable?)"; }
mv "$PART.debootstrap.log" "$PART/root/debootstrap.log"
T1=$(date +%s)

# gloo resolves the host name; without the host's files it warns and falls back to loopback.
cp -L /etc/resolv.conf /etc/hosts "$PART/etc/"
[ -f /etc/hostname ] && cp -L /etc/hostname "$PART/etc/hostname"
# sid's InRelease has a Valid-Until about a week ahead; a mirror copy older than the local clock
# allows makes apt (not debootstrap) refuse it as expired. Stable suites carry no such date.
if [ "$SUITE" = sid ]; then
    echo 'Acquire::Check-Valid-Until "false";' >"$PART/etc/apt/apt.conf.d/99no-check-valid-until"
fi
# A Debian 12 as installed: its point-release updates and security fixes too.
if [ "$KEEP_LISTS" = 1 ]; then
    {
        echo "deb $MIRROR $SUITE main"
        echo "deb $MIRROR $SUITE-updates main"
        echo "deb ${MIRROR%/debian}/debian-security $SUITE-security main"
    } >"$PART/etc/apt/sources.list"
fi
# Maintainer scripts must not start daemons in the chroot.
printf '#!/bin/sh\nexit 101\n' >"$PART/usr/sbin/policy-rc.d"
chmod 755 "$PART/usr/sbin/policy-rc.d"

log "apt-get install $PKGS (log: $PART/root/apt-install.log)"
DDP_CHROOT_DIR="$PART" "$RUN" "$NAME" -- /bin/sh -c '
    set -e
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends '"$PKGS"'
    apt-get clean
    if [ '"$KEEP_LISTS"' = 0 ]; then rm -rf /var/lib/apt/lists/*_Packages /var/lib/apt/lists/*_Translation-*; fi
' >"$PART/root/apt-install.log" 2>&1 \
    || { tail -20 "$PART/root/apt-install.log" >&2; die "installing $PKGS in $SUITE failed; see $PART/root/apt-install.log"; }
T2=$(date +%s)

# Debian builds torch without libuv while torch >= 2.4 defaults to it; see the shim's docstring.
mkdir -p "$PART/opt/ddp-shims/nolibuv"
cp "$HERE/shim/nolibuv/sitecustomize.py" "$PART/opt/ddp-shims/nolibuv/"

if [ "$HAS_TORCH" = 1 ]; then
    VER=$(DDP_CHROOT_DIR="$PART" "$RUN" "$NAME" -- python3 -c '
import sys, torch, torch.distributed as d
assert d.is_gloo_available(), "torch has no gloo"
print(torch.__version__, "python", sys.version.split()[0])') \
        || die "torch does not import in the new $SUITE root"
    WHAT="torch: $VER"
else
    VER="debian $(cat "$PART/etc/debian_version")"
    WHAT="debian: $(cat "$PART/etc/debian_version")"
fi
{
    echo "config: $CONFIG"
    echo "$WHAT"
    echo "built: $(date -u +%FT%TZ)"
} >"$PART/$STAMP"

remove_tree "$ROOT"
mv "$PART" "$ROOT"
log "built in $(( $(date +%s) - T0 ))s (debootstrap $((T1-T0))s, apt $((T2-T1))s): $ROOT, $(du -sh --one-file-system "$ROOT" | cut -f1), $VER"
exit
}
