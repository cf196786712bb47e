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
# pip installs without byte-compiling (--no-compile): the packages are compiled after, on every core at once
# (compileall -j 0), where pip compiles file by file on one: on 2 cores a fresh set-up took 166 s with pip's compile,
# 147 s this way.
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)
installed=0
# torch + torchvision first, pinned to a matching pair (override with ORCH_TORCH_SPEC).
# shellcheck disable=SC2206
torch_spec=(${ORCH_TORCH_SPEC:-torch==2.14.1 torchvision==0.29.1})
if ! .venv/bin/python -c "import torch, torchvision" >/dev/null 2>&1; then
  echo "orch setup: installing ${torch_spec[*]} (about a minute)"
  "${pip[@]}" install --no-compile "${torch_spec[@]}" 2> >(grep -v "^WARNING: Location" >&2)
  installed=1
fi
if ! .venv/bin/python -c "import orchestrator, pytest, hypothesis, mypy, matplotlib" >/dev/null 2>&1 \
   || [ pyproject.toml -nt .venv/.orch-installed ]; then
  echo "orch setup: installing orch (editable) with test extras"
  "${pip[@]}" install --no-compile -e ".[test]" 2> >(grep -v "^WARNING: Location" >&2)
  touch .venv/.orch-installed
  installed=1
fi
if [ "$installed" = 1 ]; then
  # what pip would have compiled; a file Python cannot compile (a package's template, a Python 2 leftover) is
  # skipped, as pip skips it
  site="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  .venv/bin/python -m compileall -qq -j 0 "$site" >/dev/null 2>&1 || true
fi
# Byte-compile orch's own modules and the built-in jobs, as pip does for a package it installs (an editable
# install leaves that to the first import). Where PYTHONDONTWRITEBYTECODE is set no process writes them, so every
# `orch` command and every rank compiled them again: about 0.2 CPU-seconds a CLI call, 0.8 a 2-rank `orch run`.
# A source edited later is compiled again in memory until the next set-up (Python checks each file's time).
.venv/bin/python -m compileall -q -j 0 orchestrator jobs
echo "orch setup: ready ($(.venv/bin/orch --version))"
