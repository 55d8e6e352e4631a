#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs the main job.
# For now the job is: our rendezvous store, and two real torch processes that meet through it
# with init_process_group("gloo", init_method="env://") and all_reduce a tensor.
set -euo pipefail
cd "$(dirname "$0")/.."
./packaging/install-deps.sh >/dev/null
./packaging/build.sh >/dev/null
exec /usr/bin/python3 examples/store_allreduce_demo.py --ddp-launch build/bin/ddp-launch --ranks 2
