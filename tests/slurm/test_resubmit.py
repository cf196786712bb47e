"""A restart whose blamed node has no spare left submits the job again without that node.

The rule (``slurm/resubmit.py``, shared with ``--preflight=exclude``) is pure; the batch-script helper
(``python -m orchestrator.slurm.restart``) is run here on a job folder holding the records a killed rank
leaves; the end-to-end run is ``tests/e2e/test_e2e_restarts.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.restarts import attempts as att
from orchestrator.records.restarts.rankoutcome import RankOutcome
from orchestrator.slurm import restart
from orchestrator.slurm.resubmit import without
from orchestrator.spec.runconfig import NodeChoice, RunConfig

NODES = ["node1", "node2", "node3"]


@pytest.mark.parametrize(("choice", "bad", "nodes", "args", "why"), [
    (NodeChoice(partition_nodes=NODES), ["node2"], 2, ("--exclude=node2", "--nodelist="), ""),
    (NodeChoice(partition_nodes=NODES), ["node2"], 3, (), "without node2 only 2 node(s) remain, the job needs 3"),
    # the submit-time --exclude stays; a --nodelist loses the blamed node (sbatch options replace #SBATCH lines)
    (NodeChoice(exclude=["node3"], nodelist=["node1", "node2"], partition_nodes=[*NODES, "node4"]), ["node2"], 2,
     ("--exclude=node[2-3]", "--nodelist=node1"), ""),
    # a host name a rank saw ("vm") is not a node of the partition: sbatch would refuse it
    (NodeChoice(partition_nodes=NODES), ["vm", "node1"], 1, ("--exclude=node1", "--nodelist="), ""),
])
def test_without(choice: NodeChoice, bad: list[str], nodes: int, args: tuple[str, ...], why: str) -> None:
    plan = without(choice, bad, nodes=nodes)
    assert plan.sbatch_args == args and plan.why == why


WAITED = {"how": "lost", "exit_code": 3, "ended": 105.0, "reason": "lost"}


def _folder(tmp_path: Path, partition: list[str], spares: int = 0) -> Path:
    job_dir = tmp_path / "jobs" / "job-1"
    (job_dir / "logs").mkdir(parents=True)
    write_run_config(job_dir, RunConfig(
        mode="slurm", job_name="j", job_file="/j.py", params={}, nodes=2, gpus_per_node=1, tasks_per_node=1,
        cpus_per_task=1, job_dir=str(job_dir), created="now", spare_nodes=spares,
        node_choice=NodeChoice(partition_nodes=partition)))
    (job_dir / "job_id").write_text("66\n", encoding="utf-8")
    # rank 0 lost its peer; rank 1 (on the second node) never wrote an end: killed
    for rank, extra in ((0, {"kind": "waited", **WAITED}), (1, {"kind": "running"})):
        rec = RankOutcome.model_validate({"rank": rank, "world_size": 2, "run": "66", "restart": 0, "started": 100.0,
                                          "host": "vm", **extra})
        (job_dir / "logs" / f"rank{rank}.outcome.json").write_text(rec.model_dump_json(), encoding="utf-8")
    return job_dir


def _env(nodelist: str, **more: str) -> dict[str, str]:
    return {"SLURM_JOB_ID": "66", "SLURM_JOB_NODELIST": nodelist, "MASTER_ADDR": "10.0.0.1", **more}


def _helper(job_dir: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    from orchestrator.spec.cluster import Launcher

    cfg_path = job_dir / "job.json"
    data: dict[str, Any] = json.loads(cfg_path.read_text())
    data["launcher"] = {**Launcher().model_dump(mode="json"), "max_restarts": 2}
    cfg_path.write_text(json.dumps(data), encoding="utf-8")
    code = restart.main(["--job-dir", str(job_dir), "--attempt", "0", "--step-rc", "137"], environ=env)
    out, err = capsys.readouterr()
    return code, out.split("\n"), err


def test_a_blamed_node_without_a_spare_submits_the_job_again_without_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    job_dir = _folder(tmp_path, NODES)
    code, out, err = _helper(job_dir, _env("node[1-2]"), capsys)
    assert code == restart.RESUBMIT_EXIT, err
    assert (job_dir / att.RESUBMIT_NEXT_FILE).read_text() == "--exclude=node2\n--nodelist=\n"
    assert out[0] == "10.0.0.1" and out[1].isdigit(), out  # the same-nodes restart, should sbatch fail
    assert "attempt 0 stuck rank 1 on node2 (exit 137); submitting the job again without it" in err, err
    [entry] = att.read_attempts(job_dir)
    assert entry["job"] == "66" and entry["blamed_node"] == "node2" and entry["restarted"] is True
    # the batch script's sbatch answered 67: the folder follows it, the attempt names it
    assert restart.main(["--job-dir", str(job_dir), "--resubmitted", "67"], environ={}) == 0
    assert (job_dir / "job_id").read_text() == "67\n"
    assert att.read_attempts(job_dir)[-1]["resubmitted_as"] == "67"


@pytest.mark.parametrize(("partition", "env", "said"), [
    (["node1", "node2"], {}, "only 1 node(s) remain, the job needs 2: restarting on the same nodes"),
    (NODES, {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_JOB_ID": "66"}, "an array element is not submitted again"),
])
def test_no_node_to_move_to_restarts_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch, partition: list[str],
                                              env: dict[str, str], said: str) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    job_dir = _folder(tmp_path, partition)
    if env:  # an array element's records carry the element's run id
        for path in (job_dir / "logs").glob("rank*.outcome.json"):
            path.write_text(path.read_text().replace('"run":"66"', '"run":"66_3"'), encoding="utf-8")
    code, _out, err = _helper(job_dir, _env("node[1-2]", **env), capsys)
    assert code == 0 and said in err, err
    assert "restarting in the allocation" in err and not (job_dir / att.RESUBMIT_NEXT_FILE).exists()


def test_a_spare_left_restarts_in_the_allocation(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(restart, "node_addr", lambda node: node)  # no scontrol here
    job_dir = _folder(tmp_path, [*NODES, "node4"], spares=1)
    code, out, err = _helper(job_dir, _env("node[1-3]"), capsys)
    assert code == 0, err
    assert out[0] == "node1" and "--nodelist=node1,node3" in out, out
    assert "leaving out node2 (blamed)" in err


def test_the_ledger_counts_a_resubmitted_job_as_its_own_allocation() -> None:
    """The queue wait between the two jobs is no allocated time."""
    first = {"attempt": 0, "requeue": 0, "job": "66", "batch_started": 0.0, "started": 1.0, "ended": 10.0,
             "first_step": 2.0, "last_step_time": 9.0, "kind": "stuck"}
    second = {"attempt": 1, "requeue": 0, "job": "67", "batch_started": 100.0, "started": 101.0, "ended": 110.0,
              "first_step": 102.0, "last_step_time": 109.0, "kind": "completed"}
    assert att.ledger([first, second], queued_s=None)["allocated_s"] == 20.0


def test_the_next_attempt_counts_the_steps_in_process_restarts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The step of attempt 0 restarted once in its processes (launcher.restart: in-process): its end is
    attempt 1, and the batch script's next step is attempt 2 (the third line of restart_next)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    job_dir = _folder(tmp_path, ["node1", "node2"])
    for path in (job_dir / "logs").glob("rank*.outcome.json"):  # the records of the step's second attempt
        path.write_text(json.dumps({**json.loads(path.read_text()), "restart": 1}), encoding="utf-8")
    att.write_attempts(job_dir, [{"attempt": 0, "requeue": 0, "job": "66", "kind": "vanished", "in_process": True,
                                  "started": 90.0, "ended": 95.0, "restarted": True}])
    code, out, err = _helper(job_dir, _env("node[1-2]"), capsys)
    assert code == 0, err
    assert out[2] == "2", out
    assert "attempt 1 stuck rank 1" in err and "(attempt 2 of at most 3)" in err, err
    assert [a["attempt"] for a in att.read_attempts(job_dir)] == [0, 1]
