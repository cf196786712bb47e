"""Submission from another machine over SSH, against a real OpenSSH server.

The "cluster" is this machine behind a real ``sshd`` on a loopback port (tests/sshd.py): its orch
is this checkout's, run through a wrapper that gives it its own state folder and the stub Slurm
commands (tests/stubs). The "laptop" is the test's orch with another state folder. The end-to-end
test on real Slurm is tests/e2e/test_e2e_remote.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from sshd import Sshd, orch_wrapper, short_socket_dir, sshd_or_skip, write_client_config
from support import ORCH, STUBS_DIR, TEST_CLUSTER, clean_environ

if TYPE_CHECKING:
    from orchestrator.remote.ssh import Connection


@dataclass
class Setup:
    sshd: Sshd
    base: Path
    cluster: Path  # the laptop's cluster file with remote:
    job_root: Path  # on the "cluster"
    workdir: Path
    laptop_state: Path
    there_state: Path
    stub_log: Path
    sockets: Path

    def env(self) -> dict[str, str]:
        return clean_environ(ORCH_SSH_DIR=str(self.sockets), ORCH_STATE_DIR=str(self.laptop_state),
                             ORCH_CACHE_DIR="off")

    def orch(self, *args: str, cwd: Path | None = None, timeout: float = 60,
             cluster: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ORCH, *args, "--cluster", str(cluster or self.cluster)], capture_output=True,
                              text=True, env=self.env(), cwd=cwd or self.base, timeout=timeout, check=False)

    def write_cluster(self, name: str, **remote: object) -> Path:
        data = dict(TEST_CLUSTER, launcher={"job_root": str(self.job_root)})
        data["remote"] = {"host": "orchtest", "ssh_config": str(self.sshd.ssh_config),
                          "orch": str(self.base / "orch-there"), "workdir": str(self.workdir), **remote}
        path = self.base / name
        path.write_text(yaml.safe_dump(data))
        return path


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    base = tmp_path_factory.mktemp("remote")
    with sshd_or_skip(base / "sshd", {"SHLVL": "1"}) as server:  # SHLVL=1: bash skips ~/.bashrc (faster)
        there_state, stub_log = base / "state-there", base / "stub.log"
        orch_wrapper(base / "orch-there", ORCH, {
            "ORCH_STATE_DIR": str(there_state), "ORCH_CACHE_DIR": "off", "ORCH_STUB_LOG": str(stub_log),
            "ORCH_STUB_PYTHON": sys.executable, "PATH": f"{STUBS_DIR}:{Path(sys.executable).parent}:/usr/bin:/bin"})
        setup = Setup(server, base, base / "cluster.yaml", base / "jobs", base / "work", base / "state-here",
                      there_state, stub_log, short_socket_dir())
        setup.write_cluster("cluster.yaml")
        yield setup
        for name in os.listdir(setup.sockets):  # stop the control masters this module started
            if not name.startswith("."):
                subprocess.run(["ssh", "-F", str(server.ssh_config), "-o", f"ControlPath={setup.sockets}/{name}",
                                "-O", "exit", "orchtest"], capture_output=True, check=False, timeout=10)
        shutil.rmtree(setup.sockets, ignore_errors=True)
    left = _reap(str(base) + "/")
    assert not left, f"processes this module started outlived it (killed now): {left}"


GONE_WITHIN = 10.0  # seconds a remote follower may outlive its SSH session (it is woken at once)


def _processes(match: Callable[[list[str]], bool]) -> dict[int, list[str]]:
    """The live processes (not zombies) whose argv ``match`` accepts, by pid (read from /proc)."""
    found: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            raw = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:
            continue
        argv = [word.decode(errors="replace") for word in raw.split(b"\0") if word]
        if argv and match(argv):
            found[int(entry)] = argv
    return found


def _reap(marker: str, wait: float = 10.0) -> dict[int, list[str]]:
    """Processes with ``marker`` in their command line still there after ``wait`` s: SIGKILLed, returned."""
    deadline = time.monotonic() + wait
    while True:
        left = _processes(lambda argv: any(marker in word for word in argv))
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


def _remote_followers(remote: Setup, job_dir: Path) -> list[int]:
    """The cluster's ``orch logs JOB_DIR -f`` processes (the laptop's has a --cluster outside workdir)."""
    there = str(remote.workdir / ".orch") + "/cluster-"

    def match(argv: list[str]) -> bool:
        return "logs" in argv and str(job_dir) in argv and any(word.startswith(there) for word in argv)

    return sorted(_processes(match))


def _gone_within(pids: Sequence[int], seconds: float = GONE_WITHIN) -> float:
    start = time.monotonic()
    while any(Path("/proc", str(pid), "cmdline").exists() and Path("/proc", str(pid), "cmdline").read_bytes()
              for pid in pids):
        assert time.monotonic() - start < seconds, f"remote follower(s) {list(pids)} still run after {seconds} s"
        time.sleep(0.1)
    return time.monotonic() - start


def _project(base: Path, name: str = "proj") -> Path:
    proj = base / "laptop" / name
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "train.py").write_text("print('version 1', flush=True)\n")
    (proj / "util.py").write_text("VALUE = 1\n")
    return proj


def test_remote_submit_ships_the_code_and_runs_the_clusters_orch(remote: Setup) -> None:
    proj = _project(remote.base)
    proc = remote.orch("submit", "train.py", "--gpus", "1", "--json", cwd=proj)
    assert proc.returncode == 0, proc.stderr
    job = yaml.safe_load(proc.stdout)
    job_dir = Path(job["job_dir"])
    assert job_dir.parent == remote.job_root and (job_dir / "job.json").is_file()  # the cluster's job folder
    config = yaml.safe_load((job_dir / "job.json").read_text())
    script_path = Path(config["script"]["target"])
    assert remote.workdir in script_path.parents and script_path.name == "train.py"  # the shipped copy
    assert script_path.read_text() == "print('version 1', flush=True)\n"
    assert "shipped 2 changed file(s)" in proc.stderr
    # the cluster's sbatch ran (the stub, on the cluster's PATH); the laptop's index knows the job
    assert '"sbatch"' in remote.stub_log.read_text()
    index = (remote.laptop_state / "jobs.jsonl").read_text()
    assert job["job_id"] in index and str(remote.cluster) in index
    assert job["job_id"] in (remote.there_state / "jobs.jsonl").read_text()
    # orch list here (no cluster file) shows the remote job beside the local ones
    listed = subprocess.run([ORCH, "list"], capture_output=True, text=True, env=remote.env(), cwd=proj,
                            timeout=60, check=False)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if f" {job['job_id']} " in line)
    assert "REMOTE" in row and str(job_dir) in row
    # a second submit of the unchanged tree sends nothing
    again = remote.orch("submit", "train.py", "--gpus", "1", cwd=proj)
    assert again.returncode == 0, again.stderr
    assert "no file changed" in again.stderr and "submitted job" in again.stdout


def test_logs_of_a_remote_job_id_need_no_cluster_flag(remote: Setup) -> None:
    proj = _project(remote.base, "proj-logs")
    proc = remote.orch("submit", "train.py", "--gpus", "1", "--json", cwd=proj)
    assert proc.returncode == 0, proc.stderr
    job = yaml.safe_load(proc.stdout)
    logs = Path(job["job_dir"]) / "logs"
    logs.mkdir(exist_ok=True)
    (logs / f"{job['job_id']}-rank0.out").write_text("hello from the cluster\n")
    elsewhere = remote.base / "laptop" / "local-cluster"  # a local cluster.yaml here: the index still wins
    elsewhere.mkdir(exist_ok=True)
    (elsewhere / "cluster.yaml").write_text(yaml.safe_dump(dict(TEST_CLUSTER)))
    shown = subprocess.run([ORCH, "logs", job["job_id"]], capture_output=True, text=True, env=remote.env(),
                           cwd=elsewhere, timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    assert "hello from the cluster" in shown.stdout


def test_dry_run_runs_nothing_remotely(remote: Setup) -> None:
    proj = _project(remote.base, "proj-dry")
    dead = remote.write_cluster("dead.yaml", ssh_config=str(write_client_config(
        remote.base, _closed_port(), identity=remote.sshd.identity, known_hosts=remote.sshd.known_hosts,
        name="dead_ssh_config")))
    proc = remote.orch("submit", "train.py", "--gpus", "1", "--dry-run", cwd=proj, cluster=dead)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# remote: ships 2 files") and "#SBATCH" in proc.stdout
    assert "# code snapshot: taken on the cluster by its orch at submit (--remote-check shows it)" in proc.stdout
    checked = remote.orch("submit", "train.py", "--gpus", "1", "--dry-run", "--remote-check", cwd=proj)
    assert checked.returncode == 0, checked.stderr
    assert "#SBATCH" in checked.stdout and str(remote.workdir) in checked.stdout  # rendered there
    assert f"# code snapshot: {remote.workdir}" in checked.stdout  # the cluster's orch says what it would copy
    as_json = remote.orch("submit", "train.py", "--gpus", "1", "--dry-run", "--json", cwd=proj, cluster=dead)
    assert as_json.returncode == 0 and "# remote:" in as_json.stderr and yaml.safe_load(as_json.stdout)["script"]
    # from outside the tree: the script's path is rewritten to the shipped copy's
    outside = remote.orch("submit", "proj-dry/train.py", "--gpus", "1", "--dry-run", "--remote-check",
                          cwd=proj.parent)
    assert outside.returncode == 0, outside.stderr
    assert "proj-dry/train.py" in outside.stdout and str(remote.workdir) in outside.stdout
    failing = remote.orch("submit", "train.py", "--gpus", "1", "--dry-run", "--remote-check", cwd=proj, cluster=dead)
    assert failing.returncode == 1 and "refused the connection" in failing.stderr


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when this returns: nothing listens there


def _failing(remote: Setup, cluster: Path, timeout: float = 30) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    proc = remote.orch("status", cluster=cluster, timeout=timeout)
    return proc, time.monotonic() - start


def test_wrong_host_key_is_refused(remote: Setup) -> None:
    other = remote.base / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kind, key = other.with_suffix(".pub").read_text().split()[:2]
    known = remote.base / "wrong_known_hosts"
    known.write_text(f"[127.0.0.1]:{remote.sshd.port} {kind} {key}\n")
    config = write_client_config(remote.base, remote.sshd.port, identity=remote.sshd.identity, known_hosts=known,
                                 name="wrong_key_config")
    proc, took = _failing(remote, remote.write_cluster("wrongkey.yaml", ssh_config=str(config)))
    assert proc.returncode == 1 and took < 15
    assert "host key" in proc.stderr and "HINT:" in proc.stderr and "never accepts" in proc.stderr
    empty = remote.base / "empty_known_hosts"
    empty.write_text("")
    unknown = write_client_config(remote.base, remote.sshd.port, identity=remote.sshd.identity, known_hosts=empty,
                                  name="unknown_key_config")
    proc, took = _failing(remote, remote.write_cluster("unknownkey.yaml", ssh_config=str(unknown)))
    assert proc.returncode == 1 and "host key" in proc.stderr and took < 15
    assert empty.read_text() == ""  # nothing was accepted


def test_refused_key_is_a_clear_error(remote: Setup) -> None:
    stranger = remote.base / "stranger_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    config = write_client_config(remote.base, remote.sshd.port, identity=stranger,
                                 known_hosts=remote.sshd.known_hosts, name="stranger_config")
    proc, took = _failing(remote, remote.write_cluster("stranger.yaml", ssh_config=str(config)))
    assert proc.returncode == 1 and took < 15
    assert "refused the login" in proc.stderr and "identity_file" in proc.stderr


def test_unreachable_port_errors_within_15_seconds(remote: Setup) -> None:
    config = write_client_config(remote.base, _closed_port(), identity=remote.sshd.identity,
                                 known_hosts=remote.sshd.known_hosts, name="closed_config")
    proc, took = _failing(remote, remote.write_cluster("closed.yaml", ssh_config=str(config)))
    assert proc.returncode == 1 and took < 15 and "refused the connection" in proc.stderr
    # a port that accepts TCP but never speaks SSH: bounded too
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        config = write_client_config(remote.base, silent.getsockname()[1], identity=remote.sshd.identity,
                                     known_hosts=remote.sshd.known_hosts, name="silent_config")
        proc, took = _failing(remote, remote.write_cluster("silent.yaml", ssh_config=str(config)))
    assert proc.returncode == 1 and took < 15, (took, proc.stderr)
    assert "HINT:" in proc.stderr


def test_missing_remote_orch_is_a_clear_error(remote: Setup) -> None:
    proc, took = _failing(remote, remote.write_cluster("noorch.yaml", orch="/nonexistent/bin/orch"))
    assert proc.returncode == 1 and took < 15
    assert "there is no orch at '/nonexistent/bin/orch'" in proc.stderr and "remote.orch" in proc.stderr


def test_shipping_sends_only_changed_files(remote: Setup) -> None:
    from orchestrator.remote.ship import dest_for, ship
    from orchestrator.remote.ssh import Connection
    from orchestrator.remote.tree import code_tree
    from orchestrator.spec.clusterparse import parse_cluster

    cluster = parse_cluster(remote.cluster.read_text())
    assert cluster.remote is not None
    conn = Connection(cluster.remote, remote.env())
    proj = _project(remote.base, "proj-ship")
    (proj / "pkg").mkdir()
    (proj / "pkg" / "mod.py").write_text("A = 1\n")
    methods = ["tar", *(["rsync"] if shutil.which("rsync") else [])]
    for method in methods:
        env = {**remote.env(), "ORCH_REMOTE_SHIP": method}
        dest = remote.workdir / dest_for(str(remote.workdir), code_tree(proj))[len(str(remote.workdir)) + 1:]
        shutil.rmtree(dest, ignore_errors=True)
        first = ship(conn, code_tree(proj / "train.py"), str(remote.workdir), env)
        assert (first.sent, first.removed) == (3, 0)
        assert (dest / "pkg" / "mod.py").read_text() == "A = 1\n"
        assert ship(conn, code_tree(proj), str(remote.workdir), env).sent == 0  # unchanged: nothing sent
        (proj / "util.py").write_text("VALUE = 22\n")
        (proj / "pkg" / "mod.py").unlink()
        changed = ship(conn, code_tree(proj), str(remote.workdir), env)
        assert (changed.sent, changed.removed) == (1, 1)
        assert (dest / "util.py").read_text() == "VALUE = 22\n" and not (dest / "pkg" / "mod.py").exists()
        (proj / "pkg" / "mod.py").write_text("A = 1\n")


def test_git_tree_ships_tracked_and_unignored_files(tmp_path: Path) -> None:
    from orchestrator.remote.tree import code_tree

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("data/\n*.ckpt\n")
    (repo / "src" / "train.py").write_text("print(1)\n")
    (repo / "data").mkdir()
    (repo / "data" / "big.bin").write_text("x")
    (repo / "model.ckpt").write_text("x")
    tree = code_tree(repo / "src" / "train.py")
    assert tree.root == repo.resolve() and tree.git
    assert tree.files == (".gitignore", "src/train.py")
    loose = tmp_path / "loose"
    (loose / ".venv").mkdir(parents=True)
    (loose / ".venv" / "x.py").write_text("")
    (loose / "a.py").write_text("")
    assert code_tree(loose / "a.py").files == ("a.py",)


def test_logs_follow_survives_a_dropped_connection(remote: Setup) -> None:
    """orch logs -f through SSH; the control master is killed mid-stream; every line comes once. The
    cluster's follower of the dropped connection ends; the one started anew ends with the job."""
    script = remote.base / "slow.py"
    script.write_text("import time\nfor i in range(40):\n    print(f'line {i}', flush=True)\n    time.sleep(0.25)\n")
    run = subprocess.Popen([ORCH, "run", str(script), "--nproc", "1", "--job-root", str(remote.job_root / "runs")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=remote.base,
                           env=clean_environ(ORCH_STATE_DIR=str(remote.there_state)), start_new_session=True)
    follower: subprocess.Popen[str] | None = None
    dropped: list[int] = []  # the cluster's follower when the master was killed
    try:
        deadline = time.monotonic() + 60
        while not list((remote.job_root / "runs").glob("*/logs/local-rank0.out")):
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.2)
        job_dir = next((remote.job_root / "runs").glob("*/job.json")).parent
        follower = subprocess.Popen([ORCH, "logs", str(job_dir), "-f", "--cluster", str(remote.cluster)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=remote.env(),
                                    cwd=remote.base, start_new_session=True)
        killed = threading.Event()

        def kill_master() -> None:
            time.sleep(3)
            pid = _connection(remote).master_pid()
            if pid:
                dropped.extend(_remote_followers(remote, job_dir))
                os.kill(pid, 9)
                killed.set()

        threading.Thread(target=kill_master, daemon=True).start()
        run.wait(timeout=90)
        assert killed.wait(30)
        _gone_within(dropped)  # the dropped connection's follower did not wait for the job's end
        # an orch run of a script writes no result.json: the test ends the run the way a job's does
        (job_dir / "result.json").write_text('{"status": "completed"}')
        out, err = follower.communicate(timeout=60)
        _gone_within(_remote_followers(remote, job_dir))  # the second one ended with the job
    finally:
        for proc in (run, follower):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert len(dropped) == 1, dropped
    assert "dropped; reconnecting" in err
    lines = [line for line in out.splitlines() if line.startswith("line ")]
    assert lines == [f"line {i}" for i in range(40)], (out, err)


def _connection(remote: Setup) -> Connection:
    from orchestrator.remote.ssh import Connection
    from orchestrator.spec.clusterparse import parse_cluster

    spec = parse_cluster(remote.cluster.read_text()).remote
    assert spec is not None
    return Connection(spec, remote.env())


def _quiet_job(remote: Setup, name: str) -> Path:
    """A local run's folder on the "cluster" whose log says one line and never ends (no result.json)."""
    from orchestrator.records.jobcreate import write_run_config
    from orchestrator.spec.runconfig import RunConfig

    folder = remote.job_root / "quiet" / f"{name}-20260102T030405-abc123"
    (folder / "logs").mkdir(parents=True)
    write_run_config(folder, RunConfig(
        mode="local", job_name=name, job_file="/jobs/x.py", params={}, nodes=1, gpus_per_node=0,
        tasks_per_node=1, cpus_per_task=1, job_dir=str(folder), created="2026-01-02T03:04:05"))
    (folder / "logs" / "local-rank0.out").write_text("first\n")
    return folder


def _laptop_follower(remote: Setup, job_dir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The laptop's orch logs -f (its own session: killpg reaches its ssh client), once the first line
    came; and the cluster's follower it started."""
    proc = subprocess.Popen([ORCH, "logs", str(job_dir), "-f", "--cluster", str(remote.cluster)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env=remote.env(), cwd=remote.base, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"first\n"
    deadline = time.monotonic() + 30
    while not (there := _remote_followers(remote, job_dir)):
        assert time.monotonic() < deadline, "no orch logs -f on the cluster"
        time.sleep(0.1)
    assert len(there) == 1, there
    return proc, there[0]


def test_remote_follower_ends_when_its_client_is_gone(remote: Setup) -> None:
    """The cluster's orch logs -f of a quiet log (it writes nothing that could fail) ends within seconds
    when its SSH session goes away, whichever way the laptop's side goes: killed outright (the
    connection stays: only the session's channel closes), SIGTERM to orch alone, its reader quitting."""
    job_dir = _quiet_job(remote, "quiet")
    conn = _connection(remote)
    started: list[subprocess.Popen[bytes]] = []
    try:
        # 1. the laptop's orch and its ssh client SIGKILLed (a closed laptop lid is kinder)
        laptop, there = _laptop_follower(remote, job_dir)
        started.append(laptop)
        master = conn.master_pid()
        assert master
        time.sleep(2.0)  # a quiet log whose session is there: followed on, on both sides
        assert laptop.poll() is None and _remote_followers(remote, job_dir) == [there]
        os.killpg(laptop.pid, signal.SIGKILL)
        laptop.wait()
        took = _gone_within([there])
        assert conn.master_pid() == master  # the same connection: the channel's end was enough
        # 2. SIGTERM to the laptop's orch alone: it ends its ssh client, which would outlive it
        laptop, there = _laptop_follower(remote, job_dir)
        started.append(laptop)
        clients = [int(pid) for pid in subprocess.run(["pgrep", "-P", str(laptop.pid)], capture_output=True,
                                                      text=True, check=False).stdout.split()]
        assert clients
        laptop.send_signal(signal.SIGTERM)
        code = laptop.wait(timeout=30)
        _gone_within([there])
        _gone_within(clients)
        assert code == 128 + signal.SIGTERM
        # 3. the laptop's reader quits (orch logs -f JOB | head -1): orch notices, its session ends
        laptop, there = _laptop_follower(remote, job_dir)
        started.append(laptop)
        assert laptop.stdout is not None
        laptop.stdout.close()
        assert laptop.wait(timeout=GONE_WITHIN) == 0
        _gone_within([there])
    finally:
        for proc in started:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert took < GONE_WITHIN and not _remote_followers(remote, job_dir)


def _sshd_of(pid: int) -> int:
    """The sshd process above ``pid`` (the one that holds its session's pipes)."""
    while pid > 1:
        stat = Path("/proc", str(pid), "stat").read_text()
        pid = int(stat.rpartition(")")[2].split()[1])
        if Path("/proc", str(pid), "comm").read_text().startswith("sshd"):
            return pid
    raise AssertionError("no sshd above the remote follower")


def test_logs_follow_replaces_a_dead_masters_socket(remote: Setup) -> None:
    """A control master killed outright leaves its socket: orch logs -f checks it rather than trusting
    it, so ssh's refusal never reaches the user's terminal and the stream runs through a new master."""
    job_dir = _quiet_job(remote, "stale")
    conn = _connection(remote)
    conn.open(check=True)
    dead = conn.master_pid()
    assert dead
    os.kill(dead, signal.SIGKILL)
    _gone_within([dead])
    assert conn.control_path().exists() and conn.master_pid() is None  # the socket outlives its master
    proc = subprocess.Popen([ORCH, "logs", str(job_dir), "-f", "--cluster", str(remote.cluster)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=remote.env(), cwd=remote.base, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"first\n"
        master = conn.master_pid()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    assert master and master != dead
    assert b"Control socket" not in err, err


def test_a_silent_drop_leaves_no_follower_behind(remote: Setup) -> None:
    """A connection that drops without a word (a suspended laptop): the cluster's sshd never learns it
    (here: stopped with SIGSTOP), so the follower keeps its pipe. The laptop's master gives up (server
    alive checks, 15 s), orch logs -f reconnects, and its restart ends the follower it left there."""
    job_dir = _quiet_job(remote, "silent")
    laptop, there = _laptop_follower(remote, job_dir)
    stopped = _sshd_of(there)
    os.kill(stopped, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 90
        while not [pid for pid in _remote_followers(remote, job_dir) if pid != there]:
            assert time.monotonic() < deadline and laptop.poll() is None, "orch logs -f did not reconnect"
            time.sleep(0.2)
        _gone_within([there])
        assert laptop.poll() is None  # the new one goes on
    finally:
        os.kill(stopped, signal.SIGKILL)
        os.killpg(laptop.pid, signal.SIGKILL)
        laptop.wait()
    _gone_within(_remote_followers(remote, job_dir))


@pytest.mark.parametrize(("remote_block", "field"), [
    ({"host": "-oProxyCommand=touch /tmp/orch-pwned"}, "remote.host"),
    ({"host": "login", "user": "a b"}, "remote.user"),
    ({"host": "login", "proxy_jump": "-J evil"}, "remote.proxy_jump"),
    ({"host": "login", "port": 0}, "remote.port"),
    ({"host": "login", "workdir": "a\nb"}, "remote.workdir"),
    ({"host": "login", "hostname": "x"}, "remote.hostname"),
    ({"user": "a"}, "remote.host"),
])
def test_remote_block_is_validated(remote_block: dict[str, object], field: str) -> None:
    from orchestrator.errors import ConfigError
    from orchestrator.spec.clusterparse import validate_cluster

    with pytest.raises(ConfigError) as caught:
        validate_cluster(dict(TEST_CLUSTER, remote=remote_block), "cluster.yaml")
    assert field in caught.value.message


def test_control_socket_folder_must_be_private(tmp_path: Path) -> None:
    from orchestrator.remote.ssh import RemoteError, socket_dir

    folder = tmp_path / "sockets"
    assert socket_dir({"ORCH_SSH_DIR": str(folder)}) == folder and (folder.stat().st_mode & 0o777) == 0o700
    folder.chmod(0o755)
    with pytest.raises(RemoteError, match="not private"):
        socket_dir({"ORCH_SSH_DIR": str(folder)})


def test_shipping_keys_on_content_not_size_and_time(remote: Setup) -> None:
    """An edit that keeps a file's size and modification time (``cp -p``, ``rsync -t``, ``tar x``, a clock
    set back) is shipped: the remote copy is compared by content, with rsync and with the tar stream."""
    from orchestrator.remote.ship import dest_for, ship
    from orchestrator.remote.ssh import Connection
    from orchestrator.remote.tree import code_tree
    from orchestrator.spec.clusterparse import parse_cluster

    cluster = parse_cluster(remote.cluster.read_text())
    assert cluster.remote is not None
    conn = Connection(cluster.remote, remote.env())
    proj = _project(remote.base, "proj-same-size")
    (proj / "cfg.py").write_text("TIME = '01:00:00'\n")
    (proj / "latest").symlink_to("cfg.py")
    for method in ["tar", *(["rsync"] if shutil.which("rsync") else [])]:
        env = {**remote.env(), "ORCH_REMOTE_SHIP": method}
        dest = remote.workdir / dest_for(str(remote.workdir), code_tree(proj))[len(str(remote.workdir)) + 1:]
        shutil.rmtree(dest, ignore_errors=True)
        assert ship(conn, code_tree(proj), str(remote.workdir), env).sent == len(code_tree(proj).files)
        assert ship(conn, code_tree(proj), str(remote.workdir), env).sent == 0  # unchanged: nothing sent
        before = (proj / "cfg.py").stat()
        (proj / "cfg.py").write_text("TIME = '09:30:00'\n")  # the same size
        os.utime(proj / "cfg.py", ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same time
        assert (proj / "cfg.py").stat().st_size == before.st_size
        (proj / "latest").unlink()
        (proj / "latest").symlink_to("cfg.pz")  # a link to another target of the same length
        changed = ship(conn, code_tree(proj), str(remote.workdir), env)
        assert (changed.sent, changed.method) == (2, method), changed
        assert (dest / "cfg.py").read_text() == "TIME = '09:30:00'\n", method
        assert os.readlink(dest / "latest") == "cfg.pz", method
        assert ship(conn, code_tree(proj), str(remote.workdir), env).sent == 0
        (proj / "cfg.py").write_text("TIME = '01:00:00'\n")
        os.utime(proj / "cfg.py", ns=(before.st_atime_ns, before.st_mtime_ns))
        (proj / "latest").unlink()
        (proj / "latest").symlink_to("cfg.py")


def test_the_cli_forwards_the_verbs_remote_forward_knows() -> None:
    """The CLI's start-up path keeps its own copy of the forwarded verbs (it does not import remote/):
    the two lists are the same, and every verb that names jobs is one of them."""
    from orchestrator.cli import REMOTE_VERBS
    from orchestrator.remote.forward import REF_VERBS, VERBS

    assert set(VERBS) == REMOTE_VERBS
    assert set(REF_VERBS) <= REMOTE_VERBS and "resubmit" in REF_VERBS
