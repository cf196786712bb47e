"""The layer rules (pyproject.toml [tool.importlinter]) hold, and each contract can fail.

Every contract is run on a copy of the package with one deliberately wrong import added: the
contract must then be broken (so none passes vacuously), and the copy without the change is kept.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

LINT = Path(sys.executable).with_name("lint-imports")
CONTRACT_IDS = ("layers", "acyclic", "records-concepts", "records-core", "torch-only-in-runtime", "restarts-layers",
                "launchstyles-layers", "interfaces-through-service", "pure-core", "cli-start-up", "dry-run")


def lint(cwd: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), str(ROOT / "tests" / "architecture")])
    args = [str(LINT), "--no-cache", "--no-logo", *(a for c in contracts for a in ("--contract", c))]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and of pyproject.toml (the contracts), outside the source tree, that keeps every
    contract before any change (checked once here: a contract then broken in a copy is broken by the change)."""
    base = tmp_path_factory.mktemp("contracts")
    shutil.copytree(ROOT / "orchestrator", base / "orchestrator", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", base / "pyproject.toml")
    proc = lint(base)
    assert proc.returncode == 0 and f"{len(CONTRACT_IDS)} kept, 0 broken" in proc.stdout, proc.stdout + proc.stderr
    return base


@pytest.fixture()
def tree(pristine: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "tree"
    shutil.copytree(pristine, copy)
    return copy


def test_the_real_tree_keeps_every_contract() -> None:
    proc = lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for contract_id in CONTRACT_IDS:  # every contract was checked, none skipped
        assert f"--contract {contract_id}" not in proc.stderr
    assert f"{len(CONTRACT_IDS)} kept, 0 broken" in proc.stdout


def add_line(path: Path, line: str, *, in_function: bool = False) -> None:
    text = path.read_text(encoding="utf-8")
    if in_function:
        text += f"\n\ndef _deliberately_wrong() -> None:\n    {line}\n"
    else:
        text += f"\n{line}\n"
    path.write_text(text, encoding="utf-8")


BROKEN = [  # (contract, file under orchestrator/, wrong import, inside a function?)
    ("layers", "spec/job.py", "from orchestrator.api import submit", True),
    ("layers", "env/hostlist.py", "from orchestrator.spec import cluster", False),
    ("layers", "records/restarts/blame.py", "from orchestrator.task import outcome", True),
    ("acyclic", "records/trust.py", "from orchestrator.records import jobcreate", True),
    ("records-concepts", "records/logs/view.py", "from orchestrator.records.restarts import blame", True),
    ("records-core", "records/jobdirs.py", "from orchestrator.records.snapshots import store", True),
    ("torch-only-in-runtime", "slurm/plan.py", "import torch", True),
    ("torch-only-in-runtime", "task/launch.py", "from orchestrator.runtime import entry", True),
    ("torch-only-in-runtime", "doctor/check.py", "import torchvision", True),
    ("torch-only-in-runtime", "restarts/agent.py", "import torch", True),
    ("layers", "restarts/worker.py", "from orchestrator.runtime import entry", True),  # handed in, never imported
    ("layers", "task/launch.py", "from orchestrator.restarts import agent", True),  # through the TaskRuntime
    ("restarts-layers", "restarts/agent.py", "from orchestrator.restarts import worker", True),
    ("layers", "launchstyles/style.py", "from orchestrator.doctor import check", True),  # the style needs no doctor
    ("layers", "source/names.py", "from orchestrator.launchstyles import facts", True),
    ("launchstyles-layers", "launchstyles/spawns.py", "from orchestrator.launchstyles import localrank", True),
    ("interfaces-through-service", "commands/status.py", "from orchestrator.slurm import jobstate", True),
    ("interfaces-through-service", "views/cells.py", "from orchestrator.records import jobdirs", False),
    ("interfaces-through-service", "api.py", "from orchestrator.local.runner import LocalRunner", True),
    ("pure-core", "env/hostlist.py", "import subprocess", True),
    ("pure-core", "spec/runconfig.py", "from orchestrator.records.atomic import write_text_atomic", True),
    ("cli-start-up", "commands/status.py", "import submitit", False),
    # status -> slurm.jobstate -> records.restarts.blame
    ("cli-start-up", "records/restarts/blame.py", "import submitit", False),
    ("dry-run", "commands/submit.py", "from orchestrator.slurm import client", False),
    ("dry-run", "commands/_common.py", "from orchestrator import doctor", False),
]


@pytest.mark.parametrize(("contract", "where", "line", "in_function"), BROKEN,
                         ids=[f"{c}:{w}" for c, w, _, _ in BROKEN])
def test_a_wrong_import_breaks_the_contract(tree: Path, contract: str, where: str, line: str,
                                            in_function: bool) -> None:
    add_line(tree / "orchestrator" / where, line, in_function=in_function)
    proc = lint(tree, contract)
    assert proc.returncode != 0, proc.stdout
    assert "BROKEN" in proc.stdout and "1 broken" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize(("where", "line", "contract"), [
    ("commands/submit.py", "from orchestrator.slurm import client", "dry-run"),
    ("commands/status.py", "import submitit", "cli-start-up"),
])
def test_an_import_inside_a_function_does_not_run_at_import_time(tree: Path, where: str, line: str,
                                                                  contract: str) -> None:
    """The import-time contracts follow what runs when the module is imported, not what a call runs."""
    add_line(tree / "orchestrator" / where, line, in_function=True)
    proc = lint(tree, contract)
    assert proc.returncode == 0, proc.stdout


def test_the_torch_contract_names_every_restarts_module_but_the_worker() -> None:
    """restarts/worker.py is the one module of restarts/ that imports torch; torch-only-in-runtime lists every
    other one by name (a new module of the package fails here until it is listed)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text[text.index('id = "torch-only-in-runtime"'):]
    block = block[:block.index("[[tool.importlinter.contracts]]")]
    listed = set(re.findall(r'"orchestrator\.restarts\.(\w+)"', block))
    modules = {p.stem for p in (ROOT / "orchestrator" / "restarts").glob("*.py")} - {"__init__", "worker"}
    assert listed == modules and "worker" not in listed


def test_the_chain_is_named(tree: Path) -> None:
    """A forbidden import two layers down is found through the modules that import it at import time."""
    add_line(tree / "orchestrator" / "records" / "restarts" / "blame.py", "import submitit")
    out = lint(tree, "cli-start-up").stdout
    assert "orchestrator.commands.status -> " in out and "orchestrator.records.restarts.blame -> submitit" in out
