# shellcheck shell=bash disable=SC2034
# Sourced by the scripts next to it: which Debian suite and packages each root carries, and where
# the built roots are cached. One place, so make-root.sh, run-in-root.sh and the tests agree.
CHROOT_CACHE=${DDP_CHROOT_CACHE:-/var/cache/ddp-launch/chroots}

# $1 = root name -> Debian suite it is built from (empty when unknown)
suite_of() {
    case "$1" in
        torch-2.6) echo trixie ;;   # stable: python3-torch 2.6.0+dfsg
        torch-2.14) echo sid ;;     # unstable: python3-torch 2.14.x+dfsg
        debian-12|debian-12-torch) echo bookworm ;;
        *) echo "" ;;
    esac
}

# $1 = root name -> the packages installed on top of debootstrap's minbase
packages_of() {
    case "$1" in
        torch-2.6|torch-2.14|debian-12-torch) echo python3-torch ;;
        debian-12) echo systemd man-db ;;  # as an installed Debian 12 has; systemd-analyze verify uses both
        *) echo "" ;;
    esac
}

# $1 = root name -> 1 when the root keeps apt's package lists and Debian 12's update and security
# suites (the .deb test installs the package with apt inside, which resolves Depends from them)
keeps_apt_lists() {
    case "$1" in
        debian-12|debian-12-torch) echo 1 ;;
        *) echo 0 ;;
    esac
}

TORCH2X_ROOTS="torch-2.6 torch-2.14"      # tests/integration/torch2x
DEB_ROOTS="debian-12 debian-12-torch"     # tests/integration/deb: a clean Debian 12; one with torch 1.13
KNOWN_ROOTS="$TORCH2X_ROOTS $DEB_ROOTS"
