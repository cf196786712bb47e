"""The second half of a submit (orchestrator/service/queue.py): the planned script queued byte for byte, a sweep
as one job array, the bad nodes left out named, and a job without its data directory refused before anything is
written. sbatch is the stub (tests/stubs); orch submit's output over it: tests/commands/test_submit*.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support import Stubs

from orchestrator.errors import ConfigError, SlurmError
from orchestrator.records.restarts import badnodes
from orchestrator.service.plan import prepare
from orchestrator.service.queue import plan_sweep, queue, queue_sweep, sweep_grid
from orchestrator.service.request import SubmitOptions
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.clusterparse import parse_cluster


@pytest.fixture
def cluster(clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path]) -> Cluster:
    return parse_cluster(write_cluster(launcher={"bad_node_ttl": 3600}).read_text(encoding="utf-8"))


def test_the_planned_script_is_queued_and_the_left_out_nodes_named(
        cluster: Cluster, tmp_path: Path, stubs: Stubs, write_job: Callable[..., Path]) -> None:
    (tmp_path / "jobs").mkdir()
    badnodes.record(tmp_path / "jobs", "dbg2", "hang", "41")
    planned = prepare(SubmitOptions(job=str(write_job(nodes=2, gpus=4)), partition="debug"), cluster, tmp_path)
    queued = queue(planned)
    assert (queued.job_id, queued.job_dir) == ("4242", planned.plan.job_dir)
    [call] = stubs.records("sbatch")
    assert call["script"] == planned.plan.script
    first, hint = queued.left_out
    assert first.startswith("left out: dbg2 (") and "job 41" in first and hint.startswith("(orch nodes lists them")
    assert (queued.job_dir / "job_id").read_text().strip() == "4242"


def test_a_refusal_of_sbatch_is_raised_with_the_folder_written(
        cluster: Cluster, tmp_path: Path, stubs: Stubs, write_job: Callable[..., Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_STUB_SBATCH_RC", "1")
    monkeypatch.setenv("ORCH_STUB_SBATCH_STDERR", "sbatch: error: invalid account")
    planned = prepare(SubmitOptions(job=str(write_job())), cluster, tmp_path)
    with pytest.raises(SlurmError, match="invalid account"):
        queue(planned)
    assert "invalid account" in (planned.plan.job_dir / "submit_error.txt").read_text()


def test_a_sweep_is_one_array_with_an_id_per_element(cluster: Cluster, tmp_path: Path, stubs: Stubs,
                                                     write_job: Callable[..., Path]) -> None:
    planned = prepare(SubmitOptions(job=str(write_job())), cluster, tmp_path)
    array = plan_sweep(planned, sweep_grid(["width=1,2", "lr=0.1,0.01"]), throttle=2)
    assert [e.overrides for e in array.elements][:2] == [{"width": "1", "lr": "0.1"}, {"width": "1", "lr": "0.01"}]
    queued = queue_sweep(planned, array)
    assert queued.ids == ("4242_0", "4242_1", "4242_2", "4242_3") and queued.job_dir == planned.plan.job_dir
    assert "#SBATCH --array=0-3%2" in stubs.records("sbatch")[0]["script"]


def test_a_job_without_its_data_directory_is_not_queued(cluster: Cluster, tmp_path: Path, stubs: Stubs) -> None:
    planned = prepare(SubmitOptions(job="mnist"), cluster, tmp_path)
    with pytest.raises(ConfigError, match="needs a data directory"):
        queue(planned)
    with pytest.raises(ConfigError, match="needs a data directory"):
        queue_sweep(planned, plan_sweep(planned, [{"lr": 0.1}]))
    assert stubs.records("sbatch") == [] and not planned.plan.job_dir.exists()
