"""Making a job folder: new, private (mode 0o700 exactly, whatever the umask), with ``logs/`` and ``checkpoints/``,
``sbatch.sh`` and ``job.json``; all or nothing (a file-system error removes the folder and names
launcher.job_root). The names are :mod:`orchestrator.records.joblayout`'s.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from orchestrator.records.atomic import write_private, write_text_atomic
from orchestrator.records.trust import JOB_ROOT_MODE, fs_error, make_job_root
from orchestrator.spec.runconfig import CHECKPOINT_DIR, JOB_FILE, LOG_DIR, SCRIPT_FILE, RunConfig, run_config_text

JOB_DIR_MODE = JOB_ROOT_MODE  # 0o700 exactly (chmod), whatever the umask: yours only
SCRIPT_MODE = 0o700  # sbatch.sh; every other file orch writes in a job folder is 0o600


def write_run_config(job_dir: Path, config: RunConfig) -> Path:
    """Write ``job.json`` whole or not at all, mode 0o600."""
    return write_text_atomic(job_dir / JOB_FILE, run_config_text(config))


def create_job_dir(job_dir: Path) -> Path:
    """Create a new job folder with ``logs/`` and ``checkpoints/`` (Slurm does not create --output
    folders). Never reuses one. Mode ``0o700`` exactly, whatever the umask: yours only.
    The job root is created with the same mode and checked first (:mod:`orchestrator.records.trust`); a
    file-system error is a ConfigError naming launcher.job_root and leaves no folder behind."""
    make_job_root(job_dir.parent)
    try:
        make_private_dir(job_dir)
    except OSError as exc:
        raise fs_error(job_dir, exc) from None
    with filling(job_dir):
        for sub in (LOG_DIR, CHECKPOINT_DIR):
            make_private_dir(job_dir / sub)
    return job_dir


def make_private_dir(path: Path) -> Path:
    """A new folder of mode ``JOB_DIR_MODE`` exactly (the umask could take bits from mkdir's mode)."""
    path.mkdir(mode=JOB_DIR_MODE)
    path.chmod(JOB_DIR_MODE)
    return path


@contextlib.contextmanager
def filling(job_dir: Path) -> Iterator[None]:
    """Writes into a job folder just created: on a file-system error (no space left, read-only) the
    folder is removed whole and the error is a ConfigError naming launcher.job_root."""
    try:
        yield
    except OSError as exc:
        shutil.rmtree(job_dir, ignore_errors=True)
        raise fs_error(job_dir, exc) from None


def write_config(job_dir: Path, config: RunConfig) -> Path:
    """``job.json``, mode 0o600."""
    return write_run_config(job_dir, config)


def write_script(job_dir: Path, script: str) -> Path:
    """``sbatch.sh`` (new file, mode 0o700: the user's alone)."""
    return write_private(job_dir / SCRIPT_FILE, script, mode=SCRIPT_MODE, exclusive=True)


def write_job_dir(job_dir: Path, script: str, config: RunConfig) -> Path:
    """Create a Slurm job folder: ``sbatch.sh``, ``job.json``, ``logs/`` and ``checkpoints/`` (all or nothing)."""
    create_job_dir(job_dir)
    with filling(job_dir):
        write_script(job_dir, script)
        write_config(job_dir, config)
    return job_dir
