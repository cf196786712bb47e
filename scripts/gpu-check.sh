#!/usr/bin/env bash
# The GPU checks in one command (docs/testing.md, "GPU checks"): `bash scripts/gpu-check.sh [TEST ...]`; TEST (a file
# or node id under tests/gpu) runs only those checks again, e.g. `bash scripts/gpu-check.sh tests/gpu/test_gpu_restarts.py`.
#
# Sets up .venv (scripts/setup.sh, idempotent; skipped for a .venv that scripts/offline-venv.sh made), prints what the figures were taken on (date, commit,
# nvidia-smi -L, torch/CUDA/NCCL versions), runs the `gpu` tests of tests/gpu with pytest (one rank per
# visible GPU; under 5 minutes on one GPU), then a Markdown table: check | result | figure | seconds, to
# paste into docs/benchmarks.md with the header above it.
#
# Exit status: 0 every check passed or was skipped with its reason printed, and also when this machine
# has no CUDA device ("no CUDA device: nothing to check"); 1 a check failed, or pytest ran past its time,
# or no check reported; 2 the setup failed and .venv cannot import orch, torch and pytest.
#
# Environment: ORCH_DATA_DIR (MNIST; default ../shared/data beside the checkout when present),
# ORCH_GPU_CHECK_TIMEOUT (seconds for the whole pytest run, default 270), ORCH_GPU_CPU_DRYRUN=1 (no GPU:
# run the same tests on CPU ranks to check the harness itself; its figures are not GPU figures).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2
py=.venv/bin/python

if [ -f .venv/.orch-offline ]; then
  echo "orch gpu-check: .venv was made by scripts/offline-venv.sh (no package index here): setup skipped"
elif ! bash scripts/setup.sh; then
  # a machine without network may fail to reinstall what is there: go on when .venv works as it is
  if "$py" -c 'import orchestrator, torch, pytest' >/dev/null 2>&1; then
    echo "orch gpu-check: scripts/setup.sh failed, but .venv imports orch, torch and pytest: going on" >&2
  else
    echo "orch gpu-check: scripts/setup.sh failed" >&2
    exit 2
  fi
fi

echo
echo "== orch GPU checks"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
  commit="$commit (with uncommitted changes)"
fi
echo "commit:  $commit"
echo "host:    $(hostname)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L || true
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/driver:  /'
else
  echo "nvidia-smi: not found"
fi
"$py" - <<'EOF'
import importlib.metadata as md

import torch

try:
    raw = torch.cuda.nccl.version()
    nccl = ".".join(map(str, raw)) if isinstance(raw, tuple) else str(raw)
except Exception as exc:  # a build without NCCL
    nccl = f"n/a ({type(exc).__name__})"
print(f"torch:   {torch.__version__} | CUDA {torch.version.cuda} | NCCL {nccl} | cuDNN {torch.backends.cudnn.version()}"
      f" | CUDA available: {torch.cuda.is_available()}, {torch.cuda.device_count()} device(s)")
found = []
for name in ("lightning", "pytorch-lightning", "accelerate"):
    try:
        found.append(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        pass
print("frameworks: " + (", ".join(found) or "none installed (the framework checks skip)"))
EOF

dryrun=0
if ! "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  if [ "${ORCH_GPU_CPU_DRYRUN:-0}" != 1 ]; then
    echo
    echo "no CUDA device: nothing to check (exit 0; ORCH_GPU_CPU_DRYRUN=1 runs the harness on CPU ranks)"
    exit 0
  fi
  dryrun=1
  echo
  echo "CPU DRY RUN (ORCH_GPU_CPU_DRYRUN=1): the harness on CPU ranks; no figure below is a GPU figure"
fi

# MNIST: $ORCH_DATA_DIR, else the shared copy beside the checkout (as scripts/test.sh).
if [ -z "${ORCH_DATA_DIR:-}" ] && [ -d "$root/../shared/data/MNIST/raw" ]; then
  ORCH_DATA_DIR="$(cd "$root/../shared/data" && pwd)"
  export ORCH_DATA_DIR
fi

report="$(mktemp -t orch-gpu-check.XXXXXX)"
limit="${ORCH_GPU_CHECK_TIMEOUT:-270}"
echo
checks=("$@")
[ "${#checks[@]}" -gt 0 ] || checks=(tests/gpu)
echo "== pytest ${checks[*]} -m gpu (at most ${limit} s)"
started=$SECONDS
ORCH_GPU_REPORT="$report" timeout -k 15 "$limit" \
  "$py" -m pytest "${checks[@]}" -m gpu -q -rs -p no:cacheprovider --timeout 240
pytest_rc=$?
took=$((SECONDS - started))
if [ "$pytest_rc" = 124 ] || [ "$pytest_rc" = 137 ]; then
  echo "orch gpu-check: pytest ran past ${limit} s and was stopped; the table shows the checks that finished"
fi

echo
echo "== results (${took} s; rows: $report)"
"$py" tests/gpu/gpu_report.py "$report"
table_rc=$?
if [ "$dryrun" = 1 ]; then
  echo "(CPU dry run: figures are CPU figures)"
fi
if [ "$pytest_rc" = 0 ] && [ "$table_rc" = 0 ]; then
  echo "GPU checks: passed"
  exit 0
fi
echo "GPU checks: FAILED (pytest exit $pytest_rc)"
exit 1
