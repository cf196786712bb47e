"""An id is forever: ``orch status/logs/cancel`` of the id ``orch submit`` printed, after the job was submitted
again under a new id (a blamed node without a spare, a failed ``--preflight=exclude``), follow the job index to
the folder and say how: ``38 -> 39 (resubmitted without node2)``.

The folder is recorded the way the real paths record it: ``orch submit``'s record (the job index, submitted.json)
for job 38, then the batch script's restart helper (``python -m orchestrator.slurm.restart --resubmitted 39``)
or preflight helper after an attempt that blamed node2. Slurm's answers come from the stand-in clients
(``fake_slurm``); the real cluster runs this in tests/e2e/test_e2e_restarts.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import FakeSlurm

from orchestrator.cli import main
from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.jobindex import Submitted, now_text, record_submit
from orchestrator.records.restarts.attempts import write_attempts
from orchestrator.slurm import preflight, restart
from orchestrator.spec.runconfig import RunConfig

Capsys = pytest.CaptureFixture[str]
DISABLED = {"stdout": "", "stderr": "Slurm accounting storage is disabled\n", "rc": 1}


@pytest.fixture
def job_root(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A cluster.yaml (name t) in the working directory whose job_root is ``tmp_path/jobs``."""
    root = tmp_path / "jobs"
    root.mkdir()
    (tmp_path / "cluster.yaml").write_text(
        "name: t\npartitions:\n  - {name: debug, nodes: 'node[1-3]', gpus_per_node: 1, cpus_per_node: 4, "
        f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")
    clean_env.chdir(tmp_path)
    return root


def submitted(root: Path, job_id: str = "38") -> Path:
    """A job folder as orch submit leaves it: job.json, job_id, submitted.json and a line in the job index."""
    folder = root / "train-20260102-030405-abc123"
    (folder / "logs").mkdir(parents=True)
    write_run_config(folder, RunConfig(mode="slurm", job_name="train", job_file="/jobs/x.py", params={}, nodes=1,
                                       gpus_per_node=1, tasks_per_node=1, cpus_per_task=1, job_dir=str(folder),
                                       created="2026-01-02T03:04:05", cluster_name="t"))
    (folder / "job_id").write_text(job_id + "\n")
    record_submit(folder, Submitted(job_id=job_id, job_dir=str(folder), submitted=now_text(), job_name="train",
                                    cluster="t"))
    return folder


def resubmitted_without_node2(root: Path) -> Path:
    """Job 38's rank on node2 was killed; no spare: the batch script submitted job 39 without node2."""
    folder = submitted(root)
    write_attempts(folder, [{"attempt": 0, "requeue": 0, "job": "38", "kind": "vanished", "exit_code": 137,
                             "blamed_rank": 0, "blamed_node": "node2"}])
    (folder / "logs" / "slurm-38.out").write_text("orch: job 38 (attempt 0, requeue 0) on node2: MASTER_ADDR=x\n")
    assert restart.main(["--job-dir", str(folder), "--resubmitted", "39"]) == 0
    (folder / "logs" / "slurm-39.out").write_text("orch: job 39 (attempt 1, requeue 0) on node1: MASTER_ADDR=y\n")
    (folder / "logs" / "39-rank0.out").write_text("resuming from checkpoint at epoch 2\n")
    return folder


def run_cli(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_status_of_the_first_id_shows_the_folders_job_now_and_says_how(fake_slurm: FakeSlurm, job_root: Path,
                                                                         capsys: Capsys) -> None:
    folder = resubmitted_without_node2(job_root)
    capsys.readouterr()
    fake_slurm.set({"squeue": {"stdout": "38|FAILED|None|node2|0:40|0|train\n39|RUNNING|None|node1|0:12|0|train\n"},
                    "sacct": DISABLED, "sacct --completion": {"stdout": "38|FAILED|143:0|node2|00:00:40|train\n"}})
    code, out, err = run_cli(capsys, "status", "38", "--json")
    assert (code, err) == (0, "")
    row = json.loads(out)
    assert (row["job_id"], row["state"], row["job_dir"]) == ("39", "RUNNING", str(folder))
    assert row["followed"] == "38 -> 39 (resubmitted without node2)"
    code, out, _ = run_cli(capsys, "status", "38")
    assert code == 0 and out.splitlines()[1].split()[:2] == ["39", "RUNNING"]
    assert "# job 38 -> 39 (resubmitted without node2): shown as job 39" in out
    # the id given by --cluster too (no index lookup first): the folder is found through the index all the same
    code, out, _ = run_cli(capsys, "status", "38", "--cluster", str(job_root.parent / "cluster.yaml"), "--json")
    assert code == 0 and json.loads(out)["followed"] == "38 -> 39 (resubmitted without node2)"
    # the new id is the folder's own: nothing to follow
    code, out, _ = run_cli(capsys, "status", "39", "--json")
    assert code == 0 and json.loads(out)["followed"] is None


def test_logs_of_the_first_id_show_the_folders_job_now_and_say_how(fake_slurm: FakeSlurm, job_root: Path,
                                                                   capsys: Capsys) -> None:
    folder = resubmitted_without_node2(job_root)
    capsys.readouterr()
    fake_slurm.set({"squeue": {"stdout": "39|RUNNING|None|node1|0:12|0|train\n"}})
    code, out, err = run_cli(capsys, "logs", "38")
    assert code == 0, err
    assert out == ("orch: job 39 (attempt 1, requeue 0) on node1: MASTER_ADDR=y\n"
                   "resuming from checkpoint at epoch 2\n")
    assert f"orch: job 38 -> 39 (resubmitted without node2): the logs of job 39 follow (job 38's own are " \
           f"{folder / 'logs'}/slurm-38.out" in err


def test_cancel_of_the_first_id_cancels_the_folders_job_now(fake_slurm: FakeSlurm, job_root: Path,
                                                            capsys: Capsys) -> None:
    resubmitted_without_node2(job_root)
    capsys.readouterr()
    fake_slurm.set({"squeue": {"stdout": "39|RUNNING|None|node1|0:12|0|train\n"}, "scancel": {"stdout": ""}})
    code, out, err = run_cli(capsys, "cancel", "38")
    assert code == 0, err
    assert out == "job 38 -> 39 (resubmitted without node2)\ncancelled 39\n"
    assert [c for c in fake_slurm.calls() if c[0] == "scancel"] == [["scancel", "39"]]
    code, out, _ = run_cli(capsys, "cancel", "38", "--json")
    assert json.loads(out)["followed"] == {"38": "38 -> 39 (resubmitted without node2)"}


def test_a_failed_preflight_resubmission_is_followed_too(fake_slurm: FakeSlurm, job_root: Path,
                                                        capsys: Capsys) -> None:
    folder = submitted(job_root, "117")
    (folder / "preflight_attempts.json").write_text(json.dumps(
        {"version": 1, "max_attempts": 3, "excluded": ["node2"],
         "attempts": [{"job_id": "117", "failed": [{"host": "node2", "check": "nccl"}], "excluded": ["node2"],
                       "next_job_id": None}]}))
    assert preflight.main(["--job-dir", str(folder), "--resubmitted", "118"]) == 0
    fake_slurm.set({"squeue": {"stdout": "118|PENDING|Priority||0:00|0|train\n"}})
    code, out, _ = run_cli(capsys, "status", "117", "--json")
    row = json.loads(out)
    assert code == 0 and row["job_id"] == "118"
    assert row["followed"] == "117 -> 118 (failed its preflight; resubmitted without node2)"


def test_an_id_the_folder_never_ran_is_not_followed(fake_slurm: FakeSlurm, job_root: Path, capsys: Capsys) -> None:
    """The index maps 38 to a folder whose job is 40, but no record of the folder says 38 became 40."""
    folder = submitted(job_root)
    (folder / "job_id").write_text("40\n")  # changed by hand (or by something that recorded nothing)
    fake_slurm.set({"squeue": {"stdout": ""}, "sacct": DISABLED, "sacct --completion": {"stdout": ""}})
    code, out, _ = run_cli(capsys, "status", "38", "--json")
    row = json.loads(out)
    assert code == 0 and (row["job_id"], row["job_dir"], row["followed"]) == ("38", None, None)
    code, _, err = run_cli(capsys, "logs", "38")
    assert code == 2 and "no job folder" in err and "job id 38" in err


def test_the_cluster_file_in_the_current_folder_is_no_evidence_against_the_folders_cluster(
        fake_slurm: FakeSlurm, job_root: Path, capsys: Capsys, clean_env: pytest.MonkeyPatch) -> None:
    """Run from a clone, whose ./cluster.yaml (the shipped example) names another cluster than the one the job
    was submitted to: orch status ID shows Slurm's state of the job, not "job id reused"; a cluster the user
    chose (--cluster, $ORCH_CLUSTER) that is not the folder's is still said."""
    submitted(job_root)
    example = (Path.cwd() / "cluster.yaml").read_text().replace("name: t\n", "name: example\n")
    (Path.cwd() / "cluster.yaml").write_text(example)
    fake_slurm.set({"squeue": {"stdout": "38|RUNNING|None|node1|0:12|0|train\n"}, "sacct": DISABLED})
    capsys.readouterr()
    code, out, _ = run_cli(capsys, "status", "38", "--json")
    row = json.loads(out)
    assert (code, row["state"], row["reason"]) == (0, "RUNNING", None), row
    clean_env.setenv("ORCH_CLUSTER", str(Path.cwd() / "cluster.yaml"))
    code, out, _ = run_cli(capsys, "status", "38", "--json")
    row = json.loads(out)
    assert row["reason"] == "job id reused" and "submitted to cluster t, not example" in row["reused"], row
