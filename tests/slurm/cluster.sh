#!/usr/bin/env bash
# A throwaway three-node Slurm cluster on this machine, for orch's end-to-end tests and demos.
#
#   tests/slurm/cluster.sh up [--accounting]   start (a no-op when the same cluster is healthy);
#                                              prints `export SLURM_CONF=...` on stdout
#   tests/slurm/cluster.sh down                cancel jobs, stop exactly the daemons started here
#   tests/slurm/cluster.sh status              daemons and nodes; exit 0 only when healthy
#   tests/slurm/cluster.sh env                 print the exports of a healthy cluster
#   tests/slurm/cluster.sh install             only install the Debian packages up needs (no daemon)
#
# Usage from a shell:  eval "$(tests/slurm/cluster.sh up)"; orch submit smoke --cluster "$ORCH_SLURM_STATE/cluster.yaml"
#
# Everything (slurm.conf, gres.conf, munge key and socket, state, spool, logs, PID files, fake GPU
# devices, job folders, cluster.yaml for orch) lives under one state directory; nothing under /etc
# is used, except a tagged `127.0.0.1 node1 node2 node3` line in /etc/hosts while the cluster is up.
# Needs root (the daemons run as root). `up` also makes the unprivileged user the end-to-end tests run
# as, and a Python that user can run (tests/slurm/testuser.sh; exported as ORCH_TEST_USER and
# ORCH_TEST_PYTHON). Facts behind the choices: ../shared/slurm/NOTES.md.
#
# Environment:
#   ORCH_SLURM_STATE       state directory (default /tmp/orch-slurm); every directory up to it must be o+x
#   ORCH_SLURM_JOB_ROOT    launcher.job_root written to cluster.yaml (default $ORCH_SLURM_STATE/jobs)
#   ORCH_SLURM_ACCOUNTING  1: also run slurmdbd + a private mariadbd, so that `sacct` works (same as --accounting)
#   ORCH_SLURM_NO_INSTALL  1: never run apt-get; fail with the command to run instead
#   ORCH_SLURM_TIMEOUT     seconds to wait for idle nodes (default 30)
#   ORCH_SLURM_NODES       how many nodes `up` starts (default 3: 2 to train on + 1 spare); status, env and down
#                          describe the cluster that runs (its slurm.conf) unless it is set
#   ORCH_SLURM_PORT_BASE   first of 3 + nodes TCP ports (default 16815: mariadbd, slurmdbd, slurmctld, then one
#                          slurmd each: 16815-16820 for 3 nodes); a second cluster beside the first needs its own
#                          state directory and ports
set -euo pipefail
umask 022

STATE=${ORCH_SLURM_STATE:-/tmp/orch-slurm}
JOB_ROOT=${ORCH_SLURM_JOB_ROOT:-}
ACCOUNTING=${ORCH_SLURM_ACCOUNTING:-0}
WAIT_SECONDS=${ORCH_SLURM_TIMEOUT:-30}
PORT_BASE=${ORCH_SLURM_PORT_BASE:-16815}   # mariadbd, slurmdbd, slurmctld, then one port per slurmd
DB_PORT=$PORT_BASE
DBD_PORT=$((PORT_BASE + 1))
CTLD_PORT=$((PORT_BASE + 2))
set_nodes() {  # set_nodes N: node1..nodeN, one slurmd port each after slurmctld's
  [[ $1 =~ ^[1-9][0-9]?$ ]] || die "ORCH_SLURM_NODES must be a number of nodes from 1 to 99, not '$1'"
  NODE_COUNT=$1
  NODES=()
  local i
  for ((i = 1; i <= NODE_COUNT; i++)); do NODES+=("node$i"); done
  NODE_EXPR="node[1-$NODE_COUNT]"
  NODE_PORTS="$((PORT_BASE + 3))-$((PORT_BASE + 2 + NODE_COUNT))"
}
GPUS_PER_NODE=8
CPUS_PER_NODE=4
MEM_PER_NODE=4096
HOSTS_TAG="# orch-slurm-test"
CLIENT_TIMEOUT=10   # seconds for any Slurm client call (a bad SLURM_CONF stalls clients for 60 s)
PACKAGES=(slurmctld slurmd slurm-client munge tmux sudo)  # tmux: the e2e test of orch top drives it in a terminal;
# sudo: the two-user e2e test acts as the second user
DB_PACKAGES=(slurmdbd mariadb-server)

log() { printf 'cluster.sh: %s\n' "$*" >&2; }
die() { printf 'cluster.sh: error: %s\n' "$*" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR source=testuser.sh
source "$(dirname "${BASH_SOURCE[0]}")/testuser.sh"

usage() {
  sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- paths ---------------------------------------------------------------------------------------

set_paths() {
  case $STATE in /*) ;; *) STATE="$PWD/$STATE" ;; esac
  STATE=${STATE%/}
  # The path goes into slurm.conf unquoted; keep it to characters Slurm and munge take literally.
  [[ $STATE =~ ^/[A-Za-z0-9._/+-]+$ ]] || die "state directory '$STATE' may only use letters, digits and ._/+- (set ORCH_SLURM_STATE)"
  JOB_ROOT=${JOB_ROOT:-$STATE/jobs}
  ETC=$STATE/etc
  CONF=$ETC/slurm.conf
  MUNGE_DIR=$STATE/munge
  MUNGE_KEY=$ETC/munge.key
  MUNGE_SOCKET=$MUNGE_DIR/munge.socket.2
  RUN=$STATE/run
  LOGS=$STATE/log
  DB_DIR=$STATE/db
}

# --- processes: a PID counts as ours only if argv[0] is the daemon and it names the state dir ----

proc_state() {  # the one-letter state of a PID from /proc (R, S, Z, ...), empty if gone
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  printf '%s' "${stat%% *}"
}

is_ours() {  # is_ours PID DAEMON: alive (not a zombie), argv[0] is DAEMON, command line or env names STATE
  local pid=$1 daemon=$2 state
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  state=$(proc_state "$pid")
  [[ -n $state && $state != Z && $state != X ]] || return 1
  local -a argv=()
  mapfile -d '' -t argv 2>/dev/null < "/proc/$pid/cmdline" || return 1
  ((${#argv[@]})) || return 1
  [[ ${argv[0]##*/} == "$daemon" ]] || return 1
  [[ "${argv[*]}" == *"$STATE/"* ]] && return 0
  # slurmdbd takes no config option: it finds slurmdbd.conf through SLURM_CONF in its environment.
  tr '\0' '\n' 2>/dev/null < "/proc/$pid/environ" | grep -qxF "SLURM_CONF=$CONF"
}

pid_of() {  # pid_of NAME DAEMON: the PID in run/NAME.pid when that process is ours, else nothing
  local file=$RUN/$1.pid pid
  [[ -r $file ]] || return 0
  pid=$(tr -dc '0-9' 2>/dev/null < "$file") || return 0
  if is_ours "$pid" "$2"; then printf '%s' "$pid"; fi
}

# name:daemon pairs, in the order of start-up (shutdown goes backwards)
daemon_list() {
  if [[ $ACCOUNTING == 1 ]]; then
    printf '%s\n' munged:munged mariadbd:mariadbd slurmdbd:slurmdbd slurmctld:slurmctld
  else
    printf '%s\n' munged:munged slurmctld:slurmctld
  fi
  local node
  for node in "${NODES[@]}"; do printf 'slurmd-%s:slurmd\n' "$node"; done
}

# every daemon name we may have started, in any mode and with any number of nodes (down stops all of them)
all_daemons() {
  printf '%s\n' munged:munged mariadbd:mariadbd slurmdbd:slurmdbd slurmctld:slurmctld
  local node file
  for node in "${NODES[@]}"; do printf 'slurmd-%s:slurmd\n' "$node"; done
  for file in "$RUN"/slurmd-*.pid; do  # a node of a run with more nodes than this one
    [[ -e $file ]] || continue
    node=${file##*/slurmd-}
    node=${node%.pid}
    [[ " ${NODES[*]} " == *" $node "* ]] || printf 'slurmd-%s:slurmd\n' "$node"
  done
}

stop_pids() {  # stop_pids GRACE PID...: TERM, wait up to GRACE seconds (zombies count as gone), KILL
  local grace=$1; shift
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null || true
  local deadline=$((SECONDS + grace)) pid alive
  while :; do
    alive=()
    for pid in "$@"; do
      local s
      s=$(proc_state "$pid")
      [[ -n $s && $s != Z && $s != X ]] && alive+=("$pid")
    done
    ((${#alive[@]})) || return 0
    if ((SECONDS >= deadline)); then
      log "killing ${alive[*]} after ${grace}s"
      kill -KILL "${alive[@]}" 2>/dev/null || true
      return 0
    fi
    sleep 0.1
  done
}

# Job tasks and step daemons of this cluster: slurmstepd, or any process with this cluster's
# SLURM_CONF *and* a SLURM_JOB_ID in its environment (the caller's own shell has no job id).
leftover_job_pids() {
  local dir pid argv0 env
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    env=$(tr '\0' '\n' 2>/dev/null < "$dir/environ") || continue
    grep -qxF "SLURM_CONF=$CONF" <<<"$env" || continue
    argv0=$(tr '\0' '\n' 2>/dev/null < "$dir/cmdline" | head -n1) || continue
    if [[ ${argv0##*/} == slurmstepd ]] || grep -q '^SLURM_JOB_ID=' <<<"$env"; then
      local s
      s=$(proc_state "$pid")
      [[ -n $s && $s != Z ]] && printf '%s\n' "$pid"
    fi
  done
  return 0
}

# --- clients -------------------------------------------------------------------------------------

client() {  # client CMD ARGS...: a Slurm client against this cluster, never hanging
  SLURM_CONF=$CONF timeout "$CLIENT_TIMEOUT" "$@"
}

node_states() {  # "node1 idle" lines
  client sinfo -h -N -o '%N %t' 2>/dev/null | sort -u
}

all_nodes_ready() {  # every node idle (or running jobs) and responding
  local states node state
  states=$(node_states) || return 1
  for node in "${NODES[@]}"; do
    state=$(awk -v n="$node" '$1 == n {print $2}' <<<"$states")
    case $state in idle | mix | alloc | comp) ;; *) return 1 ;; esac
  done
}

# --- configuration -------------------------------------------------------------------------------

# sched_interval=1: the main scheduler tests every pending job each second. A job whose BeginTime passes (a
# requeued job after `scontrol update StartTime=now+2`) changes no state that wakes either scheduler: with
# the default 60 s it started 0.1-58.7 s after its BeginTime here (the requeue tests), with 1 s within 1 s.
slurm_conf() {
  cat <<EOF
# Written by tests/slurm/cluster.sh; rewritten at every start.
ClusterName=orch
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$STATE/state
SlurmdSpoolDir=$STATE/spool/%n
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,bf_interval=1,sched_interval=1
EnforcePartLimits=ALL
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGS/jobcomp.txt
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=300
InactiveLimit=0
GresTypes=gpu
EOF
  if [[ $ACCOUNTING == 1 ]]; then
    cat <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$MUNGE_SOCKET
AccountingStorageTRES=gres/gpu
JobAcctGatherType=jobacct_gather/linux
EOF
  else
    cat <<EOF
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
EOF
  fi
  cat <<EOF
NodeName=$NODE_EXPR NodeHostname=localhost NodeAddr=127.0.0.1 Port=$NODE_PORTS CPUs=$CPUS_PER_NODE RealMemory=$MEM_PER_NODE Gres=gpu:$GPUS_PER_NODE State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

gres_conf() {
  printf 'NodeName=%s Name=gpu File=%s/dev/nvidia[0-%d]\n' "$NODE_EXPR" "$STATE" $((GPUS_PER_NODE - 1))
}

slurmdbd_conf() {
  cat <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$RUN/slurmdbd.pid
LogFile=$LOGS/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=root
StorageLoc=slurm_acct_db
EOF
}

# The jobs' MASTER_PORTs (launcher.port_range), below the kernel's ephemeral ports (32768 and up on Linux:
# a port there may be any outgoing connection's, and a job's bind then fails with "address already in use",
# seen once in an e2e restart test). Job ids start at 1 on every cluster, so a second cluster beside the
# default one (another ORCH_SLURM_PORT_BASE) gets 1000 ports of its own, from 28000 up.
job_port_range() {
  if ((PORT_BASE == 16815)); then
    printf '20000, 27999'
  else
    local low=$((28000 + (PORT_BASE / 1000 % 4) * 1000))
    printf '%d, %d' "$low" $((low + 999))
  fi
}

# cluster.yaml for orch: the same nodes and GPUs, small timeouts so faults show up fast.
cluster_yaml() {
  cat <<EOF
# Written by tests/slurm/cluster.sh for the local test cluster (state: $STATE).
name: orch-test
partitions:
  - name: debug
    nodes: $NODE_EXPR
    gpus_per_node: $GPUS_PER_NODE
    cpus_per_node: $CPUS_PER_NODE
    mem_per_node: $MEM_PER_NODE
    max_time: UNLIMITED
defaults:
  partition: debug
  time: "00:10:00"
  cpus_per_task: 1   # Slurm advertises 4 CPUs per node; the machine has $(nproc) cores: one thread per rank
env:
  OMP_NUM_THREADS: "1"
  GLOO_SOCKET_IFNAME: lo
launcher:
  port_range: [$(job_port_range)]
  init_timeout: 30
  srun_wait: 10
  preempt_signal: USR2
  preempt_before: 60
  requeue: true
  bad_node_ttl: 0              # a throwaway cluster whose tests fail nodes on purpose: remember none
  job_root: $JOB_ROOT
EOF
}

exports() {
  printf 'export SLURM_CONF=%s\n' "$CONF"
  test_user_exports
  printf '# orch cluster file: %s/cluster.yaml (orch ... --cluster %s/cluster.yaml)\n' "$STATE" "$STATE"
}

config_matches() {  # the running daemons were started with exactly the configuration we would write
  [[ -f $CONF && -f $ETC/gres.conf ]] || return 1
  [[ "$(cat "$CONF")" == "$(slurm_conf)" ]] || return 1
  [[ "$(cat "$ETC/gres.conf")" == "$(gres_conf)" ]] || return 1
}

write_cluster_yaml() {  # orch's view only: (re)written at every up, no restart needed
  local current=""
  [[ -f $STATE/cluster.yaml ]] && current=$(cat "$STATE/cluster.yaml")
  if [[ $current != "$(cluster_yaml)" ]]; then
    mkdir -p "$JOB_ROOT"
    cluster_yaml > "$STATE/cluster.yaml.tmp"
    mv -f "$STATE/cluster.yaml.tmp" "$STATE/cluster.yaml"
  fi
  # the default job root is shared like /tmp (sticky, world-writable): each user's job folders are their own
  if [[ $JOB_ROOT == "$STATE/jobs" && -d $JOB_ROOT ]]; then
    chmod 1777 "$JOB_ROOT"
    seed_other_user
  fi
}

OTHER_USERS_JOB=smoke-20000101-000000-0a0b0c  # the oldest stamp: sorts after every real job

seed_other_user() {  # another user's private job folders and snapshot store, as a shared scratch holds them
  local job=$JOB_ROOT/$OTHER_USERS_JOB
  [[ -e $job ]] && return 0
  mkdir -p "$job/0" "$JOB_ROOT/.snapshots"
  printf '{"0": {}}\n' > "$job/array.json"
  printf '{}\n' > "$job/0/job.json"
  chmod 700 "$job" "$job/0" "$JOB_ROOT/.snapshots"
  chmod 600 "$job/array.json" "$job/0/job.json"
}

# --- checks --------------------------------------------------------------------------------------

require_root() {
  ((EUID == 0)) || die "needs root (the daemons run as root and /etc/hosts gets a node line); run it with sudo"
}

ensure_packages() {
  local -a want=("${PACKAGES[@]}") missing=() pkg
  [[ $ACCOUNTING == 1 ]] && want+=("${DB_PACKAGES[@]}")
  for pkg in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  if [[ ${ORCH_SLURM_NO_INSTALL:-0} == 1 ]] || ! command -v apt-get >/dev/null; then
    die "missing packages: ${missing[*]}; install them with: apt-get install -y --no-install-recommends ${missing[*]}"
  fi
  log "installing ${missing[*]} (apt-get)"
  # The lock timeout makes parallel installs wait instead of failing.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >&2 \
    || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
}

check_traversable() {  # munged refuses a socket unless every directory up to it is o+x
  local dir=$STATE
  while [[ ! -e $dir ]]; do dir=$(dirname "$dir"); done
  while [[ $dir != / ]]; do
    [[ -d $dir ]] || die "$dir is not a directory"
    if [[ $(( 8#$(stat -c '%a' "$dir") & 1 )) == 0 ]]; then
      die "$dir is not o+x, so munged refuses its socket below it; choose another ORCH_SLURM_STATE (e.g. /tmp/orch-slurm)"
    fi
    dir=$(dirname "$dir")
  done
}

# --- verbs ---------------------------------------------------------------------------------------

healthy() {
  config_matches || return 1
  local name daemon
  while IFS=: read -r name daemon; do
    [[ -n $(pid_of "$name" "$daemon") ]] || return 1
  done < <(daemon_list)
  all_nodes_ready
}

write_files() {
  mkdir -p "$ETC" "$MUNGE_DIR" "$RUN" "$LOGS" "$STATE/dev" "$JOB_ROOT"
  rm -rf "$STATE/state" "$STATE/spool"
  rm -f "$RUN"/*.pid "$MUNGE_SOCKET" "$MUNGE_SOCKET".lock
  # A fresh cluster numbers jobs from 1 again: start its logs and job completion records afresh too.
  rm -f "$LOGS"/*.log "$LOGS"/*.stdout "$LOGS/jobcomp.txt"
  rm -rf "$DB_DIR"  # and a fresh accounting database (sacct would mix old and new jobs of one id)
  mkdir -p "$STATE/state"
  local node i
  for node in "${NODES[@]}"; do mkdir -p "$STATE/spool/$node"; done
  chmod 0755 "$STATE" "$ETC" "$MUNGE_DIR" "$RUN" "$LOGS"
  for ((i = 0; i < GPUS_PER_NODE; i++)); do ln -sfn /dev/null "$STATE/dev/nvidia$i"; done
  if [[ ! -s $MUNGE_KEY ]]; then
    (umask 077; head -c 1024 /dev/urandom > "$MUNGE_KEY")
  fi
  chmod 0600 "$MUNGE_KEY"
  slurm_conf > "$CONF"
  gres_conf > "$ETC/gres.conf"
  if [[ $ACCOUNTING == 1 ]]; then
    (umask 077; slurmdbd_conf > "$ETC/slurmdbd.conf")
  else
    rm -f "$ETC/slurmdbd.conf"
  fi
  write_cluster_yaml
}

wait_for() {  # wait_for SECONDS WHAT CMD...: poll CMD every 0.1 s
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${limit}s waiting for $what"
      return 1
    fi
    sleep 0.1
  done
}

log_tails() {
  local f
  for f in "$LOGS"/*.log "$LOGS"/*.stdout; do
    [[ -s $f ]] || continue
    printf '\n==> %s <==\n' "$f" >&2
    tail -n 15 "$f" >&2
  done
  printf '\n==> sinfo <==\n%s\n' "$(node_states || true)" >&2
}

fail_start() {
  log "$1; the last lines of each log follow"
  log_tails
  cmd_down >/dev/null 2>&1 || true  # stop what did start; the logs stay
  die "the cluster did not come up (state and logs: $STATE)"
}

socket_ready() { [[ -S $MUNGE_SOCKET ]]; }
pidfile_ours() { [[ -n $(pid_of "$1" "$2") ]]; }
db_ready() { mariadb-admin --no-defaults --socket="$DB_DIR/mysqld.sock" -u root ping >/dev/null 2>&1; }

start_munged() {
  /usr/sbin/munged --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" --pid-file="$RUN/munged.pid" \
    --log-file="$LOGS/munged.log" --seed-file="$MUNGE_DIR/munged.seed" \
    </dev/null >>"$LOGS/munged.stdout" 2>&1 || fail_start "munged failed to start"
  wait_for 10 "the munge socket" socket_ready || fail_start "munged did not create its socket"
}

start_db() {
  if [[ ! -d $DB_DIR/data/mysql ]]; then
    mkdir -p "$DB_DIR/data"
    mariadb-install-db --no-defaults --datadir="$DB_DIR/data" --user=root --auth-root-authentication-method=normal \
      --skip-test-db </dev/null >>"$LOGS/mariadb-install.stdout" 2>&1 || fail_start "mariadb-install-db failed"
  fi
  # mariadbd does not daemonize: run it in its own session, detached from our stdout.
  setsid /usr/sbin/mariadbd --no-defaults --datadir="$DB_DIR/data" --port="$DB_PORT" --bind-address=127.0.0.1 \
    --socket="$DB_DIR/mysqld.sock" --pid-file="$RUN/mariadbd.pid" --skip-name-resolve --user=root \
    --log-error="$LOGS/mariadb.log" </dev/null >>"$LOGS/mariadb.stdout" 2>&1 &
  wait_for 30 "mariadbd" db_ready || fail_start "mariadbd did not answer"
  SLURM_CONF=$CONF /usr/sbin/slurmdbd </dev/null >>"$LOGS/slurmdbd.stdout" 2>&1 || fail_start "slurmdbd failed to start"
  wait_for 15 "slurmdbd" pidfile_ours slurmdbd slurmdbd || fail_start "slurmdbd did not start"
  # slurmdbd listens once its PID file exists; give it a moment to accept connections.
  wait_for 15 "slurmdbd's port" bash -c "exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT" 2>/dev/null \
    || fail_start "slurmdbd does not listen on port $DBD_PORT"
}

start_slurm() {
  SLURM_CONF=$CONF /usr/sbin/slurmctld -f "$CONF" </dev/null >>"$LOGS/slurmctld.stdout" 2>&1 \
    || fail_start "slurmctld failed to start"
  wait_for 15 "slurmctld" pidfile_ours slurmctld slurmctld || fail_start "slurmctld did not start"
  local node
  for node in "${NODES[@]}"; do
    SLURM_CONF=$CONF /usr/sbin/slurmd -f "$CONF" -N "$node" </dev/null >>"$LOGS/slurmd-$node.stdout" 2>&1 \
      || fail_start "slurmd for $node failed to start"
  done
  wait_for "$WAIT_SECONDS" "every node idle" all_nodes_ready || fail_start "the nodes did not become idle"
}

hosts_line() { printf '127.0.0.1 %s %s %s' "${NODES[*]}" "$HOSTS_TAG" "$STATE"; }

hosts_remove() {  # this state directory's line, whatever nodes it names (a run with another node count)
  [[ -w /etc/hosts ]] || return 0
  local suffix=" $HOSTS_TAG $STATE" kept
  kept=$(awk -v s="$suffix" 'length($0) < length(s) || substr($0, length($0) - length(s) + 1) != s' /etc/hosts)
  [[ $kept != "$(cat /etc/hosts)" ]] || return 0
  # Rewrite in place: /etc/hosts is often a bind mount that cannot be replaced by rename.
  printf '%s\n' "$kept" > /etc/hosts
}

hosts_add() {
  hosts_remove
  local node
  for node in "${NODES[@]}"; do
    if getent hosts "$node" >/dev/null; then
      log "$node already resolves ($(getent hosts "$node" | head -n1)); not adding it to /etc/hosts"
      return 0
    fi
  done
  printf '%s\n' "$(hosts_line)" >> /etc/hosts
}

cmd_up() {
  require_root
  ensure_packages
  check_traversable
  ensure_test_user
  if healthy; then
    hosts_add
    write_cluster_yaml
    ensure_user_python || log "the end-to-end tests will run as root (see above)"
    log "already up (state: $STATE)"
    exports
    return 0
  fi
  if [[ -d $RUN ]]; then
    log "stopping what a previous run left"
    cmd_down >/dev/null
  fi
  local started=$SECONDS
  write_files
  start_munged
  [[ $ACCOUNTING == 1 ]] && start_db
  start_slurm
  hosts_add
  ensure_user_python || log "the end-to-end tests will run as root (see above)"
  log "up in $((SECONDS - started))s: nodes ${NODES[*]} idle (state: $STATE, accounting: $ACCOUNTING)"
  exports
}

cmd_down() {
  require_root
  # Cancel jobs first, so that tasks end through Slurm; then stop daemons newest first.
  if [[ -n $(pid_of slurmctld slurmctld) ]]; then
    local ids
    ids=$(client squeue -h -o '%A' -t PD,R,CG,S,CF,RQ,RS,SE 2>/dev/null | sort -u | tr '\n' ' ' || true)
    if [[ -n ${ids// /} ]]; then
      # shellcheck disable=SC2086  # a list of numeric job ids
      client scancel --full $ids 2>/dev/null || true
      sleep 0.5
    fi
  fi
  local entry name daemon pid
  local -a entries=()
  mapfile -t entries < <(all_daemons)
  local i
  for ((i = ${#entries[@]} - 1; i >= 0; i--)); do
    entry=${entries[i]}
    name=${entry%%:*}
    daemon=${entry#*:}
    pid=$(pid_of "$name" "$daemon")
    # slurmds go together; the others one after another (slurmctld saves state on TERM)
    if [[ -n $pid ]]; then
      stop_pids 10 "$pid"
    fi
    rm -f "$RUN/$name.pid"
  done
  local -a leftovers=()
  mapfile -t leftovers < <(leftover_job_pids)
  if ((${#leftovers[@]})); then
    log "ending leftover job processes: ${leftovers[*]}"
    stop_pids 3 "${leftovers[@]}"
  fi
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET".lock
  hosts_remove
  log "down (state kept in $STATE)"
}

cmd_status() {
  local entry name daemon pid ok=0
  printf '%-16s %-8s %s\n' DAEMON PID STATE
  while IFS=: read -r name daemon; do
    pid=$(pid_of "$name" "$daemon")
    if [[ -n $pid ]]; then
      printf '%-16s %-8s %s\n' "$name" "$pid" running
    else
      printf '%-16s %-8s %s\n' "$name" - stopped
      ok=1
    fi
  done < <(daemon_list)
  if [[ -n $(pid_of slurmctld slurmctld) ]]; then
    printf '\n%s\n' "$(client sinfo 2>&1 || true)"
  fi
  config_matches || { printf '\nconfiguration differs from what "up" writes (or is missing)\n'; ok=1; }
  if ((ok == 0)) && all_nodes_ready; then
    printf '\nhealthy; %s\n' "$(exports | head -n1)"
    return 0
  fi
  printf '\nnot healthy (start it with: %s up)\n' "$0"
  return 1
}

cmd_env() {
  healthy || die "the cluster at $STATE is not up (start it with: $0 up)"
  exports
}

main() {
  local verb=${1:-}
  (($#)) && shift
  while (($#)); do
    case $1 in
      --accounting) ACCOUNTING=1 ;;
      --state) STATE=${2:?--state needs a directory}; shift ;;
      *) usage ;;
    esac
    shift
  done
  set_paths
  # up starts ORCH_SLURM_NODES nodes (3 by default); status, env and down describe the cluster that runs:
  # its node count is the one in its slurm.conf, unless ORCH_SLURM_NODES says otherwise
  local running
  running=$(sed -n 's/^NodeName=node\[1-\([0-9]*\)\] .*/\1/p' "$CONF" 2>/dev/null | head -n1 || true)
  if [[ -n ${ORCH_SLURM_NODES:-} || $verb == up || -z $running ]]; then
    set_nodes "${ORCH_SLURM_NODES:-3}"
  else
    set_nodes "$running"
  fi
  # status and env describe the cluster that runs: its mode is the one in its slurm.conf
  if [[ $verb == status || $verb == env ]] && [[ -z ${ORCH_SLURM_ACCOUNTING:-} && $ACCOUNTING == 0 ]] \
    && grep -qs '^AccountingStorageType=accounting_storage/slurmdbd' "$CONF"; then
    ACCOUNTING=1
  fi
  case $verb in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    env) cmd_env ;;
    install) require_root; ensure_packages ;;
    *) usage ;;
  esac
}

main "$@"
