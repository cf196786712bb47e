"""The service under orch clusters (orchestrator/service/clusters.py), called in-process with a plain environment:
which cluster files there are, how each is described when Slurm is not installed here, and the refusals of
``init``. The CLI's output, and the answers of a Slurm that is up: tests/commands/test_clusters.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import TEST_CLUSTER

from orchestrator.errors import OrchError
from orchestrator.service.clusters import cluster_files, describe, init, slurm_reachable


@pytest.fixture
def places(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    """A named cluster file alpha, a broken one, a ./cluster.yaml, and a PATH without Slurm's commands."""
    named = tmp_path / "xdg" / "orch" / "clusters"
    named.mkdir(parents=True)
    (named / "alpha.yaml").write_text(yaml.safe_dump({**TEST_CLUSTER, "name": "alpha"}))
    (named / "broken.yaml").write_text("name: [unclosed\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "cluster.yaml").write_text(yaml.safe_dump({**TEST_CLUSTER, "name": "here"}))
    empty = tmp_path / "bin"
    empty.mkdir()
    clean_env.setenv("PATH", str(empty))
    return {"xdg": tmp_path / "xdg", "named": named, "work": work}


def test_the_files_the_local_one_first(places: dict[str, Path]) -> None:
    environ = {"XDG_CONFIG_HOME": str(places["xdg"])}
    found = cluster_files(environ, places["work"])
    assert found[0] == ("./cluster.yaml", places["work"] / "cluster.yaml", "current directory")
    assert [(label, source) for label, _, source in found[1:]] == [("alpha", "named"), ("broken", "named")]
    assert [label for label, _, _ in cluster_files(environ, places["xdg"])] == ["alpha", "broken"]


def test_described_without_slurm_here(places: dict[str, Path]) -> None:
    reachable, why = slurm_reachable()
    assert not reachable and "not installed here" in why
    rows = {row["pick"]: row for row in describe({"XDG_CONFIG_HOME": str(places["xdg"])}, places["work"])}
    assert rows["./cluster.yaml"]["default"] and not rows["alpha"]["default"]
    assert (rows["alpha"]["name"], rows["alpha"]["reachable"], rows["alpha"]["reason"]) == ("alpha", False, why)
    assert rows["broken"]["name"] is None and rows["broken"]["reason"].startswith("invalid: ")


def test_init_refuses_a_bad_name_and_an_existing_file(places: dict[str, Path]) -> None:
    environ = {"XDG_CONFIG_HOME": str(places["xdg"])}
    with pytest.raises(OrchError, match="needs a NAME of letters"):
        init("../x", force=False, environ=environ)
    with pytest.raises(OrchError, match="exists already") as info:
        init("alpha", force=False, environ=environ)
    assert info.value.hint is not None and "--force" in info.value.hint
