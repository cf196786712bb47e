"""Files: job folders are the user's alone whatever the umask; secrets go by name.

* ``orch submit`` (stub sbatch) and ``orch run`` (real processes) under umasks 000, 002, 022, 027
  and 077, through the installed ``orch``: no file or folder of the job has a group or other bit
  (0600 files, 0700 folders and sbatch.sh), and sbatch runs with umask 077, which keeps Slurm's own log
  files (created by slurmstepd with the job's umask) private too. (The folders once followed
  the umask, narrowed to never group- or world-writable.)
* ``launcher.pass_env: [NAMES]``: the script and job.json hold only the names; the values travel in
  the environment (sbatch exports the submitting shell's environment to the job, srun to the tasks).
  A name that is not set is refused before anything is queued, and the script checks it again.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ORCH, ROOT, clean_environ

from orchestrator.spec.runconfig import JOB_FILE, SCRIPT_FILE

if TYPE_CHECKING:
    from support import Stubs

UMASKS = [0o000, 0o002, 0o022, 0o027, 0o077]
SECRET_NAME = "WANDB_API_KEY"
SECRET = "wandb-s3cr3t-'$(touch PWNED)'-9f8e7d"


def modes(root: Path) -> dict[Path, int]:
    """Permission bits of the folder and everything below it."""
    found = {root: stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[path] = stat.S_IMODE(path.lstat().st_mode)
    return found


def assert_umask_respected(root: Path, umask: int) -> None:
    for path, mode in modes(root).items():
        assert not mode & 0o077, f"{path} is not private ({mode:o}) under umask {umask:03o}"
        assert mode & 0o600 == 0o600, f"{path} is not readable and writable by its owner ({mode:o})"


def with_umask(umask: int) -> Callable[[], None]:
    return lambda: os.umask(umask)


@pytest.mark.parametrize("umask", UMASKS, ids=[f"{u:03o}" for u in UMASKS])
def test_submitted_job_folder_follows_the_umask(
    umask: int, stubs: Stubs, write_cluster: Callable[..., Path], tmp_path: Path
) -> None:
    cluster = write_cluster()
    proc = subprocess.run(
        [ORCH, "submit", "smoke", "--cluster", str(cluster), "--json"],
        env=stubs.env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=with_umask(umask),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    assert {p.name for p in job_dir.iterdir()} >= {JOB_FILE, SCRIPT_FILE, "job_id", "logs", "checkpoints"}
    assert_umask_respected(job_dir.parent, umask)
    [sbatch] = stubs.records("sbatch")
    assert sbatch["umask"] == 0o077, "sbatch (and so the job and its log files) runs with umask 077"


@pytest.mark.slow
@pytest.mark.parametrize("umask", [0o000, 0o077], ids=["000", "077"])
def test_local_run_folder_follows_the_umask(umask: int, tmp_path: Path) -> None:
    """Everything a local run writes: job.json, rank logs, checkpoints, metrics, result."""
    proc = subprocess.run(
        [
            ORCH,
            "run",
            "smoke",
            "--nproc",
            "2",
            "--job-root",
            str(tmp_path / "jobs"),
            "--json",
            "epochs=2",
            "samples=128",
            "test_samples=32",
        ],
        env=clean_environ(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=with_umask(umask),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    names = {str(p.relative_to(job_dir)) for p in job_dir.rglob("*")}
    assert {
        "job.json",
        "logs/local-rank0.out",
        "logs/local-rank1.out",
        "checkpoints/latest.pt",
        "checkpoints/previous.pt",
        "metrics.jsonl",
        "result.json",
    } <= names
    assert_umask_respected(tmp_path / "jobs", umask)


def test_launcher_alone_never_writes_world_writable_files(tmp_path: Path) -> None:
    """The task entry (as srun starts it) narrows its own umask too: checkpoints and results."""
    from datetime import datetime

    from orchestrator.records.jobcreate import write_run_config
    from orchestrator.spec.cluster import Launcher
    from orchestrator.spec.runconfig import RunConfig

    job_dir = tmp_path / "job"
    (job_dir / "logs").mkdir(parents=True)
    smoke = ROOT / "jobs" / "smoke.py"
    write_run_config(
        job_dir,
        RunConfig(
            mode="local",
            job_name="smoke",
            job_file=str(smoke),
            params={"epochs": 1, "samples": 64, "test_samples": 16},
            nodes=1,
            gpus_per_node=0,
            tasks_per_node=1,
            cpus_per_task=1,
            job_dir=str(job_dir),
            launcher=Launcher(),
            created=datetime.now().isoformat(timespec="seconds"),
        ),
    )
    os.chmod(job_dir / JOB_FILE, 0o640)
    env = clean_environ(
        RANK="0",
        LOCAL_RANK="0",
        WORLD_SIZE="1",
        LOCAL_WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(_free_port()),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator.runtime.launch", "--job-dir", str(job_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=with_umask(0),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = {p for p in job_dir.rglob("*") if p.is_file()} - {job_dir / JOB_FILE}
    assert {p.name for p in written} >= {"latest.pt", "metrics.jsonl", "result.json"}
    for path in written:
        assert not path.stat().st_mode & 0o077, f"{path} is not private"


def _free_port() -> int:
    from orchestrator.local.rankenv import free_port

    return free_port()


# --- secrets by name (launcher.pass_env) ------------------------------------------------------


def every_file_text(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", errors="replace") for p in root.rglob("*") if p.is_file())


def test_pass_env_writes_names_only_and_the_value_reaches_srun(
    stubs: Stubs, write_cluster: Callable[..., Path], tmp_path: Path
) -> None:
    cluster = write_cluster(launcher={"pass_env": [SECRET_NAME]})
    env = stubs.env(**{SECRET_NAME: SECRET, "AWS_SECRET_ACCESS_KEY": SECRET + "-aws"})
    proc = subprocess.run(
        [ORCH, "submit", "smoke", "--cluster", str(cluster), "--nodes", "2", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    script = (job_dir / SCRIPT_FILE).read_text(encoding="utf-8")
    assert f"[[ ! -v {SECRET_NAME} ]]" in script
    assert json.loads((job_dir / JOB_FILE).read_text(encoding="utf-8"))["launcher"]["pass_env"] == [
        SECRET_NAME
    ]
    assert SECRET not in every_file_text(job_dir) and "s3cr3t" not in every_file_text(job_dir)
    assert "s3cr3t" not in proc.stdout + proc.stderr
    # sbatch passes the submitting environment on; the batch script hands it to srun as is
    job_env = {
        **env,
        "SLURM_JOB_ID": "55",
        "SLURM_JOB_NODELIST": "gpu[001-002]",
        "SLURM_JOB_NUM_NODES": "2",
        "ORCH_STUB_PYTHON": sys.executable,
    }
    run = subprocess.run(
        ["bash", str(job_dir / SCRIPT_FILE)],
        env=job_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    [srun] = stubs.records("srun")
    assert srun["env"][SECRET_NAME] == SECRET
    assert not (tmp_path / "PWNED").exists()


def test_pass_env_missing_at_submit_is_refused_before_sbatch(
    stubs: Stubs, write_cluster: Callable[..., Path], tmp_path: Path
) -> None:
    cluster = write_cluster(launcher={"pass_env": ["HF_TOKEN", SECRET_NAME]})
    proc = subprocess.run(
        [ORCH, "submit", "smoke", "--cluster", str(cluster)],
        env=stubs.env(HF_TOKEN="x"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert (
        f"launcher.pass_env: {SECRET_NAME} not set" in proc.stderr
        and f"HINT: export {SECRET_NAME}=" in proc.stderr
    )
    assert stubs.records() == []
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir())


def test_pass_env_missing_in_the_job_stops_the_script_before_srun(
    stubs: Stubs, make_plan: Callable[..., object], write_cluster: Callable[..., Path], tmp_path: Path
) -> None:
    """E.g. SBATCH_EXPORT=NONE at the site: the batch script says which variable is missing."""
    from orchestrator.slurm.plan import SubmitPlan, write_job_dir

    plan = make_plan(
        write_cluster(launcher={"pass_env": [SECRET_NAME]}),
        python=sys.executable,
        job_root=tmp_path / "jobs",
        nodes=1,
        gpus=2,
    )
    assert isinstance(plan, SubmitPlan)
    job_dir = write_job_dir(plan)
    run = subprocess.run(
        ["bash", str(job_dir / SCRIPT_FILE)],
        env=stubs.env(SLURM_JOB_ID="56"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 2
    assert f"orch: {SECRET_NAME} (launcher.pass_env) is not in the job's environment" in run.stderr
    assert stubs.records("srun") == []


@pytest.mark.parametrize("names", [["BAD-NAME"], ["1ST"], ["A B"], [""]])
def test_pass_env_names_are_checked(
    names: list[str],
    write_cluster: Callable[..., Path],
    stubs: Stubs,
    capsys: pytest.CaptureFixture[str],
    clean_env: pytest.MonkeyPatch,
) -> None:
    from orchestrator.cli import main

    code = main(["submit", "smoke", "--cluster", str(write_cluster(launcher={"pass_env": names}))])
    err = capsys.readouterr().err
    assert code == 2 and "launcher.pass_env" in err and "not a valid environment variable name" in err
    assert stubs.records() == []


def test_no_value_from_the_users_environment_is_written(
    stubs: Stubs, write_cluster: Callable[..., Path], tmp_path: Path
) -> None:
    """Without pass_env, secrets in the shell still never land in the job folder or the output."""
    env = stubs.env(GITHUB_TOKEN="ghp_" + "x1y2" * 9, AWS_SECRET_ACCESS_KEY="aws-secret-value-123")
    for dry in ([], ["--dry-run"]):
        proc = subprocess.run(
            [ORCH, "submit", "smoke", "--cluster", str(write_cluster()), *dry],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "x1y2x1y2" not in proc.stdout and "aws-secret-value" not in proc.stdout
    text = every_file_text(tmp_path / "jobs")
    assert "x1y2x1y2" not in text and "aws-secret-value" not in text
