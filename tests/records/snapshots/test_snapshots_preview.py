"""``orch submit --dry-run`` says what the code snapshot would be (docs/snapshots.md): the tree's
root, git commit and dirty flag (or which folder, outside git), the file count and size, and whether an
identical snapshot is reused; or that snapshots are off. Through the real ``orch`` (subprocess) with stub
Slurm commands; the dry run writes nothing under the job root, even when it holds snapshots already.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, Stubs

TRAIN = "print('train')\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo,
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clean git work tree: train.py (15 bytes) and helper.py (12 bytes) tracked, data/ ignored."""
    root = tmp_path / "proj"
    (root / "data").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    (root / "helper.py").write_text("VERSION = 1\n")
    (root / "data" / "big.txt").write_text("data, never copied\n")
    (root / ".gitignore").write_text("data/\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "first")
    return root


@pytest.fixture
def job_root(tmp_path: Path) -> Path:
    return tmp_path / "jobs"  # write_cluster's launcher.job_root


def orch(stubs: Stubs, cwd: Path, cluster: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([ORCH, "submit", "--cluster", str(cluster), "--partition", "cpu", *args], cwd=cwd,
                          env=stubs.env(), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def snapshot_line(proc: subprocess.CompletedProcess[str]) -> str:
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("# code snapshot:")]
    return line


def dry_json(stubs: Stubs, cwd: Path, cluster: Path, *args: str) -> dict[str, Any]:
    snap: dict[str, Any] = json.loads(orch(stubs, cwd, cluster, *args, "--dry-run", "--json").stdout)["snapshot"]
    return snap


def listing(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``root`` (links not followed): (mode, size, mtime_ns); changes if anything is written."""
    out = {}
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(here) / name
            info = path.lstat()
            out[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return out


def test_a_git_tree_is_described_and_nothing_is_written(repo: Path, write_cluster: Callable[..., Path],
                                                        job_root: Path, stubs: Stubs) -> None:
    cluster = write_cluster()
    commit = _git(repo, "rev-parse", "HEAD")
    line = snapshot_line(orch(stubs, repo, cluster, "train.py", "--dry-run"))
    # .gitignore, helper.py, train.py: 6 + 12 + 15 bytes; data/ is linked, not counted
    assert line == (f"# code snapshot: {repo} (git {commit[:12]}; 3 files, 33 B): a new snapshot in "
                    f"{job_root}/.snapshots, taken at submit")
    assert not job_root.exists()
    snap = dry_json(stubs, repo, cluster, "train.py")
    assert snap == {"taken": True, "off": None, "source": str(repo), "git": True, "commit": commit, "dirty": False,
                    "files": 3, "bytes": 33, "store": str(job_root / ".snapshots"), "reuses": None, "problem": None}
    assert not job_root.exists()
    (repo / "notes.py").write_text("# untracked: copied, and the tree is dirty\n")
    assert f"(git {commit[:12]}, dirty; 4 files," in snapshot_line(orch(stubs, repo, cluster, "train.py", "--dry-run"))


def test_an_identical_snapshot_is_reused_and_left_untouched(repo: Path, write_cluster: Callable[..., Path],
                                                           job_root: Path, stubs: Stubs) -> None:
    cluster = write_cluster()
    job_dir = Path(json.loads(orch(stubs, repo, cluster, "train.py", "--json").stdout)["job_dir"])
    digest = json.loads((job_dir / "job.json").read_text())["snapshot"]["digest"]
    before = listing(job_root)
    assert any(name.endswith(".json") and ".stat" in name for name in before)  # the stat cache is there
    assert dry_json(stubs, repo, cluster, "train.py")["reuses"] == digest
    line = snapshot_line(orch(stubs, repo, cluster, "train.py", "--dry-run"))
    assert line.endswith(f": reuses {digest[:12]}, an identical snapshot in {job_root}/.snapshots")
    # only touched: the stat cache misses, the content is hashed (read only) and found in the store
    os.utime(repo / "helper.py", ns=(1, 1))
    assert dry_json(stubs, repo, cluster, "train.py")["reuses"] == digest
    assert listing(job_root) == before  # no object, tree, manifest time or stat cache written
    # an edit: content the store lacks, so a new snapshot (still nothing written)
    (repo / "helper.py").write_text("VERSION = 2\n")
    snap = dry_json(stubs, repo, cluster, "train.py")
    assert (snap["reuses"], snap["dirty"], snap["files"]) == (None, True, 3)
    assert listing(job_root) == before
    # the submit agrees with each answer: it takes a new snapshot now, and the dry run then reuses it
    again = Path(json.loads(orch(stubs, repo, cluster, "train.py", "--json").stdout)["job_dir"])
    new = json.loads((again / "job.json").read_text())["snapshot"]["digest"]
    assert new != digest
    assert dry_json(stubs, repo, cluster, "train.py")["reuses"] == new


def test_a_folder_outside_git_says_which_folder(tmp_path: Path, write_cluster: Callable[..., Path],
                                                job_root: Path, stubs: Stubs) -> None:
    work = tmp_path / "plain"
    (work / "runs").mkdir(parents=True)
    (work / "train.py").write_text(TRAIN)
    line = snapshot_line(orch(stubs, work, write_cluster(), "train.py", "--dry-run"))
    assert line == (f"# code snapshot: {work} (not a git tree: the script's folder; 1 files, 15 B): a new snapshot "
                    f"in {job_root}/.snapshots, taken at submit")
    assert not job_root.exists()


def test_snapshots_off_and_built_in_jobs(repo: Path, write_cluster: Callable[..., Path], job_root: Path,
                                         stubs: Stubs) -> None:
    line = snapshot_line(orch(stubs, repo, write_cluster(), "train.py", "--no-snapshot", "--dry-run"))
    assert line == "# code snapshot: off (--no-snapshot): every task runs the files in place"
    off = write_cluster(launcher={"snapshot": False})
    assert snapshot_line(orch(stubs, repo, off, "train.py", "--dry-run")) == (
        "# code snapshot: off (launcher.snapshot in cluster.yaml): every task runs the files in place")
    assert dry_json(stubs, repo, off, "train.py")["taken"] is False
    assert snapshot_line(orch(stubs, repo, off, "smoke", "--gpus", "0", "--ntasks-per-node", "1", "--dry-run",
                              "--no-snapshot")).startswith("# code snapshot: off")
    assert snapshot_line(orch(stubs, repo, write_cluster(), "smoke", "--gpus", "0", "--ntasks-per-node", "1",
                              "--dry-run")) == (
        "# code snapshot: none: smoke is a built-in job (part of orch, never copied)")
    assert not job_root.exists()


def test_a_snapshot_over_the_limit_is_named_not_written(repo: Path, write_cluster: Callable[..., Path],
                                                        job_root: Path, stubs: Stubs) -> None:
    (repo / "table.csv").write_bytes(b"1," * 2**20)  # 2 MB, untracked and not ignored: copied
    cluster = write_cluster(launcher={"snapshot_max_mb": 1})
    line = snapshot_line(orch(stubs, repo, cluster, "train.py", "--dry-run"))
    assert line.startswith(f"# code snapshot: of {repo}: the submit would stop: the code snapshot of {repo} would "
                           "be 2.0 MB, over launcher.snapshot_max_mb (1 MB); largest files: table.csv (2.0 MB)")
    assert "HINT: add data and outputs to .gitignore" in line
    assert not job_root.exists()


def test_a_sweep_of_a_job_file_shows_its_snapshot(tmp_path: Path, write_cluster: Callable[..., Path],
                                                  write_job: Callable[..., Path], job_root: Path,
                                                  stubs: Stubs) -> None:
    job = write_job(gpus=0)
    cluster = write_cluster()
    proc = orch(stubs, tmp_path, cluster, str(job), "--ntasks-per-node", "1", "--sweep", "lr=0.1,0.01",
                "--dry-run")
    assert snapshot_line(proc) == (f"# code snapshot: {job.parent} (not a git tree: the job file's folder; 1 files, "
                                   f"{job.stat().st_size} B): a new snapshot in {job_root}/.snapshots, taken at submit")
    assert json.loads(orch(stubs, tmp_path, cluster, str(job), "--ntasks-per-node", "1", "--sweep", "lr=0.1,0.01",
                           "--dry-run", "--json").stdout)["snapshot"]["source"] == str(job.parent)
    assert not job_root.exists()


def test_code_digest_is_the_digest_of_the_snapshot_the_submit_takes(repo: Path, job_root: Path) -> None:
    """orch mcp's plan hashes the code with code_digest: before the snapshot exists, after it (the stat cache
    answers), and after an edit (a new digest), it is what snapshot_config takes."""
    from orchestrator.records.snapshots.preview import code_digest
    from orchestrator.records.snapshots.store import snapshot_config
    from orchestrator.spec.cluster import Launcher
    from orchestrator.spec.runconfig import RunConfig
    from orchestrator.spec.script import ScriptTarget

    config = RunConfig(mode="slurm", job_name="t", job_file=str(repo / "train.py"), params={}, nodes=1,
                       gpus_per_node=0, tasks_per_node=1, cpus_per_task=1, job_dir=str(job_root / "t-1"),
                       created="2026-11-28T10:00:00+00:00", launcher=Launcher(snapshot=True),
                       script=ScriptTarget(kind="script", target=str(repo / "train.py"), cwd=str(repo)))
    before = code_digest(config, None)
    taken = snapshot_config(config, None).snapshot
    assert taken is not None and before == taken.digest == code_digest(config, None)
    (repo / "helper.py").write_text("VERSION = 2\n")
    edited = code_digest(config, None)
    assert edited not in (None, before)
    retaken = snapshot_config(config, None).snapshot
    assert retaken is not None and edited == retaken.digest
    assert code_digest(config, False) is None  # --no-snapshot: no snapshot, no digest
