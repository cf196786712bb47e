"""The first half of a submit (orchestrator/service/plan.py): options -> request -> plan, and beside it only what
the caller asked for (the snapshot preview, the budget, the templates used); a job without its data directory is
said, and refused only when queued. orch submit's own output over it: tests/commands/test_submit*.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.service.plan import dry_run_json, prepare
from orchestrator.service.request import SubmitOptions
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.clusterparse import parse_cluster


@pytest.fixture
def cluster(clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path]) -> Cluster:
    return parse_cluster(write_cluster().read_text(encoding="utf-8"))


def test_only_what_was_asked_for_is_computed(cluster: Cluster, tmp_path: Path, write_job: Callable[..., Path]) -> None:
    options = SubmitOptions(job=str(write_job(nodes=2, gpus=4)))
    bare = prepare(options, cluster, tmp_path)
    assert (bare.snapshot, bare.budget, dict(bare.templates), bare.findings) == (None, None, {}, ())
    full = prepare(options, cluster, tmp_path, dry_run=True, preview=True, budget=True)
    assert full.snapshot is not None and full.budget is not None
    assert full.plan.script.replace(str(full.plan.job_dir), "") == bare.plan.script.replace(str(bare.plan.job_dir), "")


def test_the_templates_used_are_named_when_templates_are_given(cluster: Cluster, tmp_path: Path,
                                                               write_job: Callable[..., Path]) -> None:
    from orchestrator.slurm.render import BUILTIN_TEMPLATES, TEMPLATE_NAMES

    mine = tmp_path / "templates"
    mine.mkdir()
    (mine / TEMPLATE_NAMES[0]).write_text((BUILTIN_TEMPLATES / TEMPLATE_NAMES[0]).read_text())
    planned = prepare(SubmitOptions(job=str(write_job()), templates=str(mine)), cluster, tmp_path, preview=True)
    assert dict(planned.templates) == {TEMPLATE_NAMES[0]: mine / TEMPLATE_NAMES[0],
                                       **{name: BUILTIN_TEMPLATES / name for name in TEMPLATE_NAMES[1:]}}


def test_a_job_without_its_data_directory_is_said_then_refused(cluster: Cluster, tmp_path: Path) -> None:
    planned = prepare(SubmitOptions(job="mnist"), cluster, tmp_path, dry_run=True)
    assert planned.data_problem is not None and "needs a data directory" in planned.data_problem.message
    with pytest.raises(ConfigError, match="needs a data directory"):
        planned.check_data()
    assert not planned.plan.job_dir.exists()
    missing = prepare(SubmitOptions(job="mnist", data_dir=str(tmp_path / "nope")), cluster, tmp_path)
    assert missing.data_problem is not None and "does not exist" in missing.data_problem.message
    prepare(SubmitOptions(job="mnist", data_dir=str(tmp_path)), cluster, tmp_path).check_data()


def test_the_dry_runs_json_has_one_rank_per_line(cluster: Cluster, tmp_path: Path,
                                                 write_job: Callable[..., Path]) -> None:
    planned = prepare(SubmitOptions(job=str(write_job(nodes=2, gpus=4))), cluster, tmp_path, preview=True)
    text = dry_run_json(planned.plan, planned.findings, planned.snapshot)
    data = json.loads(text)
    assert [r["rank"] for r in data["ranks"]] == list(range(8)) and data["budget"] is None
    assert sum(line.lstrip().startswith('{"rank"') for line in text.splitlines()) == 8
