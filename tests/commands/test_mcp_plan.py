"""orch mcp's plan and submit (commands/_mcp_plan.py): a plan is stored privately with the hashes of its inputs;
a submit queues exactly the planned script once, and refuses an unknown, stale or already submitted plan, and
any submit on a server started without --allow-submit. sbatch is the stub (tests/stubs)."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from support import TESTS, Stubs

from orchestrator.commands._mcp_plan import PlanInput, Settings, make_plan, submit_plan
from orchestrator.errors import OrchError
from orchestrator.records import plans


@pytest.fixture
def project(clean_env: pytest.MonkeyPatch, tmp_path: Path, write_cluster: Callable[..., Path]) -> Path:
    """A script project outside git (its folder is the snapshot) and a cluster.yaml in the submit directory."""
    folder = tmp_path / "project"
    folder.mkdir()
    for name in ("ddp_train.py", "ddp_model.py"):
        (folder / name).write_text((TESTS / "scripts" / name).read_text())
    write_cluster()
    return folder


def _settings(tmp_path: Path, *, submit: bool = True) -> Settings:
    return Settings(cluster=None, allow_submit=submit, allow_cancel=False, cwd=tmp_path)


def _plan(tmp_path: Path, project: Path, **extra: object) -> dict[str, object]:
    given = PlanInput(job=str(project / "ddp_train.py"), script_args=["--out", "out"], nodes=2, gpus=2,
                      **extra)  # type: ignore[arg-type]
    return make_plan(_settings(tmp_path), given)


def test_a_plan_is_a_private_file_and_submits_exactly_its_script_once(
        project: Path, tmp_path: Path, stubs: Stubs, state_dir: Path) -> None:
    planned = _plan(tmp_path, project)
    plan_id = str(planned["plan_id"])
    assert planned["submittable"] is True and planned["refusals"] == []
    assert len(planned["ranks"]) == 4 and "#SBATCH --nodes=2" in str(planned["script"])  # type: ignore[arg-type]
    assert any(name.startswith("code snapshot of ") for name in planned["inputs"])  # type: ignore[union-attr]
    assert planned["task_env"] == {"NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "ib0", "OMP_NUM_THREADS": "1"}
    path = state_dir / "plans" / f"{plan_id}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text())["script"] == planned["script"]

    done = submit_plan(_settings(tmp_path), plan_id)
    assert done["job_id"] == "4242" and done["job_dir"] == planned["job_dir"]
    (call,) = stubs.records("sbatch")
    assert call["script"] == planned["script"]  # the planned script, byte for byte
    job_dir = Path(done["job_dir"])
    assert (job_dir / "job_id").read_text().strip() == "4242"
    (digest,) = [v for k, v in planned["inputs"].items() if k.startswith("code snapshot of ")]  # type: ignore[union-attr]
    assert json.loads((job_dir / "job.json").read_text())["snapshot"]["digest"] == digest  # the code planned
    with pytest.raises(OrchError, match=f"plan {plan_id} was submitted already as job 4242") as again:
        submit_plan(_settings(tmp_path), plan_id)
    assert "HINT" in again.value.render()
    assert len(stubs.records("sbatch")) == 1


def test_a_code_change_makes_the_plan_stale_and_names_it(project: Path, tmp_path: Path, stubs: Stubs) -> None:
    plan_id = str(_plan(tmp_path, project)["plan_id"])
    (project / "ddp_model.py").write_text((project / "ddp_model.py").read_text() + "\n# edited\n")
    with pytest.raises(OrchError, match=f"plan {plan_id} is stale: .*code snapshot of {project}") as stale:
        submit_plan(_settings(tmp_path), plan_id)
    assert "call plan again" in (stale.value.hint or "")
    assert stubs.records("sbatch") == []
    plans.load(plan_id)  # still there, still unsubmitted: a fresh plan is the way on
    assert plans.submitted_as(plan_id) is None


def test_code_changed_between_the_check_and_the_snapshot_is_not_queued(
        project: Path, tmp_path: Path, stubs: Stubs, monkeypatch: pytest.MonkeyPatch) -> None:
    """The snapshot the submit takes must be the planned one: an edit that lands after the hashes were compared
    (here: the comparison made to pass) is caught when the snapshot is taken, before sbatch."""
    planned = _plan(tmp_path, project)
    (project / "ddp_model.py").write_text((project / "ddp_model.py").read_text() + "\n# edited late\n")
    monkeypatch.setattr("orchestrator.service.planstore.fingerprint", lambda *_: planned["inputs"])
    with pytest.raises(OrchError, match=r"stale: .*the code, while the submit took its snapshot"):
        submit_plan(_settings(tmp_path), str(planned["plan_id"]))
    assert stubs.records("sbatch") == [] and plans.submitted_as(str(planned["plan_id"])) is None
    assert not Path(str(planned["job_dir"])).exists()


def test_without_a_snapshot_the_script_file_is_hashed(project: Path, tmp_path: Path, stubs: Stubs) -> None:
    planned = _plan(tmp_path, project, no_snapshot=True)
    assert list(planned["inputs"]) == [f"cluster file {tmp_path / 'cluster.yaml'}",  # type: ignore[call-overload]
                                       f"script {project / 'ddp_train.py'}"]
    (project / "ddp_train.py").write_text((project / "ddp_train.py").read_text() + "\n# edited\n")
    with pytest.raises(OrchError, match=r"stale: .*script .*ddp_train\.py"):
        submit_plan(_settings(tmp_path), str(planned["plan_id"]))
    assert stubs.records("sbatch") == []


def test_a_cluster_file_change_makes_the_plan_stale(project: Path, tmp_path: Path, stubs: Stubs,
                                                    write_cluster: Callable[..., Path]) -> None:
    plan_id = str(_plan(tmp_path, project)["plan_id"])
    write_cluster(env={"NCCL_DEBUG": "INFO"})
    with pytest.raises(OrchError, match=f"stale: .*cluster file {tmp_path / 'cluster.yaml'}"):
        submit_plan(_settings(tmp_path), plan_id)
    assert stubs.records("sbatch") == []


def test_a_script_that_would_differ_is_stale(project: Path, tmp_path: Path, stubs: Stubs,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs orch does not hash (here the python of launcher.python's default) still cannot change the script."""
    plan_id = str(_plan(tmp_path, project)["plan_id"])
    monkeypatch.setattr("sys.executable", "/elsewhere/bin/python")
    with pytest.raises(OrchError, match=r"stale: .*the batch script would differ .*PYTHON=/elsewhere"):
        submit_plan(_settings(tmp_path), plan_id)
    assert stubs.records("sbatch") == []


@pytest.mark.parametrize("plan_id", ["0123456789abcdef", "../../etc/passwd", "ABCDEF0123456789", ""])
def test_an_unknown_or_malformed_plan_id_is_refused(project: Path, tmp_path: Path, stubs: Stubs,
                                                    plan_id: str) -> None:
    with pytest.raises(OrchError) as refused:
        submit_plan(_settings(tmp_path), plan_id)
    assert "plan id" in refused.value.message and "call the plan tool first" in (refused.value.hint or "")
    assert stubs.records("sbatch") == []


def test_submit_is_refused_on_a_read_only_server(project: Path, tmp_path: Path, stubs: Stubs) -> None:
    plan_id = str(_plan(tmp_path, project)["plan_id"])
    with pytest.raises(OrchError, match="the submit tool is off") as refused:
        submit_plan(_settings(tmp_path, submit=False), plan_id)
    assert "orch mcp --allow-submit" in (refused.value.hint or "")
    assert stubs.records("sbatch") == [] and plans.submitted_as(plan_id) is None


def test_doctor_errors_are_refusals_of_the_plan_and_stop_the_submit(tmp_path: Path, project: Path,
                                                                    stubs: Stubs) -> None:
    """DDP003 (a DataLoader that shuffles without a DistributedSampler) is an error: the plan says the submit
    would stop, and the submit stops, as orch submit does."""
    (project / "bad.py").write_text("import torch\nimport torch.distributed as dist\n"
                                    "from torch.utils.data import DataLoader, TensorDataset\n\n\n"
                                    "def main():\n    dist.init_process_group('gloo')\n"
                                    "    data = TensorDataset(torch.randn(64, 4))\n"
                                    "    loader = DataLoader(data, batch_size=16, shuffle=True)\n"
                                    "    for epoch in range(2):\n        for x in loader:\n            pass\n\n\n"
                                    "main()\n")
    planned = make_plan(_settings(tmp_path), PlanInput(job=str(project / "bad.py"), nodes=2, gpus=2))
    assert [f["code"] for f in planned["findings"] if f["severity"] == "error"] == ["DDP003"]  # type: ignore[union-attr]
    assert planned["submittable"] is False
    assert any("orch doctor" in r and "DDP003" in r for r in planned["refusals"])  # type: ignore[union-attr]
    with pytest.raises(OrchError, match="DDP003"):
        submit_plan(_settings(tmp_path), str(planned["plan_id"]))
    assert stubs.records("sbatch") == []
    assert plans.submitted_as(str(planned["plan_id"])) is None


def test_every_plan_option_is_an_orch_submit_option() -> None:
    """The plan tool's input is a subset of ``orch submit``'s options by name: a field renamed on either side
    would otherwise be dropped without a word when the plan is turned into the submit's options."""
    from dataclasses import fields

    from orchestrator.commands._mcp_plan import PlanInput
    from orchestrator.service.request import SubmitOptions

    assert set(PlanInput.model_fields) <= {f.name for f in fields(SubmitOptions)}
