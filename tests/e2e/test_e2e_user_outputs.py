"""A script's outputs, as an ordinary user: relative paths land in the submit directory and follow the umask.

Run as the local cluster's unprivileged user (scripts/test.sh), umask 022, from a git work tree (so the
job runs from a read-only code snapshot): the README's own bring-your-own-script command (``--out
runs/a``), a Lightning script with its default ``lightning_logs/`` and a Hugging Face ``Trainer`` with a
relative ``output_dir``, each with ``orch submit`` on the cluster and with ``orch run`` on this machine.
Every output lies in the submit directory (docs/snapshots.md, "Where the script runs"), folders 0755 and
files 0644 in the user's group (teammates can read them), while the job folder stays 0700/0600.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ORCH, TESTS

if TYPE_CHECKING:
    from conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SCRIPTS = TESTS / "scripts"
# script -> (its arguments, the outputs it writes relative to its working directory (glob patterns), the import
# it needs). Lightning names its version folder after SLURM_JOB_ID under Slurm (version_0 elsewhere); the
# Trainer's model.safetensors is left out: safetensors writes it 0600 itself, as under plain python.
CASES = {
    "train.py": (["--lr", "0.1", "--out", "runs/a"], ["runs/a/rank0.json", "runs/a/rank1.json"], None),
    "lightning_defaults.py": ([], ["lightning_logs/version_*/hparams.yaml",
                                   "lightning_logs/version_*/checkpoints/epoch=0-step=4.ckpt"], "lightning"),
    "hf_trainer_relative.py": ([], ["out/hf/checkpoint-4/training_args.bin",
                                    "out/hf/checkpoint-4/trainer_state.json"], "transformers"),
}


def _as_a_user() -> None:
    if os.geteuid() == 0:
        pytest.skip("runs as the cluster's unprivileged user (scripts/test.sh, docs/testing.md): root writes "
                    "anywhere, a read-only snapshot included, so it cannot show what a user meets")


def _project(tmp_path: Path) -> Path:
    """The user's project: a git work tree with the scripts (the README's train.py is ddp_train.py)."""
    repo = tmp_path / "proj"
    repo.mkdir()
    shutil.copy(SCRIPTS / "ddp_train.py", repo / "train.py")
    for name in ("ddp_model.py", "lightning_defaults.py", "hf_trainer_relative.py"):
        shutil.copy(SCRIPTS / name, repo / name)
    (repo / ".gitignore").write_text("runs/\nlightning_logs/\nout/\n")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "v1"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    return repo


def _user_umask() -> None:
    os.umask(0o022)


def _orch(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False, preexec_fn=_user_umask)


def _assert_outputs(repo: Path, outputs: list[str], job_dir: Path) -> None:
    for pattern in outputs:
        found = sorted(repo.glob(pattern))
        assert len(found) == 1 and found[0].is_file(), f"{pattern} not in the submit directory {repo}: " + \
            " ".join(str(p.relative_to(repo)) for p in sorted(repo.rglob("*")) if ".git" not in p.parts)
        path = found[0]
        relative = path.relative_to(repo)
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, (relative, oct(path.stat().st_mode))
        assert path.stat().st_gid == os.getgid()  # the user's group: teammates in it read the results
        for folder in relative.parents:
            mode = stat.S_IMODE((repo / folder).stat().st_mode)
            assert str(folder) == "." or mode == 0o755, (folder, oct(mode))
    # orch's own records stay the user's alone
    assert stat.S_IMODE(job_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((job_dir / "job.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("script", list(CASES))
def test_orch_submit_writes_relative_outputs_in_the_submit_directory(slurm_cluster: SlurmCluster, tmp_path: Path,
                                                                      script: str) -> None:
    _as_a_user()
    args, outputs, needs = CASES[script]
    if needs:
        pytest.importorskip(needs)
    repo = _project(tmp_path)
    proc = _orch(["submit", script, "--nodes", "2", "--gpus", "1", "--cluster", str(slurm_cluster.cluster_yaml),
                  "--json", "--", *args], repo, slurm_cluster.env, 120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    job_id, job_dir = str(data["job_id"]), Path(data["job_dir"])
    final = slurm_cluster.wait_done(job_id, timeout=300, job_dir=job_dir)
    assert final["state"] == "COMPLETED", slurm_cluster.describe(job_dir)
    assert json.loads((job_dir / "job.json").read_text())["snapshot"], "the job ran from a code snapshot"
    _assert_outputs(repo, outputs, job_dir)
    assert not any(p.name in {"runs", "lightning_logs", "out"} for p in job_dir.parent.rglob("*")
                   if ".snapshots" in p.parts), "an output landed in the code snapshot"


@pytest.mark.parametrize("script", list(CASES))
def test_orch_run_writes_them_in_the_same_place(slurm_cluster: SlurmCluster, tmp_path: Path, script: str) -> None:
    _as_a_user()
    args, outputs, needs = CASES[script]
    if needs:
        pytest.importorskip(needs)
    repo = _project(tmp_path)
    env = {k: v for k, v in slurm_cluster.env.items() if not k.startswith("SLURM_")}
    proc = _orch(["run", script, "--nproc", "2", "--job-root", str(tmp_path / "jobs"), "--json", "--", *args],
                 repo, env, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _assert_outputs(repo, outputs, Path(json.loads(proc.stdout)["job_dir"]))
