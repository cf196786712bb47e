#!/usr/bin/env bash
# Create or reuse .venv in the project root and install orch with its test extras.
# Idempotent: a second run only checks. Used by scripts/demo.sh and scripts/test.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "orch setup: creating .venv with $("$py" --version)"
  "$py" -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)
# torch + torchvision first, pinned to a matching pair (override with ORCH_TORCH_SPEC).
# shellcheck disable=SC2206
torch_spec=(${ORCH_TORCH_SPEC:-torch==2.14.1 torchvision==0.29.1})
if ! .venv/bin/python -c "import torch, torchvision" >/dev/null 2>&1; then
  echo "orch setup: installing ${torch_spec[*]} (about a minute)"
  "${pip[@]}" install "${torch_spec[@]}" 2> >(grep -v "^WARNING: Location" >&2)
fi
if ! .venv/bin/python -c "import orchestrator, pytest, hypothesis, mypy, matplotlib" >/dev/null 2>&1 \
   || [ pyproject.toml -nt .venv/.orch-installed ]; then
  echo "orch setup: installing orch (editable) with test extras"
  "${pip[@]}" install -e ".[test]" 2> >(grep -v "^WARNING: Location" >&2)
  touch .venv/.orch-installed
fi
# Byte-compile orch's own modules and the built-in jobs, as pip does for a package it installs (an editable
# install leaves that to the first import). Where PYTHONDONTWRITEBYTECODE is set no process writes them, so every
# `orch` command and every rank compiled them again: about 0.2 CPU-seconds a CLI call, 0.8 a 2-rank `orch run`.
# A source edited later is compiled again in memory until the next set-up (Python checks each file's time).
.venv/bin/python -m compileall -q -j 0 orchestrator jobs
echo "orch setup: ready ($(.venv/bin/orch --version))"
