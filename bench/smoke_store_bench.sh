#!/usr/bin/env bash
# Smoke test for the store benchmark: our store answers a 256-rank rendezvous and a short SET/GET
# run from store_loadgen with zero connection errors. Usage: smoke_store_bench.sh DDP_LAUNCH LOADGEN
set -euo pipefail
ddp_launch=$1
loadgen=$2

coproc STORE { exec "$ddp_launch" store --port 0 2>&1; }
store_pid=$STORE_PID
trap 'kill "$store_pid" 2>/dev/null || true; wait "$store_pid" 2>/dev/null || true' EXIT

# The store prints port=<n> once it listens; a store that does not is a failure, not a hang.
port=""
while IFS= read -r -t 10 line <&"${STORE[0]}"; do
  if [[ $line == port=* ]]; then port=${line#port=}; break; fi
done
if [[ -z $port ]]; then echo "store did not print port=<n> within 10 s" >&2; exit 1; fi

timeout 10 "$loadgen" --port "$port" --timeout 8 --stall 2 rendezvous --ranks 256
timeout 10 "$loadgen" --port "$port" --timeout 5 throughput --connections 32 --duration 0.5
