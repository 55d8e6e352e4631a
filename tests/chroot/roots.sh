# shellcheck shell=bash disable=SC2034
# Sourced by the scripts next to it: which Debian suite carries which torch, and where the
# built roots are cached. One place, so make-root.sh, run-in-root.sh and the tests agree.
CHROOT_CACHE=${DDP_CHROOT_CACHE:-/var/cache/ddp-launch/chroots}

# $1 = root name -> Debian suite whose python3-torch it carries (empty when unknown)
suite_of() {
    case "$1" in
        torch-2.6) echo trixie ;;   # stable: python3-torch 2.6.0+dfsg
        torch-2.14) echo sid ;;     # unstable: python3-torch 2.14.x+dfsg
        *) echo "" ;;
    esac
}
KNOWN_ROOTS="torch-2.6 torch-2.14"
