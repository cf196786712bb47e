"""Helpers shared by the tests, in one module (plain module: import it as ``from support import ...``).

Paths (``ROOT`` the checkout, ``TESTS`` this folder, ``STUBS_DIR``), a clean environment, stub Slurm commands
(``Stubs``), golden scripts, who listens where (/proc), refusals through the real CLI (``expect_refused``,
``refused``, ``cluster_file``) and real ``orch`` processes on a finished run (``orch``, ``resume``).

Test modules must not import ``conftest``: with tests/ and tests/e2e/ each holding one, the name
``conftest`` means whichever pytest loaded first. Fixtures stay in conftest.py.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent  # tests/: the fixture folders jobs/, scripts/, stubs/, golden/
STUBS_DIR = Path(__file__).resolve().parent / "stubs"
# The installed console script next to this interpreter (tests prove the real CLI too).
ORCH = shutil.which("orch", path=str(Path(sys.executable).parent)) or "orch"

# Variables that would leak the developer's (or an allocation's) setup into a test.
_LEAKY_PREFIXES = ("SLURM_", "SLURMD_", "SBATCH_", "SRUN_", "ORCH_", "WANDB_", "MLFLOW_")  # trackers: never online
_LEAKY_NAMES = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
                          "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES"})

# A test cluster like the shipped example, but owned by the tests (the example may change).
TEST_CLUSTER: dict[str, Any] = {
    "name": "testcluster",
    "partitions": [
        {"name": "gpu", "nodes": "gpu[001-064]", "gpus_per_node": 8, "cpus_per_node": 96,
         "mem_per_node": "1000G", "max_time": "2-00:00:00", "gpu_type": "a100"},
        {"name": "debug", "nodes": "dbg[1-4]", "gpus_per_node": 4, "cpus_per_node": 32,
         "mem_per_node": "256G", "max_time": "02:00:00"},
        {"name": "cpu", "nodes": "cpu[001-128]", "gpus_per_node": 0, "cpus_per_node": 64,
         "mem_per_node": "256G", "max_time": "1-00:00:00"},
    ],
    "defaults": {"partition": "gpu", "time": "04:00:00"},
    "env": {"NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "ib0", "OMP_NUM_THREADS": "1"},
    "launcher": {"preempt_before": 180},
}


def batch_task_env(restarts: int = 1) -> dict[str, str]:
    """Slurm's variables for the one task of a 1-node CPU job on ``cpu001`` (127.0.0.1), without MASTER_*: the batch
    script derives MASTER_PORT from the job id, as on a cluster. The job id is drawn at random until that port is
    free on loopback for each restart count below ``restarts`` (a fixed id gives every test the same port: two
    running at once, or a port the OS lent out as an ephemeral one, and rank 0 cannot listen)."""
    import random
    import socket

    from orchestrator.env.masterport import DEFAULT_PORT_RANGE, master_port
    from orchestrator.env.taskenv import simulate_slurm_task_envs

    while True:
        job_id = random.randrange(100_000, 10_000_000)
        with contextlib.ExitStack() as held:
            try:
                for restart in range(restarts):
                    sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    sock.bind(("127.0.0.1", master_port(job_id, restart, DEFAULT_PORT_RANGE)))
            except OSError:
                continue
        task = next(iter(simulate_slurm_task_envs(["cpu001"], 1, str(job_id), 0, "127.0.0.1", 1)))
        return {k: v for k, v in task.items() if not k.startswith("MASTER_")}


def is_leaky_var(name: str) -> bool:
    if name.startswith("ORCH_STUB_") or name == "ORCH_STATE_DIR":  # set by fixtures, on purpose (the
        return False  # state folder keeps every test away from the user's index of submitted jobs)
    return name.startswith(_LEAKY_PREFIXES) or name in _LEAKY_NAMES


def clean_environ(**extra: str) -> dict[str, str]:
    """``os.environ`` without the leaky variables, plus ``extra`` (for subprocesses)."""
    env = {k: v for k, v in os.environ.items() if not is_leaky_var(k)}
    env.update(extra)
    return env


@dataclass
class Stubs:
    """The stub Slurm commands' record (see tests/stubs/_stub.py)."""

    log: Path
    dir: Path = STUBS_DIR

    def records(self, cmd: str | None = None, event: str | None = "call") -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        entries = [json.loads(line) for line in self.log.read_text(encoding="ascii").splitlines() if line]
        return [e for e in entries
                if (cmd is None or e["cmd"] == cmd) and (event is None or e["event"] == event)]

    def argvs(self, cmd: str) -> list[list[str]]:
        return [e["argv"] for e in self.records(cmd)]

    def env(self, **extra: str) -> dict[str, str]:
        """A clean subprocess environment with the stubs first on PATH."""
        return clean_environ(PATH=f"{self.dir}{os.pathsep}{os.environ.get('PATH', '')}",
                             ORCH_STUB_LOG=str(self.log), ORCH_STUB_PYTHON=sys.executable, **extra)




def load_stub_module() -> ModuleType:
    """tests/stubs/_stub.py as a module (its ``sbatch_script_options`` parses #SBATCH lines as Slurm does)."""
    spec = importlib.util.spec_from_file_location("orch_test_stub", STUBS_DIR / "_stub.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GOLDEN_DIR = Path(__file__).resolve().parent / "golden"


UPDATE_GOLDEN = "ORCH_UPDATE_GOLDEN"  # =1: write the golden files from the rendered scripts, on purpose


def check_golden(name: str, text: str) -> None:
    """The rendered script must equal tests/golden/NAME. A missing golden file fails too (a deleted
    golden must not pass); ``ORCH_UPDATE_GOLDEN=1`` writes them, to be reviewed and committed."""
    import difflib

    import pytest

    path = GOLDEN_DIR / name
    if os.environ.get(UPDATE_GOLDEN) == "1":
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"tests/golden/{name} is missing; run the tests with {UPDATE_GOLDEN}=1 to write it, "
                    "then review and commit it")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"{name} (golden)", f"{name} (rendered)"))
        pytest.fail(f"the rendered script differs from tests/golden/{name}; if the change is intended, "
                    f"rerun with {UPDATE_GOLDEN}=1 and review the diff:\n{diff}")


# Who listens where, from /proc/net/tcp{,6} (tests/task/test_reaper.py, tests/e2e/test_e2e_procs.py).
LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
LOOPBACK4 = "0100007F"
LOOPBACK6 = "00000000000000000000000001000000"


def listeners(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp{,6} write them) listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            addr, hexport = fields[1].rsplit(":", 1)
            if int(hexport, 16) == port and fields[3] == LISTEN:
                found.append(addr)
    return found


# Refusals through the real CLI (``orchestrator.cli.main``, imported when called: importing support stays light).

def cluster_file(tmp_path: Path, **sections: Any) -> Path:
    """TEST_CLUSTER with its job root under ``tmp_path`` and top-level ``sections`` replaced, as cluster.yaml."""
    data: dict[str, Any] = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"],
                                                          "job_root": str(tmp_path / "jobs")}}
    data.update(sections)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def expect_refused(argv: list[str], capsys: pytest.CaptureFixture[str], must_name: list[str],
                   jobs: Path | None = None, stubs: Stubs | None = None) -> str:
    """Exit 2, ``orch: error:`` naming ``must_name``, a HINT, no traceback, nothing written or queued."""
    from orchestrator.cli import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "orch: error:" in err and "HINT:" in err, err
    assert "Traceback" not in err, err
    for text in must_name:
        assert text in err, f"{text!r} not in {err!r}"
    if jobs is not None:
        assert not jobs.exists() or not any(jobs.iterdir()), list(jobs.iterdir())
    if stubs is not None:
        assert stubs.records() == []
    return err


FAST = 2.0  # seconds: what a refusal may take at most (the probe ran for minutes)


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *names: str) -> str:
    """Exit 2 within FAST seconds, one ``orch: error:`` naming each of ``names``, no traceback."""
    from orchestrator.cli import main

    start = time.monotonic()
    code = main(argv)
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("orch: error:") == 1 and "Traceback" not in err, err
    assert took < FAST, took
    for name in names:
        assert name in err, (name, err)
    return err


# Real `orch` processes on a copy of one finished local run (the fixtures finished_run and job_copy,
# tests/conftest.py): refused resumes, locks, damaged folders.

def orch(*args: str, cwd: Path, timeout: float = 300, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env=clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", "")), **kwargs)


TEARDOWN_ABORT = "terminate called without an active exception"  # gloo's threads, at interpreter exit


def aborted_in_teardown(proc: subprocess.CompletedProcess[str]) -> bool:
    said = proc.stdout + proc.stderr
    return proc.returncode != 0 and ("SIGABRT" in said or TEARDOWN_ABORT in said or "exitcode: -6" in said)


def once_more_on_teardown_abort(start: Callable[[], subprocess.CompletedProcess[str]], tries: int = 3) -> (
        subprocess.CompletedProcess[str]):
    """Run ``start`` again (up to ``tries`` runs in all) when a gloo process aborted in interpreter teardown
    after training (SIGABRT, exit -6 under torchrun, "terminate called without an active exception"): torch's
    gloo threads do that now and then under load, with or without orch; a reference launcher's run is no
    result then. Under CI's load two aborts in a row have been seen; three in a row have not."""
    proc = start()
    for _ in range(tries - 1):
        if not aborted_in_teardown(proc):
            break
        proc = start()
    return proc


def assert_refused(proc: subprocess.CompletedProcess[str], *names: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "orch: error:" in proc.stderr and "HINT:" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for name in names:
        assert name in proc.stderr, f"{name!r} not in {proc.stderr!r}"


def resume(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return orch("run", "--resume", str(folder), *extra, "epochs=2", cwd=folder.parent)


def no_rank_started(folder: Path, before: float) -> bool:
    log = folder / "logs" / "local-rank0.out"
    return not log.exists() or log.stat().st_mtime <= before


# --- a job folder orch reads back and canned answers of the Slurm clients (status/list/logs of damaged records)

CANNED_JOB_ID = "4242"

CANNED_SUBMIT = "2026-11-25T10:00:00"

HANG = 20  # seconds: anything slower is a hang


@contextlib.contextmanager
def no_hang(seconds: int = HANG) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise TimeoutError(f"hung for {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from orchestrator.cli import main

    with no_hang():
        code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    assert code in (0, 1, 2), (code, err)
    return code, out, err


def make_job(root: Path, name: str = "smoke-20261125-100000-abc123") -> Path:
    from orchestrator.spec.runconfig import RunConfig, run_config_text

    folder = root / name
    (folder / "logs").mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    folder.chmod(0o750)
    config = RunConfig(mode="slurm", job_name="smoke", job_file="/jobs/smoke.py", params={"epochs": 2}, nodes=1,
                       gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                       created="2026-11-25T10:00:00+00:00")
    (folder / "job.json").write_text(run_config_text(config))
    (folder / "job_id").write_text(CANNED_JOB_ID + "\n")
    (folder / "logs" / f"slurm-{CANNED_JOB_ID}.out").write_text(f"orch: job {CANNED_JOB_ID} (restart 0) on node1: hi\n")
    (folder / "logs" / f"{CANNED_JOB_ID}-rank0.out").write_text("epoch 1 loss 0.5\n")
    (folder / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "train_loss": 0.5, "test_loss": 0.4}) + "\n")
    return folder


def cluster_for(tmp_path: Path, root: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text("name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 0, cpus_per_node: 4, "
                    f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    return path


# --- stand-in Slurm clients that answer any number of ids and log the size of every call (batching)

ARGV_BOUND = 64 * 1024  # what a call may carry in all (Linux: 128 KiB per argument, ~2 MiB in all)


# SubmitTime N/A: no folder is taken for a reused id. squeue holds the ids divisible by 3 (RUNNING);
# sacct answers the others (COMPLETED, or FAILED for ids ending in 7): every id gets an answer only if
# every batch is asked.
SCALE_STAND_IN = """\
import json, os, sys
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
ids = []
for arg in args:
    if arg.startswith("--jobs="):
        ids += [i for i in arg[len("--jobs="):].split(",") if i]
if name == "scancel":
    ids = [a for a in args if not a.startswith("-")]
with open(os.environ["SCALE_SLURM_LOG"], "a") as fh:
    fh.write(json.dumps({"name": name, "argv_bytes": sum(len(a.encode()) + 1 for a in sys.argv),
                         "longest": max(len(a.encode()) for a in sys.argv), "ids": len(ids),
                         "first": ids[0] if ids else None, "completion": "--completion" in args}) + "\\n")
if name == "squeue":
    out = [f"{i}|RUNNING|None|node1|1:00|0|N/A|scale" for i in ids if int(i.split("_")[0]) % 3 == 0]
elif name == "sacct" and "--completion" in args:
    out = [f"{i}|COMPLETED|0:0|node1|00:01:00|scale" for i in ids]
elif name == "sacct":
    out = [f"{i}|{'FAILED' if i.endswith('7') else 'COMPLETED'}|{'1:0' if i.endswith('7') else '0:0'}|node1|"
           f"00:01:00|60|cpu=1,gres/gpu=2|N/A|scale" for i in ids]
else:
    out = []
sys.stdout.write("".join(line + "\\n" for line in out))
"""


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def assert_bounded(log: Path, name: str) -> list[dict[str, Any]]:
    made = [c for c in calls(log) if c["name"] == name]
    assert made, f"no {name} call"
    assert max(c["argv_bytes"] for c in made) <= ARGV_BOUND
    from orchestrator.slurm import client

    assert max(c["longest"] for c in made) <= client.ID_BATCH_BYTES + 64
    return made


def preempt_and_resume(script: Path, tmp_path: Path, timeout: float = 300) -> tuple[Path, Path]:
    """``orch run SCRIPT --nproc 2 --cpu`` twice: once uninterrupted (``<tmp>/plain``), once signalled (USR2 to
    orch run, once every rank wrote ``ready<rank>`` at ``--wait-at 3``), which must end preempted with the
    requeue file, then ``orch run --resume``. Returns the two output folders (the scripts write
    ``params<rank>.json``) and asserts both runs completed."""
    env = clean_environ(PYTHONPATH=str(ROOT))
    env.pop("OMP_NUM_THREADS", None)
    plain, preempted, jobs = tmp_path / "plain", tmp_path / "preempted", tmp_path / "jobs"
    done = subprocess.run([ORCH, "run", str(script), "--nproc", "2", "--cpu", "--job-root",
                           str(tmp_path / "plain-jobs"), "--", "--out", str(plain)], cwd=tmp_path, env=env,
                          capture_output=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    proc = subprocess.Popen([ORCH, "run", str(script), "--nproc", "2", "--cpu", "--job-root", str(jobs), "--",
                             "--out", str(preempted), "--wait-at", "3"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while not all((preempted / f"ready{r}").exists() for r in (0, 1)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGUSR2)  # orch run forwards it to the ranks, as the batch script does
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, stderr.decode(errors="replace")
    (job_dir,) = jobs.iterdir()
    assert b"preempted" in stdout and (job_dir / "requeue").exists(), stdout.decode(errors="replace")
    assert not (preempted / "params0.json").exists()  # it stopped before the end
    resumed = subprocess.run([ORCH, "run", "--resume", str(job_dir)], cwd=tmp_path, env=env, capture_output=True,
                             timeout=timeout, check=False)
    assert resumed.returncode == 0, resumed.stderr.decode(errors="replace")
    return plain, preempted


def training_job(root: Path, name: str, *, job_id: str | None = None, mode: str = "slurm", world: int = 2,
                 second: int = 0, epochs: int = 2) -> Path:
    """A job folder as orch submit / orch run leave it (orch's own writers): job.json, logs/, checkpoints/ and,
    with ``job_id``, the id sbatch gave. ``second`` orders folders (newer folders have larger ones)."""
    from orchestrator.records.atomic import write_private
    from orchestrator.records.jobcreate import create_job_dir, write_config
    from orchestrator.spec.runconfig import RunConfig

    folder = create_job_dir(root / f"{name}-20261125-10{second // 60:02d}{second % 60:02d}-abc{second:03d}")
    write_config(folder, RunConfig(mode=mode, job_name=name, job_file="/jobs/smoke.py", params={"epochs": epochs},
                                   nodes=1, gpus_per_node=0, tasks_per_node=world, cpus_per_task=1,
                                   job_dir=str(folder), created=f"2026-11-25T10:{second // 60:02d}:{second % 60:02d}"))
    if job_id is not None:
        write_private(folder / "job_id", job_id + "\n")
    return folder


# --- stand-in Slurm clients (tests/commands, tests/views) ------------------------------------------

FAKE_CLIENT = """\
import json, os, sys
name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
with open(os.environ["FAKE_SLURM_LOG"], "a") as fh:
    fh.write(json.dumps([name, *args]) + "\\n")
spec = json.load(open(os.environ["FAKE_SLURM_SPEC"]))
key = name + (" --completion" if "--completion" in args else "")
reply = spec.get(key, {"stdout": "", "stderr": name + ": no canned answer\\n", "rc": 1})
sys.stdout.write(reply.get("stdout", ""))
sys.stderr.write(reply.get("stderr", ""))
sys.exit(reply.get("rc", 0))
"""
CLIENTS = ("squeue", "sacct", "scancel", "scontrol")
class FakeSlurm:
    def __init__(self, folder: Path) -> None:
        self.bin = folder / "bin"
        self.bin.mkdir(parents=True)
        self.spec = folder / "spec.json"
        self.log = folder / "calls.jsonl"
        self.set({})
        for name in CLIENTS:
            exe = self.bin / name
            exe.write_text(f"#!{sys.executable}\n{FAKE_CLIENT}")
            exe.chmod(0o755)

    def set(self, replies: dict[str, Any]) -> None:
        tmp = self.spec.with_suffix(".tmp")
        tmp.write_text(json.dumps(replies))
        tmp.replace(self.spec)

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


# --- a real terminal: tmux (orch top's terminal tests; tests/slurm/cluster.sh installs tmux) -------------

class Tmux:
    """One tmux server of its own (``-L``: a private socket) running one command in a 200x50 pane."""

    SIZE = (200, 50)

    def __init__(self, name: str, command: str, env: dict[str, str], cwd: Path) -> None:
        tmux = shutil.which("tmux")
        assert tmux is not None, "tmux is not installed: tests/slurm/cluster.sh installs it (apt-get install tmux)"
        # CI runs showed the table drawn 80x24 (columns cut, "3/10" never shown). Both ways to get that are closed:
        # COLUMNS and LINES in the program's environment come before the terminal's size for
        # shutil.get_terminal_size (Textual's): COLUMNS=80 LINES=24 draw 80x24 in a 200x50 pane; and the pane's
        # own size is checked below before the program starts in it.
        env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        width, height = self.SIZE
        # The size is the server's own setting from its start (a config file of its own, never the user's), then
        # manual once the session exists (a window without a client keeps it; window-size manual in the config
        # file crashes tmux 3.3a's server at new-session).
        conf = cwd / f".tmux-{name}.conf"
        conf.write_text(f"set -g default-size {width}x{height}\n", encoding="utf-8")
        self.argv = [tmux, "-L", f"{name}-{os.getpid()}", "-f", str(conf)]
        self.env = {**env, "TERM": "xterm-256color"}
        # a placeholder first (cat waits on the pane's terminal): the command starts only in a pane of that size
        self.run("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "main", "cat", cwd=cwd)
        self.run("set-option", "-g", "window-size", "manual")
        self.run("resize-window", "-t", "main", "-x", str(width), "-y", str(height))
        size = self.run("display-message", "-p", "-t", "main", "#{pane_width}x#{pane_height}").strip()
        if size != f"{width}x{height}":
            self.close()
            version = self.run_text("-V")
            raise AssertionError(f"tmux gave the pane {size}, not {width}x{height} ({version}): the screen "
                                 "checks below would read a cut table")
        self.run("respawn-pane", "-k", "-t", "main", "-c", str(cwd), command)

    def run(self, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run([*self.argv, *args], capture_output=True, text=True, env=self.env, cwd=cwd,
                              timeout=30, check=False)
        assert proc.returncode == 0, f"tmux {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def run_text(self, *args: str) -> str:
        """tmux's output, whatever its exit status."""
        proc = subprocess.run([*self.argv, *args], capture_output=True, text=True, env=self.env, timeout=30,
                              check=False)
        return (proc.stdout or proc.stderr).strip()

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "main")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "main", *keys)

    def wait_for(self, test: Any, timeout: float = 60, what: str = "the expected screen") -> str:
        """The screen once ``test(screen)`` is true; an AssertionError with the last screen otherwise."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return screen
            time.sleep(0.3)
        raise AssertionError(f"{what} did not show within {timeout:.0f} s; the screen:\n{screen}")

    def close(self) -> None:
        subprocess.run([*self.argv, "kill-server"], capture_output=True, env=self.env, timeout=30, check=False)


def screen_row(screen: str, name: str) -> str:
    """The line of the table that shows the job ``name`` (empty when none does)."""
    return next((line for line in screen.splitlines() if f" {name} " in f" {line} "), "")


class DictStore:
    """The part of a c10d store the in-process agents use (set, get, add, check, multi_get), in memory: their decisions
    without processes (tests/restarts/test_agent*.py, test_store.py, test_heartbeat.py)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def set(self, key: str, value: str) -> None:
        self.data[key] = value.encode()

    def get(self, key: str) -> bytes:
        return self.data[key]

    def add(self, key: str, amount: int) -> int:
        value = int(self.data.get(key, b"0")) + amount
        self.data[key] = str(value).encode()
        return value

    def check(self, keys: list[str]) -> bool:
        return all(k in self.data for k in keys)

    def multi_get(self, keys: list[str]) -> list[bytes]:
        return [self.data[k] for k in keys]
