"""Which Slurm jobs a job folder has been (slurm/lineage.py): the hops each resubmission path records, followed
from an old id to the folder's job now, and said as ``38 -> 39 (resubmitted without node2)``."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.records.jobindex import Submitted, append_index
from orchestrator.records.restarts.attempts import write_attempts
from orchestrator.records.sweeps import record_resubmission
from orchestrator.slurm.lineage import chain, hops


def test_restart_resubmissions_chain_across_several_jobs(tmp_path: Path) -> None:
    write_attempts(tmp_path, [
        {"attempt": 0, "job": "38", "blamed_node": "node2", "resubmitted_as": "39"},
        {"attempt": 1, "job": "39", "kind": "stuck"},  # restarted in its own allocation: no hop
        {"attempt": 2, "job": "39", "blamed_node": "node3", "resubmitted_as": "40"},
        {"attempt": 3, "job": "40", "kind": "completed"},
    ])
    assert hops(tmp_path) == {"38": ("39", "resubmitted without node2"), "39": ("40", "resubmitted without node3")}
    assert chain(tmp_path, "38", "40") == "38 -> 39 (resubmitted without node2) -> 40 (resubmitted without node3)"
    assert chain(tmp_path, "39", "40") == "39 -> 40 (resubmitted without node3)"
    assert chain(tmp_path, "41", "40") is None  # no record of 41 here
    assert chain(tmp_path, "40", "39") is None  # backwards is no chain


def test_preflight_and_sweep_resubmissions(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "preflight_attempts.json").write_text(json.dumps({"excluded": ["node2", "node3"], "attempts": [
        {"job_id": "117", "excluded": ["node2"], "next_job_id": "118"},
        {"job_id": "118", "excluded": ["node2", "node3"], "next_job_id": "119"}]}))
    assert chain(job, "117", "119") == ("117 -> 118 (failed its preflight; resubmitted without node2) -> "
                                        "119 (failed its preflight; resubmitted without node[2-3])")
    sweep = tmp_path / "sweep"
    (sweep / "1").mkdir(parents=True)
    (sweep / "array.json").write_text("{}")
    record_resubmission(sweep, "4250", {1: "4242_1"}, previous="4242", submitted="2026-01-01T00:00:00+00:00")
    assert chain(sweep / "1", "4242_1", "4250_1") == "4242_1 -> 4250_1 (resubmitted by orch resubmit --failed)"


def test_damaged_records_follow_nothing(tmp_path: Path) -> None:
    (tmp_path / "attempts.json").write_text(json.dumps([
        {"job": "38", "resubmitted_as": "38"}, {"job": 38, "resubmitted_as": "39"},
        {"job": "38", "resubmitted_as": "../39"}, {"job": "39", "resubmitted_as": "38"}, "nonsense"]))
    assert hops(tmp_path) == {"39": ("38", "resubmitted")}
    assert chain(tmp_path, "38", "39") is None
    (tmp_path / "preflight_attempts.json").write_text("{not json")
    assert chain(tmp_path, "39", "38") == "39 -> 38 (resubmitted)"


def test_the_job_index_shows_a_hop_the_folder_did_not_record(tmp_path: Path) -> None:
    env = {"ORCH_STATE_DIR": str(tmp_path / "state")}
    folder = tmp_path / "job"
    folder.mkdir()
    for job_id, when in (("38", "2026-01-01T00:00:00+00:00"), ("39", "2026-01-01T00:05:00+00:00")):
        append_index(Submitted(job_id=job_id, job_dir=str(folder), submitted=when, job_name="j"), env)
    assert chain(folder, "38", "39", env) == "38 -> 39 (submitted again)"
    assert chain(folder, "39", "38", env) is None  # 38 came first
    assert chain(tmp_path / "other", "38", "39", env) is None  # the index's records name another folder
