"""The memory of bad nodes across jobs (records/restarts/badnodes.py, records/restarts/nodeevidence.py,
slurm/nodememory.py, orch nodes): the record file, several writers at once, the evidence table, the
submit-time exclusion as the dry run shows it, and orch nodes. No Slurm here (tests/e2e/ has it)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, clean_environ

from orchestrator.errors import ConfigError
from orchestrator.records.restarts import badnodes
from orchestrator.records.restarts.blame import blame
from orchestrator.records.restarts.nodeevidence import evidence
from orchestrator.records.restarts.rankoutcome import RankOutcome

HOUR = 3600.0


# --- the file --------------------------------------------------------------------------------------------

def test_record_active_and_ttl(tmp_path: Path) -> None:
    badnodes.record(tmp_path, "node2", "hang", "101", now=1000.0)
    badnodes.record(tmp_path, "node3", "preflight", "102", now=1000.0 + HOUR)
    badnodes.record(tmp_path, "node2", "signal", "103", now=1000.0 + 2 * HOUR)
    lines = (tmp_path / badnodes.FILE).read_text().splitlines()
    assert [json.loads(line)["node"] for line in lines] == ["node2", "node3", "node2"]
    first = json.loads(lines[0])
    assert first == {"node": "node2", "kind": "hang", "job_id": "101", "time": "1970-01-01T00:16:40Z",
                     "ts": 1000.0}
    now = 1000.0 + 2.5 * HOUR
    nodes = badnodes.active(tmp_path, 24 * HOUR, now)
    assert [(n.node, n.kind, n.job_id, n.count) for n in nodes] == [("node2", "signal", "103", 2),
                                                                     ("node3", "preflight", "102", 1)]
    # only evidence younger than the ttl counts
    assert [(n.node, n.count) for n in badnodes.active(tmp_path, 1 * HOUR, now)] == [("node2", 1)]
    assert badnodes.active(tmp_path, 0.4 * HOUR, now) == []
    assert badnodes.active(tmp_path / "none", 24 * HOUR, now) == []  # no file: no bad node


def test_forget_is_a_line_too_and_cancels_only_what_came_before(tmp_path: Path) -> None:
    badnodes.record(tmp_path, "node2", "hang", "1", now=10.0)
    badnodes.record(tmp_path, "node3", "hang", "1", now=10.0)
    assert badnodes.forget(tmp_path, "node2", now=20.0) == ["node2"]
    assert [n.node for n in badnodes.active(tmp_path, HOUR, 30.0)] == ["node3"]
    assert badnodes.forget(tmp_path, "node2", now=21.0) == []  # nothing left to forget: no line
    badnodes.record(tmp_path, "node2", "signal", "2", now=25.0)  # new evidence after the forget counts
    assert [n.node for n in badnodes.active(tmp_path, HOUR, 30.0)] == ["node2", "node3"]
    assert badnodes.forget(tmp_path, None, now=40.0) == ["node2", "node3"]
    assert badnodes.active(tmp_path, HOUR, 50.0) == []
    assert len((tmp_path / badnodes.FILE).read_text().splitlines()) == 5  # appended, never rewritten


@pytest.mark.parametrize(("node", "kind"), [("node[1-2]", "hang"), ("a b", "hang"), ("", "hang"),
                                            ("-x", "hang"), ("node1\n", "hang"), ("node1", "user_error"),
                                            ("node1", "exception")])
def test_hostile_names_and_kinds_are_refused(tmp_path: Path, node: str, kind: str) -> None:
    with pytest.raises(ConfigError):
        badnodes.record(tmp_path, node, kind, "1")
    assert not (tmp_path / badnodes.FILE).exists()


def test_lines_that_are_not_records_are_skipped(tmp_path: Path) -> None:
    badnodes.record(tmp_path, "node1", "hang", "1", now=10.0)
    with (tmp_path / badnodes.FILE).open("a") as fh:
        fh.write('{"node": "node9", "kind": "hang", "job_id": "1", "ts"\n')  # torn (a foreign writer)
        fh.write('[1, 2]\n{"node": "x y", "kind": "hang", "job_id": "1", "ts": 1}\n')
        fh.write('{"node": "node8", "kind": "python", "job_id": "1", "ts": 11}\n\xff\xfe\n')
        fh.write('{"node": "node7", "kind": "nccl_cuda", "job_id": "2", "ts": true}\n')
    badnodes.record(tmp_path, "node2", "nccl_cuda", "2", now=12.0)
    entries, notes = badnodes.read(tmp_path)
    assert [e["node"] for e in entries] == ["node1", "node2"] and len(notes) == 6
    assert [n.node for n in badnodes.active(tmp_path, HOUR, 20.0)] == ["node1", "node2"]


def _writer(root: str, worker: int, count: int) -> None:
    for i in range(count):
        badnodes.record(Path(root), f"w{worker}n{i % 7}", list(badnodes.KINDS)[i % len(badnodes.KINDS)],
                        f"{worker}-{i}-" + "x" * (i % 150))


def test_several_writers_at_once_lose_and_tear_no_line(tmp_path: Path) -> None:
    workers, count = 8, 250
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, count)) for w in range(workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    raw = (tmp_path / badnodes.FILE).read_bytes()
    lines = raw.splitlines()
    assert raw.endswith(b"\n") and len(lines) == workers * count
    entries = [json.loads(line) for line in lines]  # every line whole
    assert sorted(e["job_id"] for e in entries) == sorted(f"{w}-{i}-" + "x" * (i % 150)
                                                          for w in range(workers) for i in range(count))
    for w in range(workers):  # each writer's lines in its own order
        mine = [e["job_id"].split("-")[1] for e in entries if e["job_id"].startswith(f"{w}-")]
        assert mine == [str(i) for i in range(count)]
    assert len(badnodes.active(tmp_path, HOUR)) == workers * 7


def test_the_file_is_created_private_to_the_user_and_group(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        badnodes.record(tmp_path, "node1", "hang", "1")
    finally:
        os.umask(old)
    assert (tmp_path / badnodes.FILE).stat().st_mode & 0o777 == 0o640


# --- the evidence ------------------------------------------------------------------------------------------

def _rec(rank: int, kind: str, *, host: str | None = None, code: int | None = None, reason: str | None = None,
         **extra: Any) -> RankOutcome:
    return RankOutcome(rank=rank, world_size=2, run="55", restart=0, kind=kind,  # type: ignore[arg-type]
                       exit_code=code, reason=reason, host=host or f"node{rank + 1}", started=1.0,
                       ended=None if kind == "running" else 5.0, **extra)


def _judge(records: list[RankOutcome], hosts: dict[int, str] | None = None) -> list[tuple[str, str]]:
    return evidence(blame(records, world_size=2, run="55"), records, run="55", hosts=hosts)


WAITED = {"how": "timeout", "timeout_s": 30, "timeout_setting": "launcher.collective_timeout",
          "reason": "a collective timed out"}


@pytest.mark.parametrize(("records", "expected"), [
    # a hang: rank 1 stopped making progress (stopped by srun afterwards), rank 0 waited for it
    ([_rec(0, "waited", code=3, **WAITED), _rec(1, "signalled", signal="SIGTERM", stopped_by="srun")],
     [("node2", "hang")]),
    # rank 1 died by a signal (SIGKILL, OOM): its record still says running, with the signal as exit code
    ([_rec(0, "waited", code=3, **WAITED), _rec(1, "running", code=-9)], [("node2", "signal")]),
    ([_rec(0, "running", code=-11), _rec(1, "waited", code=3, **WAITED)], [("node1", "signal")]),
    # NCCL / CUDA errors point at the node; a Python exception in user code never does
    ([_rec(0, "failed", code=1, reason="DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                                       "unhandled cuda error"), _rec(1, "completed", code=0)],
     [("node1", "nccl_cuda")]),
    ([_rec(0, "completed", code=0), _rec(1, "failed", code=1, reason="RuntimeError: CUDA error: an illegal "
                                                                      "memory access was encountered")],
     [("node2", "nccl_cuda")]),
    ([_rec(0, "failed", code=1, reason="ValueError: bad shape (job x, epoch 1, step 3)"),
      _rec(1, "waited", code=3, **WAITED)], []),
    ([_rec(0, "failed", code=1, reason="RuntimeError: injected failure on rank 0 at step 3"),
      _rec(1, "completed", code=0)], []),
    # a rank that exits 0 mid-run, ranks in different collectives, scancel: the job's code or the user's
    ([_rec(0, "waited", code=3, **WAITED), _rec(1, "completed", code=0)], []),
    ([_rec(0, "signalled", signal="SIGTERM", stopped_by="srun"),
      _rec(1, "signalled", signal="SIGTERM", stopped_by="srun")], []),
    ([_rec(0, "completed", code=0), _rec(1, "completed", code=0)], []),
])
def test_the_evidence_table(records: list[RankOutcome], expected: list[tuple[str, str]]) -> None:
    assert _judge(records) == expected


def test_a_task_that_never_started_needs_the_rank_table() -> None:
    records = [_rec(0, "waited", code=3, **WAITED)]  # rank 1 left no record of this run
    assert _judge(records) == []
    assert _judge(records, hosts={0: "node1", 1: "node2"}) == [("node2", "not_started")]


# --- orch nodes and the dry run ------------------------------------------------------------------------------

def _orch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          check=False, cwd=cwd, env=clean_environ())


def _hosts(dry_run: str) -> list[str]:
    """The HOST column of a dry run's rank table."""
    return [line.split()[0] for line in dry_run.splitlines() if line.startswith("dbg")]


@pytest.fixture
def cluster(write_cluster: Callable[..., Path]) -> Path:
    return write_cluster()


def _job_root(cluster: Path) -> Path:
    return cluster.parent / "jobs"


def test_orch_nodes_lists_and_forgets(cluster: Path) -> None:
    root = _job_root(cluster)
    root.mkdir()
    shown = _orch("nodes", "--cluster", str(cluster), cwd=cluster.parent)
    assert shown.returncode == 0 and "no node is recorded as bad" in shown.stdout
    badnodes.record(root, "node2", "hang", "4242")
    badnodes.record(root, "node5", "preflight", "4243")
    badnodes.record(root, "node9", "signal", "1", now=1.0)  # long ago: beyond the default 24 h
    shown = _orch("nodes", "--cluster", str(cluster), cwd=cluster.parent)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].split() == ["NODE", "EVIDENCE", "JOB", "RECORDED", "COUNT", "REASON"]
    assert "node2" in shown.stdout and "4242" in shown.stdout and "stopped making progress" in shown.stdout
    assert "node9" not in shown.stdout
    as_json = json.loads(_orch("nodes", "--cluster", str(cluster), "--json", cwd=cluster.parent).stdout)
    assert as_json["ttl_s"] == 86400 and [n["node"] for n in as_json["nodes"]] == ["node2", "node5"]
    assert as_json["nodes"][1]["kind"] == "preflight" and as_json["nodes"][1]["job_id"] == "4243"
    gone = _orch("nodes", "--cluster", str(cluster), "--forget", "node2", cwd=cluster.parent)
    assert gone.returncode == 0 and "forgot 1 node(s): node2" in gone.stdout
    missing = _orch("nodes", "--cluster", str(cluster), "--forget", "node2", cwd=cluster.parent)
    assert missing.returncode == 2 and "orch: error: node node2 is not recorded as bad" in missing.stderr
    bad = _orch("nodes", "--cluster", str(cluster), "--forget", "node[1-3]", cwd=cluster.parent)
    assert bad.returncode == 2 and "is not a node name" in bad.stderr
    every = _orch("nodes", "--cluster", str(cluster), "--all", "--json", cwd=cluster.parent)
    assert json.loads(every.stdout) == {"forgotten": ["node5", "node9"]}
    assert json.loads(_orch("nodes", "--cluster", str(cluster), "--json", cwd=cluster.parent).stdout)["nodes"] == []


def test_the_dry_run_leaves_a_recorded_node_out_and_says_why(cluster: Path, write_job: Callable[..., Path]) -> None:
    job = write_job(nodes=2, gpus=4, partition="debug")  # partition debug: dbg[1-4]
    root = _job_root(cluster)
    root.mkdir()
    before = _orch("submit", str(job), "--cluster", str(cluster), "--dry-run", cwd=cluster.parent)
    assert before.returncode == 0, before.stderr
    assert "#SBATCH --exclude" not in before.stdout and "left out" not in before.stdout
    hosts_before = list(dict.fromkeys(_hosts(before.stdout)))
    assert hosts_before == ["dbg1", "dbg2"]
    badnodes.record(root, hosts_before[0], "hang", "777")
    after = _orch("submit", str(job), "--cluster", str(cluster), "--dry-run", cwd=cluster.parent)
    assert after.returncode == 0, after.stderr
    assert f"#SBATCH --exclude={hosts_before[0]}" in after.stdout
    assert (f"# left out: {hosts_before[0]} (a rank on it stopped making progress (blamed for a hang): job 777, "
            in after.stdout) and "launcher.bad_node_ttl 86400 s" in after.stdout
    assert list(dict.fromkeys(_hosts(after.stdout))) == ["dbg2", "dbg3"]
    as_json = json.loads(_orch("submit", str(job), "--cluster", str(cluster), "--dry-run", "--json",
                               cwd=cluster.parent).stdout)
    assert [n["node"] for n in as_json["bad_nodes"]["left_out"]] == [hosts_before[0]]
    assert all(r["host"] != hosts_before[0] for r in as_json["ranks"])
    # the user's own --exclude is kept, and the union goes to sbatch
    both = _orch("submit", str(job), "--cluster", str(cluster), "--dry-run", "--exclude", hosts_before[1],
                 cwd=cluster.parent)
    assert both.returncode == 0, both.stderr
    assert [line for line in both.stdout.splitlines() if line.startswith("#SBATCH --exclude=")] == \
        ['#SBATCH --exclude="dbg[1-2]"']
    assert list(dict.fromkeys(_hosts(both.stdout))) == ["dbg3", "dbg4"]
    # --nodelist naming the node wins (and the dry run says so)
    named = _orch("submit", str(job), "--cluster", str(cluster), "--dry-run", "--nodelist", hosts_before[0],
                  cwd=cluster.parent)
    assert named.returncode == 0, named.stderr
    assert "#SBATCH --exclude" not in named.stdout
    assert f"# kept: {hosts_before[0]} is named in --nodelist although recorded as bad" in named.stdout
    # forgotten: used again
    assert _orch("nodes", "--cluster", str(cluster), "--forget", hosts_before[0], cwd=cluster.parent).returncode == 0
    again = _orch("submit", str(job), "--cluster", str(cluster), "--dry-run", cwd=cluster.parent)
    assert "#SBATCH --exclude" not in again.stdout and "left out" not in again.stdout


def test_ttl_zero_remembers_nothing_and_too_few_nodes_is_an_error(write_cluster: Callable[..., Path],
                                                                   write_job: Callable[..., Path]) -> None:
    job = write_job(nodes=4, gpus=4, partition="debug")  # every node of partition debug
    cluster = write_cluster()
    root = _job_root(cluster)
    root.mkdir()
    badnodes.record(root, "dbg3", "signal", "9")
    badnodes.record(root, "gpu007", "hang", "9")  # another partition's node: not this job's business
    full = _orch("submit", str(job), "--cluster", str(cluster), "--dry-run", cwd=cluster.parent)
    assert full.returncode == 2
    assert "partition debug has 3 node(s) left without the nodes recorded as bad (dbg3)" in full.stderr
    assert "HINT: orch nodes lists them; orch nodes --forget NODE" in full.stderr
    off = write_cluster(launcher={"bad_node_ttl": 0}, name="off.yaml")
    fine = _orch("submit", str(job), "--cluster", str(off), "--dry-run", cwd=cluster.parent)
    assert fine.returncode == 0, fine.stderr
    assert "left out" not in fine.stdout and "--exclude" not in fine.stdout
    too_long = write_cluster(launcher={"bad_node_ttl": 366 * 86400}, name="long.yaml")
    refused = _orch("submit", str(job), "--cluster", str(too_long), "--dry-run", cwd=cluster.parent)
    assert refused.returncode == 2 and "bad_node_ttl" in refused.stderr


def test_the_cli_path_imports_no_torch_for_orch_nodes(cluster: Path) -> None:
    code = ("import sys; from orchestrator.cli import main; main(['nodes', '--cluster', sys.argv[1]]); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    proc = subprocess.run([sys.executable, "-c", code, str(cluster)], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert proc.returncode == 0, proc.stderr


# --- what records nodes today: a failed preflight, a failed job's blame ------------------------------------------

def test_a_failed_preflight_records_its_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.records.jobcreate import write_run_config
    from orchestrator.slurm.preflight import main
    from orchestrator.spec.runconfig import Preflight, RunConfig

    job_dir = tmp_path / "jobs" / "job-1"
    job_dir.mkdir(parents=True)
    write_run_config(job_dir, RunConfig(
        mode="slurm", job_name="j", job_file="/j.py", params={}, nodes=1, gpus_per_node=1, tasks_per_node=1,
        cpus_per_task=1, job_dir=str(job_dir), created="now",
        preflight=Preflight(mode="stop", partition_nodes=["node1", "node2"])))
    verdict = {"checks": [{"name": "test_hook", "ok": False, "detail": "rank 1 on node2: failed on purpose"}],
               "failed_nodes": [{"host": "node2", "check": "test_hook"}]}
    (job_dir / "preflight.json").write_text(json.dumps(verdict), encoding="utf-8")
    assert main(["--job-dir", str(job_dir), "--job-id", "71", "--step-rc", "1"]) == 1
    capsys.readouterr()
    nodes = badnodes.active(tmp_path / "jobs", HOUR)
    assert [(n.node, n.kind, n.job_id) for n in nodes] == [("node2", "preflight", "71")]


def test_a_failed_jobs_blame_records_its_node(tmp_path: Path) -> None:
    from orchestrator.slurm.nodememory import main

    job_dir = tmp_path / "jobs" / "job-2"
    (job_dir / "logs").mkdir(parents=True)
    records = [_rec(0, "waited", code=3, **WAITED), _rec(1, "running", code=-9)]
    for rec in records:
        (job_dir / "logs" / f"rank{rec.rank}.outcome.json").write_text(rec.model_dump_json(), encoding="utf-8")
    assert main(["--job-dir", str(job_dir), "--job-id", "55"]) == 0
    assert [(n.node, n.kind, n.job_id) for n in badnodes.active(tmp_path / "jobs", HOUR)] == [("node2", "signal", "55")]
    # a user exception records nothing
    (job_dir / "logs" / "rank1.outcome.json").write_text(
        _rec(1, "failed", code=1, reason="KeyError: 'x'").model_dump_json(), encoding="utf-8")
    badnodes.forget(tmp_path / "jobs", None)
    (job_dir / "job_id").write_text("55\n", encoding="utf-8")  # what the batch script passes: the folder's id
    assert main(["--job-dir", str(job_dir)]) == 0
    assert badnodes.active(tmp_path / "jobs", HOUR) == []


@pytest.mark.parametrize(("ttl", "said", "remembered"), [
    (0, "orch: node node2: a rank on it died by a signal (killed, out of memory, node lost); not remembered for "
        "later jobs (launcher.bad_node_ttl is 0: orch nodes lists no node, orch submit leaves none out)", []),
    (86400, "orch: node node2 recorded as bad (a rank on it died by a signal (killed, out of memory, node lost)); "
            "later jobs leave it out for launcher.bad_node_ttl (86400 s) (orch nodes)", [("node2", "signal", "55")]),
])
def test_the_batch_log_says_what_orch_nodes_will_list(tmp_path: Path, capsys: pytest.CaptureFixture[str], ttl: int,
                                                      said: str, remembered: list[tuple[str, str, str]]) -> None:
    """The job's launcher.bad_node_ttl decides: 0 remembers nothing (orch nodes lists none), and the batch log
    says so rather than "later jobs leave it out"; the node is left out of this job's own resubmission all the
    same (attempts.json, slurm/restart.py)."""
    from orchestrator.records.jobcreate import write_run_config
    from orchestrator.slurm.nodememory import main
    from orchestrator.slurm.preflight import main as preflight_main
    from orchestrator.spec.cluster import Launcher
    from orchestrator.spec.runconfig import Preflight, RunConfig

    job_dir = tmp_path / "jobs" / "job-4"
    (job_dir / "logs").mkdir(parents=True)
    write_run_config(job_dir, RunConfig(
        mode="slurm", job_name="j", job_file="/j.py", params={}, nodes=2, gpus_per_node=1, tasks_per_node=1,
        cpus_per_task=1, job_dir=str(job_dir), created="now", launcher=Launcher(bad_node_ttl=ttl),
        preflight=Preflight(mode="stop", partition_nodes=["node1", "node2"])))
    for rec in [_rec(0, "waited", code=3, **WAITED), _rec(1, "running", code=-9)]:
        (job_dir / "logs" / f"rank{rec.rank}.outcome.json").write_text(rec.model_dump_json(), encoding="utf-8")
    assert main(["--job-dir", str(job_dir), "--job-id", "55"]) == 0
    assert said in capsys.readouterr().err
    assert [(n.node, n.kind, n.job_id) for n in badnodes.active(tmp_path / "jobs", HOUR)] == remembered
    badnodes.forget(tmp_path / "jobs", None)
    (job_dir / "preflight.json").write_text(json.dumps({"checks": [], "failed_nodes": [
        {"host": "node2", "check": "test_hook"}]}), encoding="utf-8")
    assert preflight_main(["--job-dir", str(job_dir), "--job-id", "56", "--step-rc", "1"]) == 1
    capsys.readouterr()
    assert [n.node for n in badnodes.active(tmp_path / "jobs", HOUR)] == [n for n, _, _ in remembered]


def test_a_sweep_elements_nodes_go_to_the_job_root(tmp_path: Path) -> None:
    from orchestrator.slurm.nodememory import main

    element = tmp_path / "jobs" / "sweep-1" / "3"
    (element / "logs").mkdir(parents=True)
    (tmp_path / "jobs" / "sweep-1" / "array.json").write_text("{}", encoding="utf-8")
    (element / "job_id").write_text("90_3\n", encoding="utf-8")
    for rec in [_rec(0, "waited", code=3, **WAITED), _rec(1, "signalled", signal="SIGTERM", stopped_by="srun")]:
        record = rec.model_copy(update={"run": "90_3"})
        (element / "logs" / f"rank{rec.rank}.outcome.json").write_text(record.model_dump_json(), encoding="utf-8")
    assert main(["--job-dir", str(element)]) == 0
    assert [(n.node, n.kind, n.job_id) for n in badnodes.active(tmp_path / "jobs", HOUR)] == [("node2", "hang", "90_3")]


def test_in_the_batch_script_a_rank_that_never_started_is_placed_by_the_allocation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.records.jobcreate import write_run_config
    from orchestrator.slurm.nodememory import allocation_hosts, main
    from orchestrator.spec.runconfig import RunConfig

    job_dir = tmp_path / "jobs" / "job-3"
    (job_dir / "logs").mkdir(parents=True)
    write_run_config(job_dir, RunConfig(mode="slurm", job_name="j", job_file="/j.py", params={}, nodes=2,
                                        gpus_per_node=2, tasks_per_node=2, cpus_per_task=1, job_dir=str(job_dir),
                                        created="now"))
    (job_dir / "job_id").write_text("66\n", encoding="utf-8")
    assert allocation_hosts(job_dir, {"SLURM_JOB_NODELIST": "gpu[07-08]"}) == \
        {0: "gpu07", 1: "gpu07", 2: "gpu08", 3: "gpu08"}
    assert allocation_hosts(job_dir, {"SLURM_JOB_NODELIST": "gpu[07-09]"}) is None  # not the whole allocation
    assert allocation_hosts(job_dir, {}) is None
    # ranks 0, 1 and 3 waited for rank 2, which left no record at all: its task never started on gpu08
    for rank in (0, 1, 3):
        rec = RankOutcome(rank=rank, world_size=4, run="66", restart=0, kind="waited", exit_code=3, host="x",
                          started=1.0, ended=5.0, **WAITED)  # type: ignore[arg-type]
        (job_dir / "logs" / f"rank{rank}.outcome.json").write_text(rec.model_dump_json(), encoding="utf-8")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[07-08]")
    assert main(["--job-dir", str(job_dir)]) == 0
    assert [(n.node, n.kind, n.job_id) for n in badnodes.active(tmp_path / "jobs", HOUR)] == \
        [("gpu08", "not_started", "66")]


def test_a_real_submit_says_what_it_left_out_and_sbatch_gets_it(clean_env: pytest.MonkeyPatch, stubs: Any,
                                                                write_cluster: Callable[..., Path],
                                                                write_job: Callable[..., Path], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    cluster = write_cluster()
    clean_env.setenv("ORCH_CLUSTER", str(cluster))
    root = tmp_path / "jobs"
    root.mkdir()
    badnodes.record(root, "dbg1", "nccl_cuda", "31")
    assert main(["submit", str(write_job(nodes=2, gpus=4, partition="debug")), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["job_id"] == "4242"  # stdout stays JSON
    assert "orch: left out: dbg1 (a rank on it reported an NCCL or CUDA error: job 31" in err
    [call] = stubs.records("sbatch")
    assert "--exclude=dbg1" in call["sbatch_options"]
