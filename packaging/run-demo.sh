#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the main job.
# For now the job is: `ddp-launch run` hosting the rendezvous store and two real torch (gloo, CPU)
# workers that meet through it with init_process_group(init_method="env://") and all_reduce.
set -euo pipefail
cd "$(dirname "$0")/.."
./packaging/install-deps.sh >/dev/null
./packaging/build.sh >/dev/null
events=$(mktemp /tmp/ddp-launch-demo.XXXXXX.jsonl)
set -x
build/bin/ddp-launch run --nproc-per-node 2 --python /usr/bin/python3 --events "$events" examples/allreduce.py
{ set +x; } 2>/dev/null
echo "demo: OK — event stream in $events"
