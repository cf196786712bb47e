"""A submit SIGKILLed right after sbatch queued the job still leaves a job its folder finds and cancels.

The stub sbatch (tests/stubs) queues the job in ``$ORCH_STUB_QUEUE``, prints its id and SIGKILLs its
parent ``orch submit`` (``ORCH_STUB_SBATCH_KILL_PARENT=1``): ``job_id`` stays blank. The stub
squeue/scancel/sacct of ``tests/stubs/queue`` answer from that queue, so ``orch status FOLDER``,
``orch list`` and ``orch cancel FOLDER`` must find the job by the token orch gave sbatch (``--comment``)
and record its id; a job Slurm has forgotten is UNKNOWN with a reason, never a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, STUBS_DIR, clean_environ


def environ(tmp_path: Path, **extra: str) -> dict[str, str]:
    path = f"{STUBS_DIR / 'queue'}{os.pathsep}{STUBS_DIR}{os.pathsep}{os.environ['PATH']}"
    return clean_environ(PATH=path, ORCH_STUB_PYTHON=sys.executable, ORCH_STUB_LOG=str(tmp_path / "calls.jsonl"),
                         ORCH_STUB_QUEUE=str(tmp_path / "queue.jsonl"), **extra)


def orch(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
                          env=environ(tmp_path, **extra))


def killed_submit(tmp_path: Path, cluster: Path, *args: str) -> Path:
    """``orch submit`` SIGKILLed just after sbatch printed the id; the job folder (its job_id still blank)."""
    proc = orch(tmp_path, "submit", "smoke", "--cluster", str(cluster), *args, ORCH_STUB_SBATCH_KILL_PARENT="1")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    [folder] = [p for p in (tmp_path / "jobs").iterdir() if p.is_dir()]
    assert (folder / "job_id").read_text(encoding="ascii").strip() == ""
    return folder


def calls(tmp_path: Path, cmd: str) -> list[dict[str, Any]]:
    lines = (tmp_path / "calls.jsonl").read_text(encoding="utf-8").splitlines()
    return [entry for line in lines if (entry := json.loads(line))["cmd"] == cmd and entry["event"] == "call"]


def test_status_of_the_folder_finds_the_queued_job_and_records_its_id(
        write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    folder = killed_submit(tmp_path, write_cluster())
    proc = orch(tmp_path, "status", str(folder), "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    row = json.loads(proc.stdout)
    assert (row["job_id"], row["state"]) == ("4242", "PENDING")
    assert (folder / "job_id").read_text(encoding="ascii") == "4242\n"
    assert len(calls(tmp_path, "squeue")) <= 2  # one call finds the token, one asks the state


def test_list_finds_the_queued_job(write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    folder = killed_submit(tmp_path, write_cluster())
    proc = orch(tmp_path, "list", "--json", "--cluster", str(tmp_path / "cluster.yaml"))
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)
    assert (row["job_id"], row["state"], row["job_dir"]) == ("4242", "PENDING", str(folder))


def test_cancel_of_the_folder_cancels_the_queued_job(write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    folder = killed_submit(tmp_path, write_cluster())
    proc = orch(tmp_path, "cancel", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert "cancelled 4242" in proc.stdout
    assert [c["argv"] for c in calls(tmp_path, "scancel")] == [["4242"]]


def test_a_sweep_records_the_array_id_and_each_elements(write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    folder = killed_submit(tmp_path, write_cluster(), "--sweep", "lr=0.1,0.2")
    proc = orch(tmp_path, "status", str(folder / "1"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert (folder / "job_id").read_text(encoding="ascii") == "4242\n"
    for index in (0, 1):
        assert (folder / str(index) / "job_id").read_text(encoding="ascii") == f"4242_{index}\n"


@pytest.mark.parametrize("verb", ["status", "list"])
def test_a_job_slurm_forgot_is_unknown_with_a_reason(verb: str, write_cluster: Callable[..., Path],
                                                      tmp_path: Path) -> None:
    folder = killed_submit(tmp_path, write_cluster())
    (tmp_path / "queue.jsonl").unlink()  # long finished, no accounting: Slurm knows nothing of it
    args = ["status", str(folder)] if verb == "status" else ["list", "--cluster", str(tmp_path / "cluster.yaml")]
    proc = orch(tmp_path, *args, "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    found = json.loads(proc.stdout)
    row = found[0] if isinstance(found, list) else found
    assert row["state"] == "UNKNOWN" and row["job_id"] is None
    assert "orch submit was stopped" in row["reason"], row
    assert (folder / "job_id").read_text(encoding="ascii").strip() == ""


def test_the_users_own_comment_follows_the_token(write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    folder = killed_submit(tmp_path, write_cluster(), "--sbatch-arg", "comment=mine | and more")
    [call] = calls(tmp_path, "sbatch")
    assert call["argv"][1] == f"--comment=orch:{folder.name} mine | and more"
    proc = orch(tmp_path, "status", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["job_id"] == "4242"


def test_logs_of_the_folder_finds_the_queued_job(write_cluster: Callable[..., Path], tmp_path: Path) -> None:
    folder = killed_submit(tmp_path, write_cluster())
    proc = orch(tmp_path, "logs", str(folder))
    assert "Traceback" not in proc.stderr and "no job id" not in proc.stderr, proc.stderr
    assert (folder / "job_id").read_text(encoding="ascii") == "4242\n"


SUBMITTED_KEYS = {"job_id", "job_dir", "submitted", "job_name", "cluster", "remote"}


def test_a_reconciled_folder_has_the_records_a_whole_submit_writes(write_cluster: Callable[..., Path],
                                                                    tmp_path: Path) -> None:
    cluster = write_cluster()
    whole = orch(tmp_path, "submit", "smoke", "--cluster", str(cluster), "--json")
    assert whole.returncode == 0, whole.stderr
    reference = json.loads((Path(json.loads(whole.stdout)["job_dir"]) / "submitted.json").read_text())
    (tmp_path / "queue.jsonl").unlink()  # the killed submit's job is then the only one Slurm holds
    folder = killed_submit_beside(tmp_path, cluster)
    assert not (folder / "submitted.json").exists()
    proc = orch(tmp_path, "status", str(folder), "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    record = json.loads((folder / "submitted.json").read_text(encoding="utf-8"))
    assert set(record) == set(reference) == SUBMITTED_KEYS
    assert (record["job_id"], record["job_dir"], record["job_name"], record["cluster"]) == (
        "4243", str(folder), reference["job_name"], reference["cluster"])
    assert record["submitted"].endswith("+00:00")  # UTC, as a submit writes it
    assert (folder / "submitted.json").stat().st_mode & 0o777 == 0o600
    index = [json.loads(line) for line in (Path(os.environ["ORCH_STATE_DIR"]) / "jobs.jsonl").read_text().splitlines()]
    assert [r["job_dir"] for r in index if r["job_id"] == "4243"] == [str(folder)]
    by_id = orch(tmp_path, "status", "4243", "--json")  # the index finds it, and Slurm's job is this folder's
    assert by_id.returncode == 0, by_id.stderr
    row = json.loads(by_id.stdout)
    assert (row["job_dir"], row["state"], row.get("reused")) == (str(folder), "PENDING", None), row


def test_a_reconciled_sweep_gives_each_element_its_records(write_cluster: Callable[..., Path],
                                                           tmp_path: Path) -> None:
    folder = killed_submit(tmp_path, write_cluster(), "--sweep", "lr=0.1,0.2,0.3")
    proc = orch(tmp_path, "list", "--json", "--cluster", str(tmp_path / "cluster.yaml"))
    assert proc.returncode == 0, proc.stderr
    for index in (0, 1, 2):
        record = json.loads((folder / str(index) / "submitted.json").read_text(encoding="utf-8"))
        assert (record["job_id"], record["job_dir"]) == (f"4242_{index}", str(folder / str(index)))


def killed_submit_beside(tmp_path: Path, cluster: Path) -> Path:
    """As :func:`killed_submit`, in a job root that already holds a folder: the new folder."""
    before = set((tmp_path / "jobs").iterdir())
    proc = orch(tmp_path, "submit", "smoke", "--cluster", str(cluster), ORCH_STUB_SBATCH_KILL_PARENT="1",
                ORCH_STUB_SBATCH_STDOUT="4243")
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    [folder] = [p for p in (tmp_path / "jobs").iterdir() if p.is_dir() and p not in before]
    return folder
