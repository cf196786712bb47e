"""Paths (``ROOT`` the checkout, ``TESTS`` the tests' folder, ``STUBS_DIR``), a clean environment for
subprocesses, the test cluster, stub Slurm commands (``Stubs``), golden scripts and who listens where (/proc)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parents[1]  # tests/: the fixture folders jobs/, scripts/, stubs/, golden/
STUBS_DIR = TESTS / "stubs"
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


GOLDEN_DIR = TESTS / "golden"


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
