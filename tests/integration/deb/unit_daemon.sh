#!/bin/bash
# unit_daemon.sh UNIT_FILE ACCOUNT [INSTANCE [COMMAND]] -- run inside a Debian root with ddp-launch
# installed and no systemd running: starts the daemon the way systemd would start UNIT_FILE
# (its ExecStart with the specifiers expanded, as ACCOUNT, StateDirectory= and
# RuntimeDirectory= made and owned by ACCOUNT, $XDG_RUNTIME_DIR for a user unit), then, as
# ACCOUNT, submits a 2-rank job the way the unit's comments document it (COMMAND, a YAML argv list;
# by default a shell line that prints its rank and user), follows it to its end and
# prints: the job's state, what each rank printed, where the state went. Exit 0 when all of it
# happened; the caller judges the lines.
set -euo pipefail
UNIT=$1 ACCOUNT=$2 INSTANCE=${3:-}
COMMAND=${4:-"[/bin/sh, -c, 'echo \"rank \$RANK of \$WORLD_SIZE as \$(id -un)\"']"}
uid=$(id -u "$ACCOUNT")
gid=$(id -g "$ACCOUNT")
home=$(getent passwd "$ACCOUNT" | cut -d: -f6)
say() { echo "unit_daemon: $*"; }

# systemd's specifiers: a user manager's %S/%t are the user's, the system manager's /var/lib, /run.
if [[ $UNIT == */systemd/user/* ]]; then
    S=$home/.local/state
    t=/run/user/$uid
    install -d -m 0700 -o "$ACCOUNT" -g "$gid" "$t"
    user_env=(XDG_RUNTIME_DIR="$t")
else
    S=/var/lib
    t=/run
    user_env=()
    unit_user=$(sed -n 's/^User=//p' "$UNIT")
    [ "${unit_user//%i/$INSTANCE}" = "$ACCOUNT" ] || { say "User=$unit_user is not $ACCOUNT"; exit 1; }
fi
expand() { local s=$1; s=${s//%i/$INSTANCE}; s=${s//%S/$S}; s=${s//%t/$t}; printf '%s' "$s"; }

for key in StateDirectory RuntimeDirectory; do
    value=$(sed -n "s/^$key=//p" "$UNIT")
    [ -n "$value" ] || continue
    mode=$(sed -n "s/^${key}Mode=//p" "$UNIT")
    base=$S
    [ $key = RuntimeDirectory ] && base=$t
    install -d -m "${mode:-0755}" -o "$ACCOUNT" -g "$gid" "$base/$(expand "$value")"
done

exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
env_line=$(sed -n 's/^Environment=//p' "$UNIT")
[ "$env_line" = "DDP_DAEMON_ARGS=" ] || { say "unexpected Environment=$env_line"; exit 1; }
cmd=$(expand "${exec_start//\$DDP_DAEMON_ARGS/}")  # Environment=DDP_DAEMON_ARGS= (empty)
case "$cmd" in *'$'* | *%*) say "unexpanded text left in ExecStart: $cmd"; exit 1 ;; esac
say "ExecStart: $cmd"

# DDP_TEST_SUITE: the test suite's mark, by which its last test finds a process that outlived its test.
suite_env=()
[ -n "${DDP_TEST_SUITE:-}" ] && suite_env=(DDP_TEST_SUITE="$DDP_TEST_SUITE")
# Becomes the command as ACCOUNT (setpriv and env exec too).
as_account_exec() {
    exec setpriv --reuid="$uid" --regid="$gid" --init-groups \
        env -i HOME="$home" USER="$ACCOUNT" LOGNAME="$ACCOUNT" PATH=/usr/bin:/bin LANG=C.UTF-8 \
        "${suite_env[@]}" "${user_env[@]}" "$@"
}
as_account() { (as_account_exec "$@"); }

out=$(mktemp /tmp/daemon.XXXXXX.log)
chmod 644 "$out"
# The background job execs: its pid ($!) is the daemon itself. It used to be a subshell running
# the command as its child: the TERM below ended that shell, and the daemon lived on, re-parented
# to init, after every run.
# shellcheck disable=SC2086  # ExecStart's words, split as systemd splits them (no quotes in it)
as_account_exec $cmd >"$out" 2>&1 &
daemon=$!
# TERM, then KILL when it has not ended within 10 s: the daemon never outlives this script.
stop_daemon() {
    kill -TERM "$daemon" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
}
trap stop_daemon EXIT
for _ in $(seq 200); do
    grep -q '^listening unix=' "$out" && break
    kill -0 "$daemon" 2>/dev/null || { say "the daemon exited:"; cat "$out"; exit 1; }
    sleep 0.1
done
grep '^listening unix=' "$out" || { say "no 'listening' line from the daemon in 20 s:"; cat "$out"; exit 1; }

socket_flag=()
[ -n "$INSTANCE" ] && socket_flag=(--socket "/run/ddp-launch/$INSTANCE/daemon.sock")  # as the unit's comment says
job=$(mktemp /tmp/job.XXXXXX.yaml)
chmod 644 "$job"
cat >"$job" <<YAML
name: deb-smoke
command: $COMMAND
resources: {nproc_per_node: 2}
YAML
id=$(as_account ddp-launch submit "$job" "${socket_flag[@]}")
say "submitted job $id"
timeout 60 setpriv --reuid="$uid" --regid="$gid" --init-groups env -i HOME="$home" PATH=/usr/bin:/bin \
    "${user_env[@]}" ddp-launch logs "$id" -f "${socket_flag[@]}" >/dev/null ||
    { say "logs -f did not end within 60 s"; cat "$out"; exit 1; }
as_account ddp-launch status "$id" "${socket_flag[@]}" | sed 's/^/status: /'
for rank in 0 1; do as_account ddp-launch logs "$id" --rank $rank "${socket_flag[@]}" | sed 's/^/output: /'; done
state_dir=$(sed -n 's/.*state in \([^ ]*\).*/\1/p' "$out" | head -1)
say "state dir: $state_dir owned by $(stat -c %U "$state_dir")"
