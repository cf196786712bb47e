#!/usr/bin/env bash
# Set up .venv (scripts/setup.sh), then run the main job: the dry run of a 2-node x 8-GPU MNIST
# submission against ./cluster.yaml, and a short real MNIST run on this machine with 2 local ranks
# (gloo on CPU, or the local GPUs). MNIST comes from $ORCH_DATA_DIR (default: ../shared/data when
# present); where its four files are missing, `orch run mnist --download` fetches them (into
# $ORCH_DATA_DIR when set, else the per-user cache ~/.cache/orch/data). Offline (the download fails:
# exit code 75), the built-in smoke job runs instead, which needs no files, and the demo says so.
# Extra arguments are overrides for the local run, e.g. `bash scripts/demo.sh epochs=3`.
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
echo "\$ orch run mnist --nproc 2 --download epochs=1 $*"
code=0
.venv/bin/orch run mnist --nproc 2 --download epochs=1 "$@" || code=$?
if [ "$code" -ne 75 ]; then  # 75: MNIST could not be downloaded (offline); any other code is the run's
  exit "$code"
fi
echo
echo "orch demo: this machine is offline, so MNIST could not be downloaded (see the error above);"
echo "orch demo: running the built-in smoke job instead (a linear model on seeded random data, no files needed)."
echo "orch demo: for MNIST, copy its four files into \$ORCH_DATA_DIR/MNIST/raw/ (docs/writing-a-job.md#getting-the-data)."
echo
echo "\$ orch run smoke --nproc 2 epochs=1 $*"
.venv/bin/orch run smoke --nproc 2 epochs=1 "$@"
