"""Hardening, second round (issue 10): job folders (trust, file-system errors, damage, locks) and the
processes of ``orch run`` (loopback rendezvous, process groups, SIGTERM).

Classes as numbered in the issue: 1 (trust of job folders), 7 (file-system errors), 10 (concurrent
resumes), 13 (damaged resume folders), 9 (loopback rendezvous), 6 (process groups) and the exit
code of a SIGTERM. Folders come from one real ``orch run smoke`` (copied per test); refusals go
through the real CLI and must exit 2 with ``orch: error:``, a HINT, no traceback, and start no rank.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from support import ORCH, TEST_CLUSTER, clean_environ

from orchestrator.cli import main
from orchestrator.records.trust import TrustError, check_folder, problem

if TYPE_CHECKING:
    from support import Stubs

OTHER_UID = 54321  # a user that is not us (the tests chown to it; they need root)
NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def orch(*args: str, cwd: Path, timeout: float = 300, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env=clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", "")), **kwargs)


def assert_refused(proc: subprocess.CompletedProcess[str], *names: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "orch: error:" in proc.stderr and "HINT:" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    for name in names:
        assert name in proc.stderr, f"{name!r} not in {proc.stderr!r}"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished local smoke run (2 epochs, checkpoints), made once; tests copy it."""
    base = tmp_path_factory.mktemp("finished")
    proc = orch("run", "smoke", "--nproc", "1", "--job-root", str(base / "jobs"), "samples=64", "test_samples=16",
                "epochs=1", cwd=base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (folder,) = (base / "jobs").iterdir()
    assert (folder / "checkpoints" / "latest.pt").is_file()
    return folder


@pytest.fixture
def job_copy(finished_run: Path, tmp_path: Path) -> Path:
    root = tmp_path / "jobs"
    root.mkdir(mode=0o750)
    folder = root / finished_run.name
    shutil.copytree(finished_run, folder, symlinks=True)
    cfg = json.loads((folder / "job.json").read_text())
    cfg["job_dir"] = str(folder)
    (folder / "job.json").write_text(json.dumps(cfg))
    os.chmod(folder / "job.json", 0o640)
    return folder


def resume(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return orch("run", "--resume", str(folder), *extra, "epochs=2", cwd=folder.parent)


def no_rank_started(folder: Path, before: float) -> bool:
    log = folder / "logs" / "local-rank0.out"
    return not log.exists() or log.stat().st_mtime <= before


# --- 1. trust of job folders: pure rules ---------------------------------------------------------------

def _stat(mode: int, uid: int) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 1, uid, 0, 0, 0, 0, 0))


@pytest.mark.parametrize(("mode", "uid", "is_dir", "trusted"), [
    (stat.S_IFDIR | 0o750, 1000, True, True),
    (stat.S_IFDIR | 0o700, 0, True, True),  # root's
    (stat.S_IFDIR | 0o770, 1000, True, False),
    (stat.S_IFDIR | 0o757, 1000, True, False),
    (stat.S_IFDIR | 0o1777, 1000, True, True),  # sticky: nobody renames what others own
    (stat.S_IFDIR | 0o750, 1001, True, False),
    (stat.S_IFREG | 0o640, 1000, False, True),
    (stat.S_IFREG | 0o660, 1000, False, False),
    (stat.S_IFREG | 0o646, 1000, False, False),
    (stat.S_IFREG | 0o1666, 1000, False, False),  # a sticky bit does not protect a file's content
    (stat.S_IFREG | 0o600, 1001, False, False),
    (stat.S_IFDIR | 0o750, 1000, False, False),  # a folder where a file should be
    (stat.S_IFREG | 0o750, 1000, True, False),  # a file where a folder should be
])
def test_trust_rules(mode: int, uid: int, is_dir: bool, trusted: bool) -> None:
    assert (problem(_stat(mode, uid), 1000, is_dir=is_dir) is None) == trusted


@NEEDS_ROOT
@pytest.mark.parametrize("tamper", [
    "folder o+w", "folder g+w", "folder owner", "job.json owner", "job.json o+w", "job.json g+w",
    "job.json symlink", "checkpoint owner", "checkpoint o+w", "checkpoints o+w", "job root o+w",
    "job root owner", "previous.pt symlink",
])
def test_resume_refuses_folders_others_could_write(tamper: str, job_copy: Path) -> None:
    target = {"folder": job_copy, "job.json": job_copy / "job.json", "checkpoint": job_copy / "checkpoints" /
              "latest.pt", "checkpoints": job_copy / "checkpoints", "job root": job_copy.parent,
              "previous.pt": job_copy / "checkpoints" / "previous.pt"}[tamper.rsplit(" ", 1)[0]]
    what = tamper.rsplit(" ", 1)[1]
    if what == "o+w":
        os.chmod(target, stat.S_IMODE(target.stat().st_mode) | 0o002)
    elif what == "g+w":
        os.chmod(target, stat.S_IMODE(target.stat().st_mode) | 0o020)
    elif what == "owner":
        os.chown(target, OTHER_UID, -1)
    elif what == "symlink":
        name = "previous.pt" if tamper.startswith("previous") else target.name
        link = job_copy / ("checkpoints" if name.endswith(".pt") else "") / name
        link.unlink(missing_ok=True)
        link.symlink_to(job_copy / "checkpoints" / "latest.pt" if name.endswith(".pt") else "/tmp/elsewhere.json")
    before = time.time()
    proc = resume(job_copy)
    if tamper == "job root owner":  # the job root is a folder above the job folder: owner is not checked
        assert proc.returncode == 0, proc.stderr
        return
    assert_refused(proc)
    assert "another user could have changed" in proc.stderr or "symbolic link" in proc.stderr
    assert no_rank_started(job_copy, before)


@NEEDS_ROOT
def test_the_task_entry_checks_the_folder_too(job_copy: Path) -> None:
    """A Slurm task reads job.json itself: a tampered folder stops it before anything is imported."""
    os.chown(job_copy / "job.json", OTHER_UID, -1)
    env = clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", ""), RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                        LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29999")
    proc = subprocess.run([sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(job_copy)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "another user could have changed" in proc.stderr and "Traceback" not in proc.stderr
    assert "torch" not in proc.stderr.lower() or "uid" in proc.stderr


def test_sticky_world_writable_job_root_is_fine_but_not_without_sticky(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o1777)
    check_folder(root / "jobs", "the job root")
    os.chmod(root, 0o777)
    with pytest.raises(TrustError, match="without the sticky bit"):
        check_folder(root / "jobs", "the job root")


def test_run_and_submit_create_the_job_root_with_one_mode(tmp_path: Path, stubs: Stubs) -> None:
    cluster = tmp_path / "cluster.yaml"
    data = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(tmp_path / "sub" / "root")}}
    cluster.write_text(yaml.safe_dump(data), encoding="utf-8")
    old = os.umask(0)
    try:
        assert main(["submit", "smoke", "--cluster", str(cluster)]) == 0
        from orchestrator.records.jobdirs import create_job_dir

        create_job_dir(tmp_path / "local" / "root" / "smoke-1")  # what orch run and the API's local mode use
    finally:
        os.umask(old)
    modes = {stat.S_IMODE((tmp_path / where / "root").stat().st_mode) for where in ("sub", "local")}
    assert modes == {0o700}  # issue 23: 0700 whatever the umask (was 0750 less the umask)


# --- 7. file-system errors -------------------------------------------------------------------------------

def _break(kind: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if kind == "job root is a file":
        root.parent.mkdir(parents=True, exist_ok=True)
        root.write_text("not a folder")
    elif kind == "a file above the job root":
        root.parent.parent.mkdir(parents=True, exist_ok=True)
        root.parent.write_text("not a folder")
    elif kind in ("read-only file system", "no space left"):
        code = errno.EROFS if kind.startswith("read") else errno.ENOSPC
        import orchestrator.records.atomic as atomic

        real_open = os.open

        def failing_open(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
            if Path(path).name.startswith(".tmp-") or (kind.startswith("read") and str(path).endswith("sbatch.sh")):
                raise OSError(code, os.strerror(code), str(path))
            return real_open(path, flags, mode, **kw)

        monkeypatch.setattr(atomic.os, "open", failing_open)


FS_CASES = ["job root is a file", "a file above the job root", "read-only file system", "no space left"]


@pytest.mark.parametrize("kind", FS_CASES)
@pytest.mark.parametrize("verb", ["submit", "run"])
def test_file_system_errors_name_the_job_root_and_leave_nothing(
        kind: str, verb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], stubs: Stubs) -> None:
    root = tmp_path / "area" / "jobs"
    cluster = tmp_path / "cluster.yaml"
    data = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(root)}}
    cluster.write_text(yaml.safe_dump(data), encoding="utf-8")
    _break(kind, root, monkeypatch)
    argv = (["submit", "smoke", "--cluster", str(cluster)] if verb == "submit"
            else ["run", "smoke", "--cluster", str(cluster)])
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "launcher.job_root" in err and "Traceback" not in err and "HINT:" in err, err
    assert stubs.records() == []
    if root.is_dir():
        assert list(root.iterdir()) == [], "a half-written job folder was left behind"


def test_a_real_write_error_leaves_no_half_written_folder(tmp_path: Path, stubs: Stubs) -> None:
    """The kernel refuses the write (RLIMIT_FSIZE: EFBIG, like a full disk): exit 2, no folder left."""
    import resource

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    cluster = tmp_path / "cluster.yaml"
    data = {**TEST_CLUSTER, "launcher": {**TEST_CLUSTER["launcher"], "job_root": str(tmp_path / "jobs")}}
    cluster.write_text(yaml.safe_dump(data), encoding="utf-8")
    proc = subprocess.run([ORCH, "submit", "smoke", "--cluster", str(cluster)], capture_output=True, text=True,
                          env=stubs.env(PYTHONPATH=os.environ.get("PYTHONPATH", "")), cwd=tmp_path,
                          preexec_fn=small_files, timeout=120)
    assert_refused(proc, "launcher.job_root")
    assert list((tmp_path / "jobs").iterdir()) == []
    assert stubs.records() == []


# --- 13. damaged resume folders ----------------------------------------------------------------------------

def _edit_json(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads((folder / "job.json").read_text())
    change(data)
    (folder / "job.json").write_text(json.dumps(data))


JOB_JSON_DAMAGE: list[tuple[str, Callable[[Path], None], str]] = [
    ("params lr text", lambda f: _edit_json(f, lambda d: d["params"].update(lr="fast")), "lr"),
    ("params lr negative", lambda f: _edit_json(f, lambda d: d["params"].update(lr=-1)), "lr"),
    ("params lr null", lambda f: _edit_json(f, lambda d: d["params"].update(lr=None)), "lr"),
    ("params unknown key", lambda f: _edit_json(f, lambda d: d["params"].update(colour=1)), "colour"),
    ("params seed huge", lambda f: _edit_json(f, lambda d: d["params"].update(seed=2**70)), "seed"),
    ("env key with =", lambda f: _edit_json(f, lambda d: d["env"].update({"A=B": "1"})), "env"),
    ("env key NUL", lambda f: _edit_json(f, lambda d: d["env"].update({"A\0B": "1"})), "env"),
    ("env value NUL", lambda f: _edit_json(f, lambda d: d["env"].update({"NCCL_DEBUG": "a\0b"})), "env"),
    ("env owned name", lambda f: _edit_json(f, lambda d: d["env"].update({"MASTER_PORT": "1"})), "MASTER_PORT"),
    ("ranks zero", lambda f: _edit_json(f, lambda d: d.update(tasks_per_node=0)), "tasks_per_node"),
    ("deep nesting", lambda f: (f / "job.json").write_text("[" * 100_000 + "]" * 100_000), "job.json"),
    ("not an object", lambda f: (f / "job.json").write_text("[]"), "job.json"),
    ("job.json a folder", lambda f: ((f / "job.json").unlink(), (f / "job.json").mkdir()), "job.json"),
    ("checkpoints a file", lambda f: (shutil.rmtree(f / "checkpoints"), (f / "checkpoints").write_text("x")),
     "checkpoints"),
    ("job file gone", lambda f: _edit_json(f, lambda d: d.update(job_file="/nonexistent/job.py")), "job file"),
]


@pytest.mark.parametrize(("damage", "name"), [(d, n) for _, d, n in JOB_JSON_DAMAGE],
                         ids=[i for i, _, _ in JOB_JSON_DAMAGE])
def test_damaged_job_json_is_refused_before_any_rank_starts(damage: Callable[[Path], None], name: str,
                                                            job_copy: Path) -> None:
    damage(job_copy)
    before = time.time()
    proc = resume(job_copy)
    assert_refused(proc, name)
    assert no_rank_started(job_copy, before)


def _edit_checkpoint(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit the checkpoints and drop their sidecars: a folder of an older orch, so these cases test the
    check every rank makes as it loads (with a sidecar, the CLI refuses first: test_resume_sidecar.py)."""
    import torch

    for name in ("latest.pt", "previous.pt"):
        path = folder / "checkpoints" / name
        if path.exists():
            state = torch.load(path, weights_only=True)
            change(state)
            torch.save(state, path)
        (folder / "checkpoints" / f"{name}.json").unlink(missing_ok=True)


def _rename_first_key(state: dict[str, Any]) -> None:
    key = next(iter(state["model"]))
    state["model"]["renamed." + key] = state["model"].pop(key)


def _grow_first_tensor(state: dict[str, Any]) -> None:
    import torch

    key = next(iter(state["model"]))
    state["model"][key] = torch.zeros(tuple(s + 1 for s in state["model"][key].shape))


CHECKPOINT_DAMAGE: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("another job", lambda s: s.update(job="mnist"), "written by job 'mnist'"),
    ("renamed weight", _rename_first_key, "does not match the job's model"),
    ("reshaped weight", _grow_first_tensor, "does not match the job's model"),
    ("ranks empty", lambda s: s.update(ranks=[]), "ranks hold 0 entries"),
    ("ranks too many", lambda s: s.update(ranks=s["ranks"] * 3), "ranks hold 3 entries"),
    ("epoch negative", lambda s: s.update(epoch=-1), "epoch is -1"),
    ("step negative", lambda s: s.update(step=-5), "step is -5"),
    ("world size zero", lambda s: s.update(world_size=0), "world_size is 0"),
    ("epoch text", lambda s: s.update(epoch="1"), "epoch is '1'"),
]


@pytest.mark.parametrize(("damage", "message"), [(d, m) for _, d, m in CHECKPOINT_DAMAGE],
                         ids=[i for i, _, _ in CHECKPOINT_DAMAGE])
def test_a_checkpoint_of_another_job_or_with_bad_counters_is_a_clear_error(
        damage: Callable[[dict[str, Any]], None], message: str, job_copy: Path) -> None:
    _edit_checkpoint(job_copy, damage)
    proc = resume(job_copy)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "HINT:" in proc.stderr, proc.stderr
    assert "load_state_dict" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (job_copy / "metrics.jsonl").read_text().count('"epoch": 2')


# --- 10. one resume of a folder at a time ------------------------------------------------------------------

def test_a_second_concurrent_resume_is_refused(job_copy: Path) -> None:
    from orchestrator.local.runner import job_lock

    with job_lock(job_copy):  # stands for a running orch run of this folder
        before = time.time()
        proc = resume(job_copy)
        assert_refused(proc, "in use by another orch run")
        assert no_rank_started(job_copy, before)
        saved = json.loads((job_copy / "job.json").read_text())
        assert saved["params"]["epochs"] == 1, "the refused resume changed job.json"
    proc = resume(job_copy)  # the lock is gone with its holder
    assert proc.returncode == 0, proc.stderr


def test_the_lock_holds_while_orch_run_runs(job_copy: Path) -> None:
    first = subprocess.Popen([ORCH, "run", "--resume", str(job_copy), "epochs=40", "samples=4096"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=clean_environ(PYTHONPATH=os.environ.get("PYTHONPATH", "")))
    try:
        log = job_copy / "logs" / "local-rank0.out"
        deadline = time.monotonic() + 120
        while "resuming" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.2)
        second = resume(job_copy)
        assert_refused(second, "in use by another orch run")
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
