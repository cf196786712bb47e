#!/usr/bin/env bash
# Set up .venv (scripts/setup.sh), then run every check: ruff, mypy (strict), the import contracts
# (lint-imports), and pytest, including
# the end-to-end tests (tests/e2e/) on a throwaway local Slurm cluster (tests/slurm/cluster.sh, needs root and
# Debian's slurm packages, which it installs). The cluster is stopped again on exit, also on failure.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k hostlist`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh

if ! command -v shellcheck >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "orch test: installing shellcheck from Debian"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null
fi

# MNIST for the accuracy test: $ORCH_DATA_DIR, else the shared copy beside the repo when present.
if [ -z "${ORCH_DATA_DIR:-}" ] && [ -d "$root/../shared/data/MNIST/raw" ]; then
  ORCH_DATA_DIR="$(cd "$root/../shared/data" && pwd)"
  export ORCH_DATA_DIR
fi

echo "orch test: ruff"
.venv/bin/ruff check orchestrator jobs tests bench
echo "orch test: mypy --strict"
.venv/bin/mypy
echo "orch test: lint-imports (the layer contracts in pyproject.toml)"
PYTHONPATH=tests/architecture .venv/bin/lint-imports --no-cache --no-logo

if [ "$(id -u)" = 0 ] && [ "${ORCH_SKIP_SLURM:-0}" != 1 ]; then
  echo "orch test: starting the local Slurm test cluster"
  trap 'bash tests/slurm/cluster.sh down >/dev/null 2>&1 || true' EXIT
  eval "$(bash tests/slurm/cluster.sh up)"
else
  echo "orch test: not root (or ORCH_SKIP_SLURM=1): the real-Slurm tests will be skipped"
fi

echo "orch test: pytest"
.venv/bin/python -m pytest "$@"
