#!/usr/bin/env bash
# Set up .venv (scripts/setup.sh), then run every check: ruff, mypy (strict), the import contracts
# (lint-imports), and pytest, including
# the end-to-end tests (tests/e2e/) on a throwaway local Slurm cluster (tests/slurm/cluster.sh, needs root and
# Debian's slurm packages, which it installs). The cluster is stopped again on exit, also on failure.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k hostlist`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
slurm=0
if [ "$(id -u)" = 0 ] && [ "${ORCH_SKIP_SLURM:-0}" != 1 ]; then
  slurm=1
fi

# Debian's packages (shellcheck; Slurm's and munge for the test cluster; OpenSSH for the remote tests) install in
# the background while .venv is set up and the linters run: apt's time and pip's and mypy's overlap. Its output is
# shown after.
apt_log="$(mktemp)"
apt_pid=""
if [ "$(id -u)" = 0 ]; then
  (
    if ! command -v shellcheck >/dev/null 2>&1; then
      echo "orch test: installing shellcheck from Debian"
      apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null \
        && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq shellcheck >/dev/null
    fi
    if [ "$slurm" = 1 ]; then
      bash tests/slurm/cluster.sh install
      # the end-to-end remote test runs as the cluster's unprivileged user, who cannot install sshd itself (and
      # the first pass, which would as root, runs beside it): installed here first, its service never started
      if command -v python3 >/dev/null 2>&1; then python3 tests/sshd.py install; fi
    fi
  ) >"$apt_log" 2>&1 &
  apt_pid=$!
fi
apt_done() {  # wait for the background installs once; show what they said
  [ -n "$apt_pid" ] || return 0
  local rc=0
  wait "$apt_pid" || rc=$?
  apt_pid=""
  cat "$apt_log"
  rm -f "$apt_log"
  [ "$rc" = 0 ] || echo "orch test: WARNING: installing Debian's packages failed (exit $rc): see above"
}

bash scripts/setup.sh

# MNIST for the accuracy test: $ORCH_DATA_DIR, else the shared copy beside the repo when present.
if [ -z "${ORCH_DATA_DIR:-}" ] && [ -d "$root/../shared/data/MNIST/raw" ]; then
  ORCH_DATA_DIR="$(cd "$root/../shared/data" && pwd)"
  export ORCH_DATA_DIR
fi

echo "orch test: ruff"
.venv/bin/ruff check orchestrator jobs tests bench
# mypy (strict) and the import contracts run beside the cluster's start and the tests (mypy alone keeps one core
# busy for a minute and a half); their output is shown, and their failure counted, when the tests are done.
lint_log="$(mktemp)"
echo "orch test: mypy --strict and lint-imports (the layer contracts in pyproject.toml), beside the tests"
( .venv/bin/mypy && PYTHONPATH=tests/architecture .venv/bin/lint-imports --no-cache --no-logo ) >"$lint_log" 2>&1 &
lint_pid=$!
finish() {  # show mypy's and lint-imports' output; exit with the first failure (the tests', else theirs)
  local rc=$1 lint_rc=0
  wait "$lint_pid" || lint_rc=$?
  echo "orch test: mypy --strict and lint-imports:"
  cat "$lint_log"
  rm -f "$lint_log"
  [ "$rc" != 0 ] || rc=$lint_rc
  exit "$rc"
}

apt_done
if [ "$slurm" = 1 ]; then
  echo "orch test: starting the local Slurm test cluster"
  trap 'bash tests/slurm/cluster.sh down >/dev/null 2>&1 || true' EXIT
  eval "$(bash tests/slurm/cluster.sh up)"
else
  echo "orch test: not root (or ORCH_SKIP_SLURM=1): the real-Slurm tests will be skipped"
fi

# The first pass runs on every core and one more (pytest-xdist; ORCH_TEST_WORKERS=N sets the count, 0 runs it in
# this process): its tests isolate their folders, ports and environment, and a fifth of their time they wait on their
# ranks' processes (timeouts, rendezvous, start-up), which the extra worker fills: on 2 cores, tests/local, restarts
# and task took 529 s with 2 workers (19% of the CPU idle), 465 s with 3 (8% idle). The end-to-end pass stays
# serial: its jobs share the three nodes of one cluster.
count="${ORCH_TEST_WORKERS:-$(( $(nproc) + 1 ))}"
workers=(-n "$count" --dist worksteal)
[ "$count" != 0 ] || workers=()

# Two passes: everything but the end-to-end tests as the caller, then tests/e2e as the cluster's
# unprivileged user (ORCH_TEST_USER, made by cluster.sh up: jobs are submitted, followed and cancelled as
# an ordinary user, umask 022). Options go to both passes; a path argument (tests/...) to the pass it
# belongs to. Without that user (not root, no cluster) one pass runs everything as the caller.
if [ -n "${ORCH_TEST_USER:-}" ] && [ -n "${ORCH_TEST_PYTHON:-}" ]; then
  opts=() mine=() theirs=()
  for arg in "$@"; do
    case $arg in
      tests/e2e | tests/e2e/*) theirs+=("$arg") ;;
      tests | tests/*) mine+=("$arg") ;;
      *) opts+=("$arg") ;;
    esac
  done
  first=0 second=0
  if [ $# -eq 0 ] || [ ${#mine[@]} -gt 0 ] || [ ${#theirs[@]} -eq 0 ]; then first=1; fi
  if [ $# -eq 0 ] || [ ${#theirs[@]} -gt 0 ] || [ ${#mine[@]} -eq 0 ]; then second=1; fi
  [ ${#theirs[@]} -gt 0 ] || theirs=(tests/e2e)
  e2e() { (umask 022 && runuser -u "$ORCH_TEST_USER" -- "$ORCH_TEST_PYTHON" -B -m pytest -p no:cacheprovider \
    --rootdir "$root" "${opts[@]}" "${theirs[@]}"); }
  rc=0
  if [ "$first" = 1 ] && [ "$second" = 1 ] && [ "${ORCH_TEST_SERIAL:-0}" != 1 ]; then
    # Both passes at once: the end-to-end jobs mostly wait (on Slurm, on their ranks' rendezvous), the
    # first pass mostly computes, so side by side they take about the longer one's time, not the sum.
    # The end-to-end pass is still serial within itself (its jobs share the three nodes); its output is
    # kept in a file and shown after the first pass's. ORCH_TEST_SERIAL=1 runs them one after the other.
    e2e_log="$(mktemp)"
    echo "orch test: pytest ${theirs[*]} as $ORCH_TEST_USER (umask 022), beside the first pass (its output follows it)"
    e2e >"$e2e_log" 2>&1 &
    e2e_pid=$!
    echo "orch test: pytest (as $(id -un))"
    .venv/bin/python -m pytest --ignore=tests/e2e "${workers[@]}" "${opts[@]}" "${mine[@]}" || rc=$?
    e2e_rc=0
    wait "$e2e_pid" || e2e_rc=$?
    echo "orch test: pytest ${theirs[*]} as $ORCH_TEST_USER (umask 022), run beside the first pass:"
    cat "$e2e_log"
    rm -f "$e2e_log"
    [ "$e2e_rc" = 0 ] || rc=$e2e_rc
    finish "$rc"
  fi
  if [ "$first" = 1 ]; then
    echo "orch test: pytest (as $(id -un); the end-to-end tests follow as $ORCH_TEST_USER)"
    .venv/bin/python -m pytest --ignore=tests/e2e "${workers[@]}" "${opts[@]}" "${mine[@]}" || rc=$?
  fi
  if [ "$second" = 1 ]; then
    echo "orch test: pytest ${theirs[*]} as $ORCH_TEST_USER (umask 022)"
    e2e || rc=$?
  fi
  finish "$rc"
fi
if [ "$(id -u)" = 0 ] && [ "${ORCH_SKIP_SLURM:-0}" != 1 ]; then
  echo "orch test: WARNING: no unprivileged test user (see cluster.sh's messages above): the end-to-end tests run as root"
fi
echo "orch test: pytest"
rc=0
.venv/bin/python -m pytest "${workers[@]}" "$@" || rc=$?
finish "$rc"
