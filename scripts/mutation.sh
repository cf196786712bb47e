#!/usr/bin/env bash
# Mutation testing of orch's core against the fast tests: does the suite notice a small bug?
# Not part of CI (minutes per module). Details: scripts/mutate.py; equivalent mutants, with the
# reason each is equivalent: scripts/mutation-equivalent.txt.
#
#   scripts/mutation.sh MODULE... [--jobs N] [--limit N] [--from GITREF] [--json FILE] [--list]
#   scripts/mutation.sh all                      # hostlist distenv render plan cluster checkpoint slurm
#   scripts/mutation.sh distenv --limit 50       # a quick sample: every k-th of the mutants
#   scripts/mutation.sh plan --from main         # the score of another commit's code and tests
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
args=()
for arg in "$@"; do
    if [ "$arg" = all ]; then
        args+=(hostlist distenv render plan cluster checkpoint slurm)
    else
        args+=("$arg")
    fi
done
exec "$PY" scripts/mutate.py "${args[@]}"
