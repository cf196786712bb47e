"""``orch submit --dry-run`` of a Hydra app (orchestrator/commands/submit.py, spec/hydra.py): the dry run
says where every rank's run directory will be; another script gets no such line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ROOT, run_cli

if TYPE_CHECKING:
    from support import Stubs

Capsys = pytest.CaptureFixture[str]
SCRIPTS = ROOT / "tests" / "scripts"


@pytest.fixture
def cluster(clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path]) -> Stubs:
    clean_env.setenv("ORCH_CLUSTER", str(write_cluster()))
    return stubs


def test_the_dry_run_names_a_hydra_apps_run_directory(cluster: Stubs, capsys: Capsys) -> None:
    code, out, err = run_cli(["submit", str(SCRIPTS / "hydra_app.py"), "--nodes", "2", "--gpus", "2", "--dry-run",
                              "--", "lr=0.1"], capsys)
    assert code == 0, err
    [line] = [x for x in out.splitlines() if "Hydra app" in x]
    assert line.startswith("# a Hydra app: every rank's run directory is ") and line.endswith(
        "/hydra (orch passes hydra.run.dir after the script's arguments; rank R > 0 logs to "
        "<job name>_rank<R>.log there)")
    assert cluster.records("sbatch") == []


def test_another_script_gets_no_hydra_line(cluster: Stubs, capsys: Capsys) -> None:
    code, out, err = run_cli(["submit", str(SCRIPTS / "ddp_train.py"), "--nodes", "2", "--gpus", "2", "--dry-run"],
                             capsys)
    assert code == 0, err
    assert "Hydra" not in out
