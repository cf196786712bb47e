#!/usr/bin/env bash
# A .venv for a machine with no package index whose Python already holds torch (a GPU node's image, an air-gapped
# cluster): `bash scripts/offline-venv.sh [WHEELS_DIR]`, then `bash scripts/gpu-check.sh`.
#
# Creates .venv in the project root with that Python (python3, or $PYTHON), makes the packages beside its torch
# visible to it (a .pth file: a venv made from inside another venv sees only the base interpreter's packages), installs
# every wheel of WHEELS_DIR (orch's dependencies that Python lacks, downloaded elsewhere with `pip download --no-deps`)
# without an index, then orch itself from the checkout (a .pth file and the console script pyproject.toml names;
# nothing is built or written into the checkout). Checks that orch, torch, pydantic, submitit and jinja2 import and that `orch --version` runs.
# ORCH_VENV=DIR makes the environment elsewhere (the tests do). Exit status: 0 ready; 2 something above failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${ORCH_VENV:-$root/.venv}"
py="${PYTHON:-python3}"
wheels="${1:-}"
fail() { echo "orch offline-venv: $*" >&2; exit 2; }

image=$("$py" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))') \
  || fail "$py cannot import torch: this script is for a Python that already has it (else scripts/setup.sh)"
"$py" -m venv --without-pip "$venv" || fail "$py -m venv failed"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || fail "no site folder"
echo "$image" > "$site/zz_orch_image_site.pth"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile)
if [ -n "$wheels" ]; then
  shopt -s nullglob
  found=("$wheels"/*.whl)
  shopt -u nullglob
  [ "${#found[@]}" -gt 0 ] || fail "no .whl file in $wheels"
  "${pip[@]}" "${found[@]}" || fail "installing the wheels of $wheels failed"
fi
# orch from the checkout, as an editable install would have it, without building anything (nothing is written into the
# checkout): a .pth file, and the console script pyproject.toml declares
echo "$root" > "$site/orch_checkout.pth"
entry=$(sed -n 's/^orch *= *"\([a-z_.]*:[a-z_]*\)".*/\1/p' "$root/pyproject.toml" | head -n 1)
[ -n "$entry" ] || fail "cannot read orch's console script ([project.scripts]) from pyproject.toml"
printf '#!%s\nimport sys\nfrom %s import %s\nsys.exit(%s())\n' "$venv/bin/python" "${entry%%:*}" "${entry##*:}" \
  "${entry##*:}" > "$venv/bin/orch"
chmod +x "$venv/bin/orch"
"$venv/bin/python" -c 'import orchestrator, torch, pydantic, submitit, jinja2' \
  || fail "orch's dependencies do not all import: download the missing ones as wheels and pass their folder"
"$venv/bin/orch" --version || fail "orch --version failed"
touch "$venv/.orch-offline"  # scripts/gpu-check.sh then skips scripts/setup.sh, which needs an index
echo "orch offline-venv: ready ($venv; torch from $image)"
