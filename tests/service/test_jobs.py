"""Where job folders are (orchestrator/service/jobs.py): the cluster file a follow-up verb reads (a Scope), and
the folder of an id or a path, found through the user's index first, followed when the job was submitted again."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cluster_for, training_job

from orchestrator.errors import OrchError
from orchestrator.records.jobindex import Submitted, record_submit
from orchestrator.service.jobs import Scope, chosen_cluster_name, cluster_name, find_job, job_root_of, locate


@pytest.fixture
def root(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    folder = tmp_path / "jobs"
    folder.mkdir()
    return folder


def test_the_scope_names_the_cluster_file_and_its_job_root(root: Path, tmp_path: Path) -> None:
    path = cluster_for(tmp_path, root)
    assert job_root_of(Scope(str(path))) == root
    assert cluster_name(Scope(str(path))) == "t"
    assert chosen_cluster_name(Scope(str(path))) == "t"


def test_a_cluster_yaml_found_only_in_the_folder_is_not_a_chosen_cluster(root: Path, tmp_path: Path) -> None:
    cluster_for(tmp_path, root)  # ./cluster.yaml (the working folder is tmp_path)
    assert cluster_name(Scope()) == "t"  # it gives the job root and the name of the folders listed
    assert job_root_of(Scope()) == root
    assert chosen_cluster_name(Scope()) is None  # but says nothing of which cluster an id named belongs to


def test_a_named_cluster_file_that_is_missing_is_an_error(root: Path, tmp_path: Path) -> None:
    with pytest.raises(OrchError) as caught:
        job_root_of(Scope(str(tmp_path / "missing.yaml")))
    assert "missing.yaml" in caught.value.message


def test_a_job_id_is_found_by_its_folder_under_the_job_root(root: Path, tmp_path: Path) -> None:
    folder = training_job(root, "mnist", job_id="41")
    scope = Scope(str(cluster_for(tmp_path, root)))
    assert find_job("41", scope).path == folder
    assert find_job(str(folder), scope).path == folder
    assert locate("41", scope).followed is None


def test_the_index_finds_an_id_under_another_job_root_without_the_cluster(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-root"
    other.mkdir()
    folder = training_job(other, "mnist", job_id="77")
    record_submit(folder, Submitted(job_id="77", job_dir=str(folder), submitted="2026-11-25T10:00:00+00:00",
                                    job_name="mnist", cluster="other"))
    assert find_job("77", Scope()).path == folder  # the default job root does not hold it: the index does
    with pytest.raises(OrchError):  # under another named cluster: its own job root, the index only for its jobs
        find_job("77", Scope(str(cluster_for(tmp_path, root))))


def test_an_id_submitted_again_is_followed_to_the_folder_and_its_new_id(root: Path) -> None:
    folder = training_job(root, "mnist", job_id="39")
    for job_id, when in (("38", "2026-11-25T10:00:00+00:00"), ("39", "2026-11-25T10:05:00+00:00")):
        record_submit(folder, Submitted(job_id=job_id, job_dir=str(folder), submitted=when, job_name="mnist"))
    found = locate("38", Scope())
    assert found.job.path == folder and found.job.job_id == "39"
    assert found.followed == "38 -> 39 (submitted again)"
