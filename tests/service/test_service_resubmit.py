"""The service under orch resubmit (orchestrator/service/resubmit.py), called with plain values: which sweep folder
a reference names, the plan of the elements that go again, and the refusal of a job that is not a sweep. A real
sweep is submitted first through the CLI, against stub sbatch and stand-in squeue/sacct. orch resubmit's own
output: tests/commands/test_commands_resubmit.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from orchestrator.cli import main
from orchestrator.errors import ConfigError
from orchestrator.service.jobs import Scope
from orchestrator.service.resubmit import plan, sweep_folder

if TYPE_CHECKING:
    from support import Stubs


def _submit(capsys: pytest.CaptureFixture[str], *argv: str) -> Path:
    code = main(["submit", "smoke", "--nodes", "1", "--gpus", "1", "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return Path(json.loads(out)["job_dir"])


def test_every_reference_to_a_sweep_names_its_folder(clean_env: pytest.MonkeyPatch, stubs: Stubs,
                                                     slurm_answers: Path, write_cluster: Callable[..., Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    scope = Scope(str(write_cluster()))
    clean_env.setenv("ORCH_STUB_SBATCH_STDOUT", "4242")
    folder = _submit(capsys, "--cluster", scope.cluster or "", "--sweep", "lr=0.1,0.2,0.3")
    (slurm_answers / "squeue.out").write_text("".join(f"4242_{i}|{state}|None|node1|0:10|0|Unknown|smoke\n"
                                                      for i, state in enumerate(("COMPLETED", "FAILED", "TIMEOUT"))))
    (slurm_answers / "sacct.out").write_text("")
    for ref in (str(folder), "4242", "4242_1", str(folder / "2")):  # the folder, the array, an element
        assert sweep_folder(ref, scope) == folder.resolve()
    planned = plan("4242", scope)
    assert (planned.array, [e.index for e in planned.elements], planned.job_id) == ("1,2", [1, 2], None)
    assert len(stubs.records("sbatch")) == 1  # a plan queues nothing

    clean_env.setenv("ORCH_STUB_SBATCH_STDOUT", "4300")
    single = _submit(capsys, "--cluster", scope.cluster or "")
    with pytest.raises(ConfigError, match="is not a sweep") as info:
        sweep_folder(str(single), scope)
    assert info.value.hint is not None and "launcher.requeue" in info.value.hint
