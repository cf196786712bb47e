# shellcheck shell=bash
# The local test cluster's user: sourced by tests/slurm/cluster.sh (needs its log/die and $STATE).
#
# The end-to-end tests submit, follow and cancel as an ordinary user, never as root, because permission
# bugs (read-only folders, umask, ownership) only show as a user. `up` makes:
#   - a group to share with (ORCH_TEST_GROUP, default orch-share) and an unprivileged user in it
#     (ORCH_TEST_USER, default orch-user; umask 022 as on most clusters; a home under /home);
#   - a Python the user can run: $STATE/user-python, a virtual environment made from an interpreter the
#     user can reach, that sees the project's .venv packages (torch, orch itself as an editable install)
#     through one .pth line, and an `orch` command of its own.
#   - a second unprivileged user in the same group (ORCH_TEST_USER2, default orch-user2), and a sudo rule
#     that lets the first user run commands as the second, and only that (/etc/sudoers.d/orch-test-users):
#     the end-to-end test of a job root shared by two users drives both from one test.
# Which interpreter: the one the project's .venv was made from when the user can run it; on machines
# where it lives under a root-only home (pyenv under /root), the system's interpreter of the same
# version (Debian's /usr/bin/python3.X: the same ABI, so the .venv's compiled packages load). Nothing
# under /root is opened up. Without either, `up` says which and the end-to-end tests run as root.
# The checkout itself (and the data) must be readable by others; `up` checks it and says so otherwise.

TEST_USER=${ORCH_TEST_USER:-orch-user}
TEST_GROUP=${ORCH_TEST_GROUP:-orch-share}
TEST_USER2=${ORCH_TEST_USER2:-orch-user2}
SUDOERS_FILE=/etc/sudoers.d/orch-test-users

user_python_dir() { printf '%s/user-python' "$STATE"; }

as_test_user() {  # as_test_user CMD...: run CMD as the test user, umask 022, outside any root-only folder
  (cd / && umask 022 && runuser -u "$TEST_USER" -- "$@")
}

ensure_test_user() {
  getent group "$TEST_GROUP" >/dev/null || groupadd "$TEST_GROUP"
  if ! id -u "$TEST_USER" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash --gid "$TEST_GROUP" "$TEST_USER"
  fi
  local uid
  uid=$(id -u "$TEST_USER")
  ((uid != 0)) || die "ORCH_TEST_USER=$TEST_USER is root: the end-to-end tests need an unprivileged user"
  ensure_second_user
}

ensure_second_user() {  # the second user, and the first user's right to act as it (sudo -n -u), no more
  if ! id -u "$TEST_USER2" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash --gid "$TEST_GROUP" "$TEST_USER2"
  fi
  (($(id -u "$TEST_USER2") != 0)) || die "ORCH_TEST_USER2=$TEST_USER2 is root: it must be an unprivileged user"
  command -v visudo >/dev/null || { log "no sudo: the two-user end-to-end test will be skipped"; return 0; }
  local rule="$TEST_USER ALL=($TEST_USER2) NOPASSWD: ALL"
  [[ -f $SUDOERS_FILE && "$(cat "$SUDOERS_FILE")" == "$rule" ]] && return 0
  printf '%s\n' "$rule" > "$SUDOERS_FILE.tmp"
  chmod 0440 "$SUDOERS_FILE.tmp"
  visudo -cqf "$SUDOERS_FILE.tmp" || { rm -f "$SUDOERS_FILE.tmp"; die "the sudo rule for $TEST_USER2 does not parse"; }
  mv -f "$SUDOERS_FILE.tmp" "$SUDOERS_FILE"
}

project_root() { (cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd); }

# A Python the test user can run, of the same version as the project's .venv: prints its path.
reachable_python() {
  local venv_python=$1 version base candidate
  version=$("$venv_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  base=$("$venv_python" -c 'import os, sys; print(os.path.realpath(sys.executable))')
  for candidate in "$base" "/usr/bin/python$version" "/usr/local/bin/python$version"; do
    [[ -x $candidate ]] || continue
    if as_test_user "$candidate" -c 'import sys' >/dev/null 2>&1; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
  return 1
}

ensure_user_python() {  # ensure_user_python: (re)make $STATE/user-python; prints nothing, fails with a reason
  local root venv_python site py dir version
  root=$(project_root)
  venv_python=$root/.venv/bin/python
  [[ -x $venv_python ]] || { log "no $venv_python (run scripts/setup.sh): no test user's Python"; return 1; }
  if ! as_test_user test -r "$root/pyproject.toml"; then
    log "the checkout $root is not readable by $TEST_USER (a folder above it is private): no test user's Python"
    return 1
  fi
  py=$(reachable_python "$venv_python") || {
    log "no Python $("$venv_python" -c 'import sys; print("%d.%d" % sys.version_info[:2])') that $TEST_USER can run" \
      "($("$venv_python" -c 'import os, sys; print(os.path.realpath(sys.executable))') is not reachable): install" \
      "the system's python3 of that version (Debian: apt-get install python3)"
    return 1
  }
  site=$("$venv_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  dir=$(user_python_dir)
  rm -rf "$dir"
  "$py" -m venv --without-pip "$dir"
  version=$("$dir/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  # addsitedir, not a bare path: the .venv's own .pth files (orch's editable install) are read too
  printf 'import site; site.addsitedir(%s)\n' "'$site'" > "$dir/lib/python$version/site-packages/orch-project.pth"
  cat > "$dir/bin/orch" <<EOF
#!$dir/bin/python
import sys
from orchestrator.cli import entrypoint
sys.exit(entrypoint())
EOF
  chmod 0755 "$dir/bin/orch"
  chmod -R a+rX "$dir"
  if ! as_test_user "$dir/bin/python" -c 'import orchestrator, torch, pytest' >/dev/null 2>&1; then
    log "$TEST_USER cannot import orch, torch and pytest with $dir/bin/python (from $py)"
    return 1
  fi
}

test_user_exports() {  # the test user's variables for scripts/test.sh, when that user's Python works
  if [[ -x $(user_python_dir)/bin/python ]] && id -u "$TEST_USER" >/dev/null 2>&1; then
    printf 'export ORCH_TEST_USER=%s\n' "$TEST_USER"
    printf 'export ORCH_TEST_PYTHON=%s\n' "$(user_python_dir)/bin/python"
    if [[ -f $SUDOERS_FILE ]] && id -u "$TEST_USER2" >/dev/null 2>&1; then
      printf 'export ORCH_TEST_USER2=%s\n' "$TEST_USER2"
    fi
  fi
}
