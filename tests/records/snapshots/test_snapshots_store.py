"""Code snapshots: the real ``orch`` (subprocess), a real git repository in a temporary folder,
stub ``sbatch``/``srun`` (tests/stubs). The job's batch script is then run by bash as Slurm would run it,
its ``srun`` (the stub, ``ORCH_STUB_SRUN_EXEC=1``) starting the real task process: the code that runs is
the submitted code, whatever was edited after the submit; a requeue (restart 1) runs it too.

``orch run`` takes no snapshot (it starts the code right away); the Slurm test of the same contract is
tests/e2e/test_e2e_snapshot.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import ORCH, Stubs, batch_task_env

TRAIN_V1 = """\
import os, sys, json
import helper
out = {"version": 1, "helper": helper.VERSION, "cwd": os.getcwd(), "path0": sys.path[0], "argv0": sys.argv[0],
       "args": sys.argv[1:]}
out["data"] = open(os.environ.get("DATA_REL", "data/input.txt")).read().strip()
if "DATA_REL2" in os.environ:  # a second relative path, read by the same task
    out["data2"] = open(os.environ["DATA_REL2"]).read().strip()
# runs/: an ignored folder of the tree, so the original, through the snapshot's link
with open(os.environ.get("OUT_REL", "runs/written.txt"), "w") as fh:
    fh.write("from the job")
print("RESULT " + json.dumps(out), flush=True)
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo,
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree: train.py + helper.py tracked, data/ and runs/ ignored, an untracked notes.py."""
    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "runs").mkdir()
    (root / "train.py").write_text(TRAIN_V1)
    (root / "helper.py").write_text("VERSION = 1\n")
    (root / "data" / "input.txt").write_text("the data\n")
    (root / ".gitignore").write_text("data/\nruns/\n*.log\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "first")
    (root / "notes.py").write_text("# untracked, not ignored: copied\n")
    return root


@pytest.fixture
def cluster(write_cluster: Callable[..., Path], tmp_path: Path) -> Path:
    return write_cluster(launcher={"job_root": str(tmp_path / "jobroot")})


def orch(stubs: Stubs, cwd: Path, *args: str, path: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environ = stubs.env(**env)
    if path is not None:
        environ["PATH"] = f"{path}{os.pathsep}{environ['PATH']}"
    return subprocess.run([ORCH, *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120,
                          check=False)


def submit(stubs: Stubs, cwd: Path, cluster: Path, *args: str) -> Path:
    proc = orch(stubs, cwd, "submit", "--cluster", str(cluster), "--partition", "cpu", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["job_dir"])


def run_batch(stubs: Stubs, job_dir: Path, cwd: Path, restart: int = 0, task: dict[str, str] | None = None,
              **env: str) -> dict[str, Any]:
    """The job's sbatch.sh, as Slurm runs it (from the submit directory), its srun running the task (``task``:
    Slurm's variables of the job, the same for each of its restarts)."""
    task = task or batch_task_env()
    proc = subprocess.run(["bash", str(job_dir / "sbatch.sh")], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False,
                          env=stubs.env(**task, SLURM_RESTART_COUNT=str(restart), ORCH_STUB_SRUN_EXEC="1", **env))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    return result


def config(job_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((job_dir / "job.json").read_text())
    return data


def test_the_submitted_version_runs_after_an_edit_and_after_a_requeue(repo: Path, cluster: Path,
                                                                     stubs: Stubs) -> None:
    job_dir = submit(stubs, repo / "sub", cluster, "../train.py", "--", "--lr", "0.1")
    (repo / "train.py").write_text(TRAIN_V1.replace('"version": 1', '"version": 2'))
    (repo / "helper.py").write_text("VERSION = 2\n")
    snap = config(job_dir)["snapshot"]
    tree = Path(snap["path"])
    task = batch_task_env(restarts=2)
    for restart in (0, 1):  # the first attempt and a requeue (TORCHELASTIC_RESTART_COUNT 1)
        got = run_batch(stubs, job_dir, repo / "sub", restart, task, DATA_REL="../data/input.txt",
                        OUT_REL="../runs/written.txt")
        assert (got["version"], got["helper"]) == (1, 1)
        # as torchrun from the submit directory: the submit directory itself (writable), the snapshot's
        # script and its folder first on sys.path
        assert (got["cwd"], got["path0"], got["argv0"]) == (str(repo / "sub"), str(tree), str(tree / "train.py"))
        assert got["args"] == ["--lr", "0.1"]
    # data/ (ignored) is reached through the snapshot's link to the original, and so is runs/ for writing
    assert got["data"] == "the data"
    assert (repo / "runs" / "written.txt").read_text() == "from the job"
    assert (tree / "data").is_symlink() and os.readlink(tree / "data") == str(repo / "data")
    # the new submit runs the edit
    again = submit(stubs, repo / "sub", cluster, "../train.py")
    assert run_batch(stubs, again, repo / "sub", DATA_REL="../data/input.txt",
                     OUT_REL="../runs/written.txt")["version"] == 2
    assert config(again)["snapshot"]["dirty"] is True


def test_job_json_records_commit_dirty_and_digest_and_status_prints_them(repo: Path, cluster: Path,
                                                                         stubs: Stubs, tmp_path: Path) -> None:
    (repo / "notes.py").unlink()
    job_dir = submit(stubs, repo, cluster, "train.py")
    snap = config(job_dir)["snapshot"]
    head = _git(repo, "rev-parse", "HEAD")
    assert (snap["commit"], snap["dirty"], snap["source"]) == (head, False, str(repo))
    tree = Path(snap["path"])
    assert tree == tmp_path / "jobroot" / ".snapshots" / snap["digest"]
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*")) == [
        ".gitignore", "data", "helper.py", "runs", "train.py"]
    manifest = json.loads((tree.parent / f"{snap['digest']}.json").read_text())
    assert [f[0] for f in manifest["files"]] == [".gitignore", "helper.py", "train.py"]
    assert manifest["links"] == [["data", str(repo / "data")], ["runs", str(repo / "runs")]]
    # orch status JOB prints them (a stand-in squeue says the job runs)
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "squeue").write_text("#!/bin/sh\necho '4242|RUNNING|None|cpu001|0:12|0|proj/train'\n")
    (fake / "squeue").chmod(0o755)
    proc = orch(stubs, repo, "status", str(job_dir), path=fake)
    assert proc.returncode == 0, proc.stderr
    assert f"# code snapshot: {snap['digest'][:12]} (git {head[:12]}; 3 files" in proc.stdout
    data = json.loads(orch(stubs, repo, "status", str(job_dir), "--json", path=fake).stdout)
    assert data["snapshot"]["digest"] == snap["digest"] and data["snapshot"]["dirty"] is False


def test_an_unchanged_tree_is_stored_once_and_an_edit_shares_the_unchanged_files(repo: Path, cluster: Path,
                                                                                   stubs: Stubs) -> None:
    first = config(submit(stubs, repo, cluster, "train.py"))["snapshot"]
    second = config(submit(stubs, repo, cluster, "train.py"))["snapshot"]
    assert first["digest"] == second["digest"]
    store = Path(first["path"]).parent
    objects = sorted(p for p in (store / ".objects").rglob("*") if p.is_file())
    assert len(objects) == 4  # .gitignore, helper.py, notes.py, train.py
    (repo / "train.py").write_text(TRAIN_V1 + "# edited\n")
    third = config(submit(stubs, repo, cluster, "train.py"))["snapshot"]
    assert third["digest"] != first["digest"]
    a, b = Path(first["path"]), Path(third["path"])
    assert (a / "helper.py").stat().st_ino == (b / "helper.py").stat().st_ino  # one stored copy, hard-linked
    assert (a / "train.py").stat().st_ino != (b / "train.py").stat().st_ino
    assert (a / "train.py").read_text() == TRAIN_V1
    assert len([p for p in (store / ".objects").rglob("*") if p.is_file()]) == 5


def test_no_snapshot_and_launcher_snapshot_off_run_the_files_in_place(repo: Path, cluster: Path, stubs: Stubs,
                                                                       write_cluster: Callable[..., Path],
                                                                       tmp_path: Path) -> None:
    job_dir = submit(stubs, repo, cluster, "train.py", "--no-snapshot")
    assert config(job_dir)["snapshot"] is None
    assert not (tmp_path / "jobroot" / ".snapshots").exists()
    (repo / "train.py").write_text(TRAIN_V1.replace('"version": 1', '"version": 2'))
    got = run_batch(stubs, job_dir, repo)
    assert (got["version"], got["cwd"], got["argv0"]) == (2, str(repo), str(repo / "train.py"))
    off = write_cluster(name="off.yaml", launcher={"job_root": str(tmp_path / "jobroot"), "snapshot": "off"})
    assert "snapshot: 'off'" in off.read_text()
    assert config(submit(stubs, repo, off, "train.py"))["snapshot"] is None
    off.write_text(off.read_text().replace("snapshot: 'off'", "snapshot: off"))  # YAML's bare off: false
    assert config(submit(stubs, repo, off, "train.py"))["snapshot"] is None


def test_a_snapshot_over_the_limit_stops_the_submit_naming_the_largest_files(repo: Path, stubs: Stubs,
                                                                             write_cluster: Callable[..., Path],
                                                                             tmp_path: Path) -> None:
    small = write_cluster(name="small.yaml", launcher={"job_root": str(tmp_path / "jobroot"), "snapshot_max_mb": 1})
    (repo / "big_table.csv").write_bytes(b"x" * (3 * 2**20))  # untracked, not ignored, under the 10 MB file limit
    proc = orch(stubs, repo, "submit", "train.py", "--cluster", str(small), "--partition", "cpu")
    assert proc.returncode == 2
    assert "would be 3.0 MB, over launcher.snapshot_max_mb (1 MB); largest files: big_table.csv (3.0 MB)" in proc.stderr
    assert ".gitignore" in proc.stderr and "--no-snapshot" in proc.stderr
    assert proc.stderr.count("orch: error:") == 1
    assert stubs.records("sbatch") == []
    root = tmp_path / "jobroot"
    assert not root.exists() or not [p for p in root.iterdir() if not p.name.startswith(".")]
    # never copied: weights, and files over the per-file limit (linked instead)
    (repo / "big_table.csv").unlink()
    (repo / "model.pt").write_bytes(b"w" * 100)
    (repo / "huge.txt").write_bytes(b"h" * (11 * 2**20))
    job_dir = submit(stubs, repo, small, "train.py")
    tree = Path(config(job_dir)["snapshot"]["path"])
    assert (tree / "model.pt").is_symlink() and (tree / "huge.txt").is_symlink()


def test_the_dry_run_writes_no_snapshot(repo: Path, cluster: Path, stubs: Stubs, tmp_path: Path) -> None:
    proc = orch(stubs, repo, "submit", "train.py", "--cluster", str(cluster), "--partition", "cpu", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "jobroot").exists()


def test_a_folder_outside_git_is_copied_without_data_and_environments(tmp_path: Path, cluster: Path,
                                                                       stubs: Stubs) -> None:
    work = tmp_path / "plain"
    for folder in ("data", ".venv/lib", "pkg/data", "__pycache__"):
        (work / folder).mkdir(parents=True)
    (work / "train.py").write_text(TRAIN_V1.replace("import helper\n", "").replace("helper.VERSION", "0"))
    (work / "data" / "input.txt").write_text("plain data\n")
    (work / ".venv" / "lib" / "x.py").write_text("")
    (work / "pkg" / "__init__.py").write_text("")
    (work / "pkg" / "data" / "__init__.py").write_text("")  # a package named data: code, copied
    (work / "runs").mkdir()
    job_dir = submit(stubs, work, cluster, "train.py")
    snap = config(job_dir)["snapshot"]
    assert (snap["commit"], snap["source"]) == (None, str(work))
    tree = Path(snap["path"])
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if not p.is_symlink()) == [
        "pkg", "pkg/__init__.py", "pkg/data", "pkg/data/__init__.py", "train.py"]
    assert {p.name for p in tree.iterdir() if p.is_symlink()} == {".venv", "__pycache__", "data", "runs"}
    assert run_batch(stubs, job_dir, work)["data"] == "plain data"


def test_a_submit_directory_outside_the_tree_keeps_relative_paths(repo: Path, cluster: Path, stubs: Stubs,
                                                                  tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "runs").mkdir(parents=True)
    (elsewhere / "mine.txt").write_text("elsewhere data\n")
    job_dir = submit(stubs, elsewhere, cluster, "../proj/train.py")
    got = run_batch(stubs, job_dir, elsewhere, DATA_REL="mine.txt")
    tree = config(job_dir)["snapshot"]["path"]
    assert (got["cwd"], got["path0"], got["data"]) == (str(elsewhere), tree, "elsewhere data")
    # from inside the tree, a relative path reaches the live files of the submit directory, above it too
    (tmp_path / "above.txt").write_text("above\n")
    inside = submit(stubs, repo, cluster, "train.py")
    got = run_batch(stubs, inside, repo, DATA_REL="data/input.txt", DATA_REL2="../above.txt")  # one task reads both
    assert (got["data"], got["data2"]) == ("the data", "above")


def test_orch_clean_removes_the_snapshots_no_job_folder_names(repo: Path, cluster: Path, stubs: Stubs,
                                                              tmp_path: Path) -> None:
    import shutil

    kept_dir = submit(stubs, repo, cluster, "train.py")
    (repo / "helper.py").write_text("VERSION = 3\n")
    gone_dir = submit(stubs, repo, cluster, "train.py")
    kept, gone = config(kept_dir)["snapshot"], config(gone_dir)["snapshot"]
    store = Path(kept["path"]).parent
    for digest in (kept["digest"], gone["digest"]):  # older than orch clean's grace period
        os.utime(store / f"{digest}.json", (1, 1))
    shutil.rmtree(gone_dir)
    proc = orch(stubs, repo, "clean", "--dry-run", "--cluster", str(cluster), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["removed"], report["kept"], report["objects"]) == ([gone["digest"]], [kept["digest"]], 1)
    assert Path(gone["path"]).is_dir()
    proc = orch(stubs, repo, "clean", "--cluster", str(cluster))
    assert proc.returncode == 0, proc.stderr
    assert f"removed snapshot {gone['digest'][:12]}" in proc.stdout
    assert not Path(gone["path"]).exists() and not (store / f"{gone['digest']}.json").exists()
    assert Path(kept["path"]).is_dir()
    assert len([p for p in (store / ".objects").rglob("*") if p.is_file()]) == 4
    assert run_batch(stubs, kept_dir, repo)["helper"] == 1  # the kept job still runs


def test_a_missing_snapshot_is_one_error_line(repo: Path, cluster: Path, stubs: Stubs) -> None:
    from orchestrator.records.snapshots.store import remove_tree

    job_dir = submit(stubs, repo, cluster, "train.py")
    remove_tree(Path(config(job_dir)["snapshot"]["path"]))
    proc = subprocess.run(["bash", str(job_dir / "sbatch.sh")], cwd=repo, capture_output=True, text=True,
                          timeout=120, check=False, env=stubs.env(**batch_task_env(), ORCH_STUB_SRUN_EXEC="1"))
    log = "".join(p.read_text() for p in (job_dir / "logs").glob("*"))
    assert proc.returncode == 2
    assert "code snapshot" in log and "is missing" in log and "Traceback" not in log


def test_relocate_is_the_one_rule() -> None:
    from orchestrator.spec.snapshot import Snapshot, relocate, relocate_paths

    snap = Snapshot(digest="d", path="/jr/.snapshots/d", source="/home/u/proj")
    assert relocate("/home/u/proj", snap) == "/jr/.snapshots/d"
    assert relocate("/home/u/proj/sub/train.py", snap) == "/jr/.snapshots/d/sub/train.py"
    assert relocate("/home/u/project2/x", snap) == "/home/u/project2/x"  # a prefix of the name is not inside
    assert relocate("/home/u", snap) == "/home/u"
    assert relocate("/home/u/proj/x", None) == "/home/u/proj/x"
    assert relocate_paths(["", "/home/u/proj/lib", sys.prefix], snap, "/home/u/proj/sub") == [
        "/jr/.snapshots/d/sub", "/jr/.snapshots/d/lib", sys.prefix]  # "": the working directory's copy


def test_a_sweep_of_a_job_file_runs_every_element_from_one_snapshot(repo: Path, cluster: Path, stubs: Stubs,
                                                                    write_job: Callable[..., Path]) -> None:
    job = write_job()  # tmp_path/tiny.py: outside the repository, so its folder is the snapshot
    inside = repo / "jobs" / "tiny.py"
    inside.parent.mkdir()
    inside.write_text(job.read_text())
    proc = orch(stubs, repo, "submit", "jobs/tiny.py", "--cluster", str(cluster), "--sweep", "width=1,2", "--json")
    assert proc.returncode == 0, proc.stderr
    elements = [Path(e["job_dir"]) for e in json.loads(proc.stdout)["elements"]]
    snaps = [config(e)["snapshot"] for e in elements]
    assert snaps[0] == snaps[1] and snaps[0]["source"] == str(repo)
    assert config(elements[0])["job_file"] == str(inside)  # what was submitted; the task loads the copy
    assert (Path(snaps[0]["path"]) / "jobs" / "tiny.py").read_text() == job.read_text()
    assert "snapshots" not in proc.stderr


def test_builtin_jobs_take_no_snapshot(cluster: Path, stubs: Stubs, tmp_path: Path) -> None:
    proc = orch(stubs, tmp_path, "submit", "smoke", "--cluster", str(cluster), "--partition", "cpu",
                "--gpus", "0", "--ntasks-per-node", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert config(Path(json.loads(proc.stdout)["job_dir"]))["snapshot"] is None
    assert not (tmp_path / "jobroot" / ".snapshots").exists()


def test_a_huge_folder_outside_git_stops_early(tmp_path: Path, stubs: Stubs,
                                               write_cluster: Callable[..., Path]) -> None:
    home = tmp_path / "home"
    (home / "a").mkdir(parents=True)
    (home / "train.py").write_text("print(1)\n")
    for i in range(3):
        (home / "a" / f"table{i}.csv").write_bytes(b"x" * (2**20 + 1))
    (home / ".cache").mkdir()
    (home / ".cache" / "big.txt").write_bytes(b"c" * (5 * 2**20))  # hidden: never walked
    small = write_cluster(name="small.yaml", launcher={"job_root": str(tmp_path / "jobroot"), "snapshot_max_mb": 1})
    proc = orch(stubs, home, "submit", "train.py", "--cluster", str(small), "--partition", "cpu")
    assert proc.returncode == 2
    assert f"the code snapshot of {home} would be more than 3.0 MB, over launcher.snapshot_max_mb (1 MB)" in proc.stderr
    assert "a/table" in proc.stderr and ".cache" not in proc.stderr


def test_each_user_has_a_store_of_their_own_in_a_shared_job_root(tmp_path: Path) -> None:
    """``.snapshots`` is the store of the user who made it (private to them); in a job root shared with that
    user, another user's snapshots go to ``.snapshots-<uid>``, which is never copied into a snapshot either."""
    from orchestrator.records.snapshots.store import snapshot_root
    from orchestrator.spec.snapshot import is_store_name, skip_reason, store_name

    me = os.getuid()
    assert snapshot_root(tmp_path) == tmp_path / ".snapshots"  # none yet: the usual name
    (tmp_path / ".snapshots").mkdir()
    assert snapshot_root(tmp_path) == tmp_path / ".snapshots"  # mine
    if me == 0:  # root may give it away: another user's now
        os.chown(tmp_path / ".snapshots", 4242, -1)
        assert snapshot_root(tmp_path) == tmp_path / ".snapshots-0"
    assert store_name(None, 7) == ".snapshots" and store_name(7, 7) == ".snapshots"
    assert store_name(8, 7) == ".snapshots-7"
    assert is_store_name(".snapshots-7") and not is_store_name(".snapshots-x") and not is_store_name("snapshots")
    assert skip_reason("jobs/.snapshots-7/abc/train.py", 10) == "in a .snapshots-7/ folder"
