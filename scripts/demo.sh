#!/usr/bin/env bash
# Set up .venv (scripts/setup.sh), then run the main job: the dry run of a 2-node x 8-GPU MNIST
# submission against ./cluster.yaml, and a short real MNIST run on this machine with 2 local ranks
# (gloo on CPU, or the local GPUs). MNIST comes from $ORCH_DATA_DIR (default: ../shared/data when
# present). Extra arguments are overrides for the local run, e.g. `bash scripts/demo.sh epochs=3`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
if [ -z "${ORCH_DATA_DIR:-}" ] && [ -d "$root/../shared/data/MNIST/raw" ]; then
  ORCH_DATA_DIR="$(cd "$root/../shared/data" && pwd)"
  export ORCH_DATA_DIR
fi
echo
echo "\$ orch submit mnist --nodes 2 --gpus 8 --dry-run"
.venv/bin/orch submit mnist --nodes 2 --gpus 8 --dry-run
echo
echo "\$ orch run mnist --nproc 2 epochs=1 $*"
.venv/bin/orch run mnist --nproc 2 epochs=1 "$@"
