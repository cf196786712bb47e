"""Code and configuration that another user can change are never run or read as you.

``orch submit`` / ``orch run`` refuse (exit 2, ``orch: error:`` naming the file, a HINT with the fix, no
traceback) a script, its sibling modules and packages, a job file, ``./jobs/NAME.py``, ``./cluster.yaml``
and ``--templates`` files that a user other than you (or root) could write: by mode (group- or
world-writable), by owner (another user, here ``nobody``, or a uid the test chowns to), through a link,
and by folder (a world-writable folder, sticky or not, for code). A job file that others could write is
refused before it is imported (its import would leave a marker file). ``./jobs/smoke.py`` of your own wins
over the built-in job with a note. The parsed-cluster.yaml cache is keyed on the content: an edit that
keeps the size and the times is seen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.cli import main

NOBODY = 65534
OTHER_UID = 43210
NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="chown and acting as another user need root")
SCRIPT = "import torch.distributed as dist\n\nif __name__ == '__main__':\n    print('hi')\n"
MARKER_JOB = """\
from pathlib import Path
Path({marker!r}).write_text("imported")
from orchestrator import JobSpec, TrainParams

def build(params, ctx):
    raise RuntimeError("not here")

SPEC = JobSpec(name="smoke", params=TrainParams, build=build)
"""


@pytest.fixture
def project(tmp_path: Path, clean_env: pytest.MonkeyPatch, write_cluster: Callable[..., Path]) -> Path:
    """A private project folder (the working directory) with a cluster.yaml and a script."""
    folder = tmp_path / "proj"
    folder.mkdir(mode=0o700)
    cluster = write_cluster()
    shutil.move(cluster, folder / "cluster.yaml")
    (folder / "train.py").write_text(SCRIPT, encoding="utf-8")
    (folder / "helper.py").write_text("X = 1\n", encoding="utf-8")
    os.chmod(folder / "train.py", 0o644)
    os.chmod(folder / "helper.py", 0o644)
    clean_env.chdir(folder)
    clean_env.delenv("ORCH_CLUSTER", raising=False)
    return folder


def orch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def refused(code: int, text: str, *needles: str) -> None:
    assert code == 2, text
    assert "orch: error:" in text and "HINT:" in text and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text


def test_a_private_project_is_accepted(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = orch(capsys, "submit", "train.py", "--dry-run")
    assert code == 0, text


@pytest.mark.parametrize(("name", "mode", "who"), [
    ("train.py", 0o666, "group and others"), ("train.py", 0o646, "others"), ("train.py", 0o664, "its group"),
    ("helper.py", 0o666, "group and others"), ("helper.py", 0o602, "others"),
])
def test_code_writable_by_others_is_refused(project: Path, capsys: pytest.CaptureFixture[str],
                                            name: str, mode: int, who: str) -> None:
    os.chmod(project / name, mode)
    for verb in (["submit", "train.py", "--dry-run"], ["run", "train.py", "--nproc", "1"]):
        code, text = orch(capsys, *verb)
        refused(code, text, str(project / name), f"writable by {who}", "chmod go-w")


@NEEDS_ROOT
@pytest.mark.parametrize("name", ["train.py", "helper.py", "pkg/__init__.py", "pkg/mod.py", "pkg"])
@pytest.mark.parametrize("uid", [NOBODY, OTHER_UID])
def test_code_owned_by_another_user_is_refused(project: Path, capsys: pytest.CaptureFixture[str],
                                               name: str, uid: int) -> None:
    (project / "pkg").mkdir(mode=0o755)
    (project / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (project / "pkg" / "mod.py").write_text("", encoding="utf-8")
    os.chown(project / name, uid, -1)
    code, text = orch(capsys, "submit", "train.py", "--dry-run")
    refused(code, text, str(project / name), f"owned by uid {uid}")


@pytest.mark.parametrize("mode", [0o1777, 0o777, 0o775, 0o1770])
def test_code_in_a_folder_others_can_write_is_refused(project: Path, capsys: pytest.CaptureFixture[str],
                                                      mode: int) -> None:
    """Even with the sticky bit: another user could add a ``torch.py`` beside the script."""
    shared = project / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    (shared / "train.py").write_text(SCRIPT, encoding="utf-8")
    code, text = orch(capsys, "submit", str(shared / "train.py"), "--dry-run")
    refused(code, text, str(shared), "writable by")


@NEEDS_ROOT
def test_a_link_of_another_user_or_to_their_file_is_refused(project: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    (project / "theirs.py").write_text(SCRIPT, encoding="utf-8")
    os.chown(project / "theirs.py", NOBODY, -1)
    (project / "link.py").symlink_to(project / "theirs.py")
    code, text = orch(capsys, "submit", "link.py", "--dry-run")
    refused(code, text, "owned by uid 65534")
    (project / "theirs.py").unlink()
    (project / "link.py").unlink()
    (project / "link.py").symlink_to(project / "train.py")
    os.lchown(project / "link.py", NOBODY, -1)
    code, text = orch(capsys, "submit", "link.py", "--dry-run")
    refused(code, text, "symbolic link", "owned by uid 65534")


@pytest.mark.parametrize("mode", [0o666, 0o664])
def test_job_file_writable_by_others_is_refused_before_import(project: Path, capsys: pytest.CaptureFixture[str],
                                                              mode: int) -> None:
    marker = project / "IMPORTED"
    (project / "myjob.py").write_text(MARKER_JOB.format(marker=str(marker)), encoding="utf-8")
    os.chmod(project / "myjob.py", mode)
    code, text = orch(capsys, "submit", "myjob.py", "--dry-run")
    refused(code, text, "myjob.py", "writable by")
    assert not marker.exists(), "the job file was imported before the trust check"


@NEEDS_ROOT
@pytest.mark.parametrize("uid_or_mode", [("uid", NOBODY), ("mode", 0o666), ("folder", 0o1777)])
def test_jobs_folder_of_another_user_never_shadows_a_builtin(project: Path, capsys: pytest.CaptureFixture[str],
                                                             uid_or_mode: tuple[str, int]) -> None:
    marker = project / "IMPORTED"
    jobs = project / "jobs"
    jobs.mkdir(mode=0o755)
    (jobs / "smoke.py").write_text(MARKER_JOB.format(marker=str(marker)), encoding="utf-8")
    kind, value = uid_or_mode
    if kind == "uid":
        os.chown(jobs / "smoke.py", value, -1)
    elif kind == "mode":
        os.chmod(jobs / "smoke.py", value)
    else:
        os.chmod(jobs, value)
    for verb in (["submit", "smoke", "--dry-run"], ["run", "smoke", "--nproc", "1"]):
        code, text = orch(capsys, *verb)
        refused(code, text, str(jobs))
    assert not marker.exists(), "another user's ./jobs/smoke.py ran during a dry run"


def test_own_jobs_file_wins_with_a_note(project: Path, capsys: pytest.CaptureFixture[str],
                                        caplog: pytest.LogCaptureFixture) -> None:
    jobs = project / "jobs"
    jobs.mkdir(mode=0o700)
    shutil.copy(ROOT / "jobs" / "smoke.py", jobs / "smoke.py")
    os.chmod(jobs / "smoke.py", 0o600)
    code, text = orch(capsys, "submit", "smoke", "--dry-run")
    assert code == 0, text
    note = caplog.text + text  # the note is a logged warning (stderr in a shell)
    assert "not the built-in job 'smoke'" in note and str(jobs / "smoke.py") in note


@pytest.mark.parametrize("mode", [0o666, 0o646, 0o660])
def test_cluster_yaml_writable_by_others_is_refused(project: Path, capsys: pytest.CaptureFixture[str],
                                                    mode: int) -> None:
    os.chmod(project / "cluster.yaml", mode)
    for verb in (["submit", "smoke", "--dry-run"], ["status"], ["list"]):
        code, text = orch(capsys, *verb)
        refused(code, text, str(project / "cluster.yaml"), "writable by")


@NEEDS_ROOT
def test_cluster_yaml_templates_of_another_user(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.chown(project / "cluster.yaml", NOBODY, -1)
    code, text = orch(capsys, "submit", "smoke", "--dry-run")
    refused(code, text, "cluster.yaml", "owned by uid 65534")
    os.chown(project / "cluster.yaml", 0, -1)
    templates = project / "tpl"
    templates.mkdir(mode=0o700)
    base = ROOT / "templates" / "base.sbatch.j2"
    shutil.copy(base, templates / "base.sbatch.j2")
    code, text = orch(capsys, "submit", "smoke", "--dry-run", "--templates", str(templates))
    assert code == 0, text
    os.chmod(templates / "base.sbatch.j2", 0o666)
    code, text = orch(capsys, "submit", "smoke", "--dry-run", "--templates", str(templates))
    refused(code, text, "the template", "writable by")
    os.chmod(templates / "base.sbatch.j2", 0o600)
    os.chown(templates / "base.sbatch.j2", NOBODY, -1)
    code, text = orch(capsys, "submit", "smoke", "--dry-run", "--templates", str(templates))
    refused(code, text, "the template", "owned by uid 65534")
    os.chmod(templates, 0o1777)
    code, text = orch(capsys, "submit", "smoke", "--dry-run", "--templates", str(templates))
    refused(code, text, "templates folder", "writable by")


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A sticky, world-writable folder right under /tmp that the user ``nobody`` can reach."""
    folder = Path(tempfile.mkdtemp(prefix="orch-shared-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def as_nobody(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", *argv],
                          capture_output=True, text=True, cwd=cwd, timeout=300, check=False,
                          env=clean_environ(**env))


@NEEDS_ROOT
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to act as nobody")
def test_shared_folder_files_written_by_another_user(shared_tmp: Path, write_cluster: Callable[..., Path],
                                                      clean_env: pytest.MonkeyPatch) -> None:
    """``nobody`` writes ./cluster.yaml and ./jobs/smoke.py in a sticky shared folder: root's orch
    refuses both (its dry run imports nothing of theirs); and ``nobody``'s own orch refuses root's
    script that everyone can write."""
    text = write_cluster().read_text(encoding="utf-8")
    made = as_nobody("sh", "-c", f"umask 022; cat > cluster.yaml <<'EOF'\n{text}EOF\nmkdir jobs && "
                     f"printf 'open(\"{shared_tmp}/IMPORTED\", \"w\")\\n' > jobs/smoke.py", cwd=shared_tmp)
    assert made.returncode == 0, made.stderr
    proc = subprocess.run([ORCH, "submit", "smoke", "--dry-run"], capture_output=True, text=True, cwd=shared_tmp,
                          timeout=300, check=False, env=clean_environ())
    assert proc.returncode == 2 and "owned by uid 65534" in proc.stderr, proc.stderr
    assert "cluster.yaml" in proc.stderr and "Traceback" not in proc.stderr
    os.unlink(shared_tmp / "cluster.yaml")
    proc = subprocess.run([ORCH, "submit", "smoke", "--dry-run", "--cluster", str(write_cluster())],
                          capture_output=True, text=True, cwd=shared_tmp, timeout=300, check=False,
                          env=clean_environ())
    assert proc.returncode == 2 and "jobs" in proc.stderr, proc.stderr
    assert not (shared_tmp / "IMPORTED").exists()
    # the other way round: nobody runs orch on root's world-writable script
    mine = shared_tmp / "mine"
    mine.mkdir(mode=0o755)
    os.chown(mine, NOBODY, NOBODY)
    (mine / "train.py").write_text(SCRIPT, encoding="utf-8")
    os.chmod(mine / "train.py", 0o666)
    cluster = mine / "cluster.yaml"
    cluster.write_text(text.replace(str(Path(text.split("job_root: ")[1].split()[0])), str(mine / "jobs")),
                       encoding="utf-8")
    os.chown(cluster, NOBODY, NOBODY)
    proc = as_nobody(sys.executable, "-m", "orchestrator.cli", "submit", "train.py", "--dry-run", cwd=mine,
                     HOME=str(mine), ORCH_CACHE_DIR="off", ORCH_STATE_DIR=str(mine / "state"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "writable by group and others" in proc.stderr and str(mine / "train.py") in proc.stderr
    os.chmod(mine / "train.py", 0o644)  # root's, not writable by others: trusted by nobody too
    proc = as_nobody(sys.executable, "-m", "orchestrator.cli", "submit", "train.py", "--dry-run", cwd=mine,
                     HOME=str(mine), ORCH_CACHE_DIR="off", ORCH_STATE_DIR=str(mine / "state"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("mode", [0o777, 0o1777])
def test_module_run_from_a_folder_others_can_write(project: Path, capsys: pytest.CaptureFixture[str],
                                                   mode: int) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (project / "pkg" / "train.py").write_text(SCRIPT, encoding="utf-8")
    code, text = orch(capsys, "submit", "-m", "pkg.train", "--dry-run")
    assert code == 0, text
    os.chmod(project, mode)
    code, text = orch(capsys, "submit", "-m", "pkg.train", "--dry-run")
    refused(code, text, str(project), "writable by")


@pytest.mark.parametrize("change", ["same size", "cp -p", "touch back"])
def test_cluster_cache_follows_the_content(project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           clean_env: pytest.MonkeyPatch, change: str) -> None:
    """An edit that keeps the size and the times (cp -p, rsync -t, tar x) is seen at once."""
    clean_env.setenv("ORCH_CACHE_DIR", str(tmp_path / "cache"))
    path = project / "cluster.yaml"
    code, text = orch(capsys, "submit", "smoke", "--dry-run")
    assert code == 0 and "NCCL_DEBUG=WARN" in text.replace("'", ""), text
    before = path.stat()
    edited = path.read_text(encoding="utf-8").replace("NCCL_DEBUG: WARN", "NCCL_DEBUG: INFO")
    assert len(edited) == len(path.read_text(encoding="utf-8"))
    if change == "cp -p":
        other = tmp_path / "other.yaml"
        other.write_text(edited, encoding="utf-8")
        os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
        subprocess.run(["cp", "-p", str(other), str(path)], check=True)
    else:
        path.write_text(edited, encoding="utf-8")
        if change == "touch back":
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.chmod(path, 0o644)
    code, text = orch(capsys, "submit", "smoke", "--dry-run")
    assert code == 0 and "NCCL_DEBUG=INFO" in text.replace("'", ""), text


@pytest.mark.parametrize(("name", "mode"), [("train.py", 0o666), ("helper.py", 0o646)])
def test_the_job_checks_its_code_again_when_it_starts(project: Path, capsys: pytest.CaptureFixture[str],
                                                      stubs: object, name: str, mode: int) -> None:
    """Trusted at submit, made writable by others before the job starts: the batch script's first
    step (before srun) and every task refuse it."""
    import json

    code = main(["submit", "train.py", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    job_dir = json.loads(out.out)["job_dir"]
    os.chmod(project / name, mode)
    for extra in (["--master-port"], []):
        proc = subprocess.run([sys.executable, "-m", "orchestrator.runtime.launch", *extra, "--job-dir", job_dir],
                              capture_output=True, text=True, timeout=120, check=False,
                              env=clean_environ(SLURM_JOB_ID="7", SLURM_PROCID="0", SLURM_NTASKS="1",
                                                SLURM_LOCALID="0", SLURM_NODEID="0", SLURM_JOB_NUM_NODES="1",
                                                SLURM_NTASKS_PER_NODE="1", SLURM_JOB_NODELIST="gpu001",
                                                MASTER_ADDR="127.0.0.1", MASTER_PORT="29999"))
        assert proc.returncode != 0, proc.stdout + proc.stderr
        if name == "train.py" or extra:
            assert "writable by" in proc.stderr and str(project / name) in proc.stderr, proc.stderr
