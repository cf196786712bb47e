"""``orch list`` and ``orch status`` on a job root of ten thousand folders print a bounded table (the newest, and
that there are more), find an old id, list paths without reading folders, ask Slurm in bounded batches when every
job is listed, and take any ``--limit`` (the speed figures, for tens of thousands of folders, are in
bench/bench_many_jobs.py, not asserted here).

The Slurm clients are stand-ins first on PATH (real subprocesses, as the CLI runs them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import assert_bounded

from orchestrator.cli import main
from orchestrator.commands.list_jobs import DEFAULT_LIMIT
from orchestrator.records.jobdirs import iter_job_paths, newest_with_id
from orchestrator.slurm import client
from orchestrator.spec.runconfig import RunConfig, run_config_text

# -- a job root of 10,000 folders ------------------------------------------------------------------

FOLDERS = 10_000
# their 9,000 ids (every tenth folder has none) fill more than two of the Slurm client's batches
IDS_BYTES = len(" ".join(str(500_000 + i) for i in range(FOLDERS) if i % 10))


def _config_text(folder: Path, created: str) -> str:
    return run_config_text(RunConfig(
        mode="slurm", job_name="scale", job_file="/jobs/x.py", params={}, nodes=1, gpus_per_node=1,
        tasks_per_node=1, cpus_per_task=1, job_dir=str(folder), created=created))


def _folder(root: Path, i: int) -> Path:
    # one folder per second from 2026-02-01 (names carry the stamp, as job_dir_path writes them)
    day, rest = divmod(i, 86_400)
    return root / f"scale-202602{1 + day:02d}-{rest // 3600:02d}{rest % 3600 // 60:02d}{rest % 60:02d}-{i:06x}"


@pytest.fixture(scope="module")
def big_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("big") / "jobs"
    root.mkdir()
    template = _config_text(Path("@DIR@"), "2026-02-01T00:00:00")
    for i in range(FOLDERS):
        folder = _folder(root, i)
        folder.mkdir()
        (folder / "job.json").write_text(template.replace("@DIR@", str(folder)))
        if i % 10:
            (folder / "job_id").write_text(f"{500_000 + i}\n")
        else:  # every tenth was refused by sbatch
            (folder / "submit_error.txt").write_text("sbatch: error: invalid partition\n")
    (root / "notes").mkdir()  # a folder that is no job folder is skipped
    yield root


def _cluster(tmp_path: Path, root: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        "name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 8, cpus_per_node: 4, "
        f"mem_per_node: 4096}}\nlauncher:\n  job_root: {root}\n")


def test_orch_list_of_10000_folders_prints_the_newest_and_says_there_are_more(
        scale_slurm: Path, big_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _cluster(tmp_path, big_root)
    assert main(["list"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out[1:] if not line.startswith("#")]
    assert len(rows) == DEFAULT_LIMIT
    assert str(_folder(big_root, FOLDERS - 1)) in rows[0]  # newest first
    assert out[-1].startswith(f"# the {DEFAULT_LIMIT} newest jobs")
    asked = assert_bounded(scale_slurm, "squeue")
    assert sum(c["ids"] for c in asked) == DEFAULT_LIMIT - DEFAULT_LIMIT // 10  # only the shown folders

    assert main(["list", "--limit", "12", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [r["job_dir"] for r in shown] == [str(_folder(big_root, FOLDERS - 1 - k)) for k in range(12)]
    before = len(assert_bounded(scale_slurm, "squeue"))
    assert main(["list", "--limit", "9" * 25, "--json"]) == 0  # more than islice takes: all of them
    everything = json.loads(capsys.readouterr().out)
    assert len(everything) == FOLDERS
    states = {r["state"] for r in everything}
    assert {"RUNNING", "COMPLETED", "FAILED", "NOT_QUEUED"} <= states and "UNKNOWN" not in states
    assert IDS_BYTES > 2 * client.ID_BATCH_BYTES
    assert len(assert_bounded(scale_slurm, "squeue")) - before >= 3  # every id asked, in bounded batches
    assert_bounded(scale_slurm, "sacct")


def test_status_of_an_old_job_id_among_10000_folders(
        scale_slurm: Path, big_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _cluster(tmp_path, big_root)
    assert main(["status", "500001", "500017", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["job_id"], r["job_dir"], r["state"]) for r in rows] == [
        ("500001", str(_folder(big_root, 1)), "RUNNING"), ("500017", str(_folder(big_root, 17)), "FAILED")]
    assert main(["status", "--limit", "3", "--json"]) == 0
    assert [r["job_dir"] for r in json.loads(capsys.readouterr().out)] == [
        str(_folder(big_root, i)) for i in (FOLDERS - 1, FOLDERS - 2, FOLDERS - 3)]


def test_paths_are_listed_without_reading_folders(big_root: Path) -> None:
    newest = iter_job_paths(big_root)
    assert [next(newest) for _ in range(3)] == [_folder(big_root, FOLDERS - 1 - k) for k in range(3)]
    found = newest_with_id(big_root, ["500001", "509999", "499999"])
    assert sorted(found) == ["500001", "509999"]
    assert found["500001"].path == _folder(big_root, 1)


@pytest.mark.parametrize("limit", ["9" * 20, str(2**63), "0"])
def test_list_and_status_take_any_limit(scale_slurm: Path, tmp_path: Path, limit: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "few"
    root.mkdir()
    for i in range(5):
        folder = _folder(root, i)
        folder.mkdir()
        (folder / "job.json").write_text(_config_text(folder, "2026-02-01T00:00:00"))
        (folder / "job_id").write_text(f"{700 + i}\n")
    _cluster(tmp_path, root)
    assert main(["list", "--limit", limit, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 5
    assert main(["status", "--limit", limit, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == (0 if limit == "0" else 5)
