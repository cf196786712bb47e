"""``orch resubmit SWEEP --failed`` with the stub sbatch (it records its arguments) and stand-in squeue/sacct
(``slurm_answers``): a 4-element sweep whose elements 1 and 3 failed and timed out; exactly those two are queued
again as ``--array=1,3`` of the sweep's own script (each element in its own folder, which resumes from its
checkpoint: the script checks and loads it as a requeued job's); the resubmission is recorded, and ``orch status``
/ ``orch compare`` of the sweep show each element's latest run. Refusals: nothing failed, elements still running,
a job that is no sweep, no ``--failed``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from orchestrator.cli import main
from orchestrator.records.sweeps import read_resubmissions
from orchestrator.runtime.metrics import EpochMetrics, MetricsLog

if TYPE_CHECKING:
    from support import Stubs

Capsys = pytest.CaptureFixture[str]
SWEEP = ("submit", "smoke", "--nodes", "1", "--gpus", "1", "--sweep", "lr=0.1,0.2,0.3,0.4", "--json")
FIRST = {0: "COMPLETED", 1: "FAILED", 2: "COMPLETED", 3: "TIMEOUT"}


def orch(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def slurm_says(answers: Path, states: dict[str, str]) -> None:
    """squeue's lines for these jobs (JobArrayID|State|Reason|NodeList|TimeUsed|RestartCnt|SubmitTime|Name)."""
    (answers / "squeue.out").write_text("".join(f"{job_id}|{state}|None|node1|0:10|0|Unknown|smoke\n"
                                                for job_id, state in states.items()))
    (answers / "sacct.out").write_text("")


@pytest.fixture
def sweep(clean_env: pytest.MonkeyPatch, stubs: Stubs, slurm_answers: Path, write_cluster: Callable[..., Path],
          capsys: Capsys) -> dict[str, Any]:
    """A 4-element sweep queued as array 4242, then elements 1 (FAILED) and 3 (TIMEOUT) ended badly."""
    clean_env.setenv("ORCH_CLUSTER", str(write_cluster()))
    code, out, err = orch(capsys, *SWEEP)
    assert code == 0, err
    folder = Path(json.loads(out)["job_dir"])
    slurm_says(slurm_answers, {f"4242_{i}": state for i, state in FIRST.items()})
    for index in range(4):  # a checkpoint file of each element's first run (the resume reads it)
        (folder / str(index) / "checkpoints" / "latest.pt").write_bytes(b"state of element %d" % index)
    clean_env.setenv("ORCH_STUB_SBATCH_STDOUT", "4250")
    return {"folder": folder, "answers": slurm_answers, "stubs": stubs, "env": clean_env}


def test_only_the_failed_elements_are_queued_again(sweep: dict[str, Any], capsys: Capsys) -> None:
    folder, stubs = sweep["folder"], sweep["stubs"]
    code, out, err = orch(capsys, "resubmit", "4242", "--failed", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["job_id"], data["array"], data["dry_run"]) == ("4250", "1,3", False)
    assert [(e["index"], e["job_id"], e["was"], e["state"]) for e in data["elements"]] == [
        (1, "4250_1", "4242_1", "FAILED"), (3, "4250_3", "4242_3", "TIMEOUT")]
    first, again = stubs.records("sbatch")
    assert again["argv"] == ["--parsable", "--array=1,3", str(folder / "sbatch.sh")]
    assert again["script"] == first["script"]  # the sweep's own script: element N in <folder>/N, resuming
    assert 'JOB_DIR="$JOB_DIR/$SLURM_ARRAY_TASK_ID"' in again["script"]
    # each element keeps its folder and its checkpoint; the failed ones name their new run
    ids = {i: (folder / str(i) / "job_id").read_text().strip() for i in range(4)}
    assert ids == {0: "4242_0", 1: "4250_1", 2: "4242_2", 3: "4250_3"}
    assert all((folder / str(i) / "checkpoints" / "latest.pt").read_bytes() == b"state of element %d" % i
               for i in range(4))
    assert json.loads((folder / "1" / "submitted.json").read_text())["job_id"] == "4250_1"
    assert (folder / "job_id").read_text().strip() == "4250"
    [entry] = read_resubmissions(folder)
    assert (entry["job_id"], entry["previous"], entry["indices"]) == ("4250", "4242", [1, 3])
    assert entry["replaced"] == {"1": "4242_1", "3": "4242_3"}


def test_status_and_compare_show_each_elements_latest_run(sweep: dict[str, Any], capsys: Capsys) -> None:
    folder = sweep["folder"]
    assert orch(capsys, "resubmit", str(folder), "--failed")[0] == 0
    slurm_says(sweep["answers"], {"4242_0": "COMPLETED", "4250_1": "COMPLETED", "4242_2": "COMPLETED",
                                  "4250_3": "COMPLETED"})
    for ref in ("4242", "4250", str(folder)):  # either submission's id, or the folder
        code, out, err = orch(capsys, "status", ref, "--json")
        assert code == 0, err
        rows = json.loads(out)
        assert [(r["job_id"], r["state"]) for r in rows] == [
            ("4242_0", "COMPLETED"), ("4250_1", "COMPLETED"), ("4242_2", "COMPLETED"), ("4250_3", "COMPLETED")]
    for index, loss in enumerate((0.4, 0.1, 0.3, 0.2)):  # each element's epoch, written as the runtime writes it
        MetricsLog(folder / str(index) / "metrics.jsonl").append(EpochMetrics(
            epoch=1, epochs=1, values={"train_loss": loss}, names=(), samples_per_s=100.0, seconds=1.0,
            world_size=1, train_samples=100, steps=10))
    for ref in ("4242", "4250"):
        code, out, err = orch(capsys, "compare", ref, "--json")
        assert code == 0, err
        assert [r["job_id"] for r in json.loads(out)["runs"]] == ["4250_1", "4250_3", "4242_2", "4242_0"]


def test_dry_run_queues_nothing(sweep: dict[str, Any], capsys: Capsys) -> None:
    code, out, err = orch(capsys, "resubmit", "4242_1", "--failed", "--dry-run")  # an element names its sweep
    assert code == 0, err
    assert out.splitlines()[0] == f"would submit 2 element(s) of sweep {sweep['folder']} again (--array=1,3):"
    assert f"sbatch --array=1,3 {sweep['folder'] / 'sbatch.sh'}" in out
    assert len(sweep["stubs"].records("sbatch")) == 1 and read_resubmissions(sweep["folder"]) == []


@pytest.mark.parametrize(("states", "says"), [
    ({0: "COMPLETED", 1: "COMPLETED", 2: "CANCELLED", 3: "COMPLETED"}, "no element of sweep"),
    ({0: "COMPLETED", 1: "FAILED", 2: "RUNNING", 3: "PENDING"}, "still has elements queued or running"),
])
def test_refused_when_nothing_failed_or_elements_still_run(sweep: dict[str, Any], capsys: Capsys,
                                                           states: dict[int, str], says: str) -> None:
    slurm_says(sweep["answers"], {f"4242_{i}": state for i, state in states.items()})
    code, _, err = orch(capsys, "resubmit", "4242", "--failed")
    assert code == 2 and says in err and "HINT:" in err, err
    assert len(sweep["stubs"].records("sbatch")) == 1 and read_resubmissions(sweep["folder"]) == []


def test_refused_without_failed_and_for_a_single_job(sweep: dict[str, Any], capsys: Capsys) -> None:
    code, _, err = orch(capsys, "resubmit", "4242")
    assert code == 2 and "needs --failed" in err and "HINT: orch resubmit 4242 --failed" in err
    code, out, err = orch(capsys, "submit", "smoke", "--nodes", "1", "--gpus", "1", "--json")
    assert code == 0, err
    single = json.loads(out)["job_dir"]
    code, _, err = orch(capsys, "resubmit", single, "--failed")
    assert code == 2 and "is not a sweep" in err and "launcher.requeue" in err, err
    assert len(sweep["stubs"].records("sbatch")) == 2
