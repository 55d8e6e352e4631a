#!/bin/bash
# run-in-root.sh NAME [--bind DIR]... [--overlay DIR] [--pid-namespace] -- CMD [ARG...] -- run CMD
# inside the cached chroot NAME (one of roots.sh's, built by make-root.sh) with the host's network.
#
# --overlay DIR: the root is the read-only lower layer of an overlay whose changes go to
# DIR/upper, so CMD may install packages without touching the cached root; the next run with the
# same DIR sees them (one run at a time per DIR). Removing DIR discards them.
#
# /proc, /sys, /dev, /dev/pts, a private /dev/shm and each --bind DIR (at the same path) are
# mounted in a private mount namespace: the host never sees them, they vanish with the command
# (SIGKILL included), and any number of runs can overlap (a server and its clients). The
# network is shared, so 127.0.0.1 and every port are the host's.
#
# The environment is cleared; what torch.distributed and the tests read passes through
# (MASTER_*, RANK, WORLD_SIZE, LOCAL_*, GROUP_RANK, ROLE_*, TORCH*, USE_LIBUV, GLOO_*,
# OMP_NUM_THREADS, PYTHON*, DDP_*), plus the names listed in DDP_CHROOT_ENV. CMD runs in the
# caller's cwd when that path exists inside (e.g. bound), otherwise in /. unshare and chroot
# exec, so the caller's child pid is CMD itself: signals and the exit status pass straight through.
#
# --pid-namespace: CMD runs as the init (pid 1) of a new pid namespace, so that nothing it starts
# outlives it: when CMD ends, or the caller is killed (SIGKILL included: unshare --kill-child),
# the kernel ends every process left inside (a daemon a test started and did not stop). The
# caller's child is then unshare, which waits for CMD and passes its exit status on, but not
# signals (use it where the caller only waits, or kills).
set -u

HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
. "$HERE/roots.sh"

NAME=${1:-}
if [ -z "$(suite_of "$NAME")" ]; then
    echo "usage: $0 {$(echo "$KNOWN_ROOTS" | tr ' ' '|')} [--bind DIR]... [--overlay DIR] -- CMD [ARG...]" >&2
    exit 125
fi
shift
ROOT=${DDP_CHROOT_DIR:-$CHROOT_CACHE/$NAME}
BINDS=()
OVERLAY=""
PIDNS=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bind) [ $# -ge 2 ] || { echo "run-in-root.sh: --bind needs a directory" >&2; exit 125; }
                BINDS+=("$(readlink -f "$2")"); shift 2 ;;
        --overlay) [ $# -ge 2 ] || { echo "run-in-root.sh: --overlay needs a directory" >&2; exit 125; }
                OVERLAY=$(readlink -f "$2"); shift 2 ;;
        --pid-namespace) PIDNS=1; shift ;;
        --) shift; break ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || set -- /bin/bash

if [ "$(id -u)" != 0 ]; then
    echo "run-in-root.sh: must run as root (mount and chroot need it)" >&2; exit 125
fi
if [ ! -x "$ROOT/usr/bin/env" ]; then
    echo "run-in-root.sh: no chroot at $ROOT; build it with tests/chroot/prepare.sh" >&2; exit 125
fi

if [ -z "${_DDP_IN_MOUNT_NS:-}" ]; then
    if ! unshare --mount --propagation private true 2>/dev/null; then
        echo "run-in-root.sh: 'unshare --mount' is not permitted here; the chroot mounts need a private mount namespace" >&2
        exit 125
    fi
    BIND_ARGS=()
    for b in "${BINDS[@]}"; do BIND_ARGS+=(--bind "$b"); done
    [ -n "$OVERLAY" ] && BIND_ARGS+=(--overlay "$OVERLAY")
    NS_ARGS=(--mount --propagation private)
    [ -n "$PIDNS" ] && NS_ARGS+=(--pid --fork --kill-child)
    exec env _DDP_IN_MOUNT_NS=1 DDP_CHROOT_DIR="$ROOT" \
        unshare "${NS_ARGS[@]}" "$HERE/run-in-root.sh" "$NAME" "${BIND_ARGS[@]}" -- "$@"
fi

# Now in the private namespace: mount, then hand over to CMD.
ROOT=$(readlink -f "$ROOT")
if [ -n "$OVERLAY" ]; then
    mkdir -p "$OVERLAY/upper" "$OVERLAY/work" "$OVERLAY/merged" &&
        mount -t overlay overlay -o "lowerdir=$ROOT,upperdir=$OVERLAY/upper,workdir=$OVERLAY/work" \
            "$OVERLAY/merged" || { echo "run-in-root.sh: cannot mount the overlay in $OVERLAY" >&2; exit 125; }
    ROOT=$OVERLAY/merged
fi
mount -t proc proc "$ROOT/proc" &&
    mount -t sysfs sysfs "$ROOT/sys" &&
    mount --bind /dev "$ROOT/dev" &&
    mount --bind /dev/pts "$ROOT/dev/pts" &&
    mount -t tmpfs -o mode=1777,nosuid,nodev shm "$ROOT/dev/shm" || exit 125
for b in "${BINDS[@]}"; do
    mkdir -p "$ROOT$b" && mount --bind "$b" "$ROOT$b" || exit 125
done

ENVV=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
      LANG=C.UTF-8 TERM="${TERM:-dumb}")
while IFS='=' read -r name _; do
    case "$name" in
        _DDP_IN_MOUNT_NS|DDP_CHROOT_DIR) ;;
        MASTER_*|WORLD_SIZE|RANK|LOCAL_RANK|LOCAL_WORLD_SIZE|GROUP_RANK|ROLE_*|TORCH*|\
        USE_LIBUV|GLOO_*|OMP_NUM_THREADS|PYTHON*|DDP_*)
            ENVV+=("$name=${!name}") ;;
    esac
done < <(env)
for name in ${DDP_CHROOT_ENV:-}; do
    [ -n "${!name+x}" ] && ENVV+=("$name=${!name}")
done

if [ -d "$ROOT$PWD" ]; then WD=$PWD; else WD=/; fi
exec chroot "$ROOT" /usr/bin/env -i -C "$WD" "${ENVV[@]}" "$@"
