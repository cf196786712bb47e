"""The README's first command, ``bash scripts/demo.sh``, in a fresh clone with no ``../shared`` beside it.

The clone is a copy of the checkout's files (tracked, and untracked but not ignored), in a temporary
folder of its own: no data beside it, HOME and the XDG folders there too, no ``$ORCH_DATA_DIR``. Its
``.venv`` is a link to the checkout's, so ``scripts/setup.sh`` only checks (its pyproject.toml is made
older than the venv's install stamp: nothing is installed) and the clone's own code runs (first on
``PYTHONPATH``). One demo run per path, cut short (``max_steps_per_epoch=5``):

* offline, as CI is: ``$ORCH_MNIST_MIRROR`` at a closed local port, so MNIST's download fails at once;
  the demo says so, runs the built-in smoke job instead and exits 0;
* the download: a local HTTP mirror of MNIST's four files (python's http.server on 127.0.0.1); the demo
  fetches them into the per-user cache and trains on them (skipped with the reason without the files).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mnist_mirror import HAVE_MNIST, MNIST_DIR, MNIST_NAMES, NO_MNIST, Mirror, closed_port_url
from support import ROOT, clean_environ

VENV = ROOT / ".venv"
STAMP = VENV / ".orch-installed"  # scripts/setup.sh installs again when pyproject.toml is newer
SHORT = "max_steps_per_epoch=5"
TIMEOUT = 600  # seconds: set-up checks, a dry run and a short run of 2 ranks (minutes on a loaded CI box)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (VENV / "bin" / "python").is_file() or not STAMP.is_file(),
                                 reason=f"no set-up .venv at {VENV} (bash scripts/setup.sh) for the clone to reuse")]


def fresh_clone(tmp_path: Path) -> Path:
    """The checkout's files as a clone has them, in ``tmp_path/orch`` (nothing beside it), with a linked .venv."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode()
    clone = tmp_path / "orch"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    (clone / ".venv").symlink_to(VENV, target_is_directory=True)
    stamp = STAMP.stat().st_mtime
    os.utime(clone / "pyproject.toml", (stamp - 60, stamp - 60))  # set-up checks only, never installs
    assert not (tmp_path / "shared").exists()
    return clone


def demo(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    clone = fresh_clone(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = clean_environ(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
                        XDG_STATE_HOME=str(home / ".local" / "state"), TMPDIR=str(tmp_path), PYTHONPATH=str(clone),
                        **extra)
    assert "ORCH_DATA_DIR" not in env
    proc = subprocess.run(["bash", "scripts/demo.sh", SHORT], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)
    assert "installing" not in proc.stdout, proc.stdout  # the linked venv was only checked
    return proc


@pytest.fixture
def mnist_mirror() -> Iterator[Mirror]:
    mirror = Mirror(MNIST_DIR / "MNIST" / "raw")
    yield mirror
    mirror.close()


def test_offline_the_demo_says_so_and_runs_the_smoke_job(tmp_path: Path) -> None:
    proc = demo(tmp_path, ORCH_MNIST_MIRROR=closed_port_url())
    out = proc.stdout
    assert proc.returncode == 0, f"{out[-3000:]}\n{proc.stderr[-3000:]}"
    assert "orch submit mnist --nodes 2 --gpus 8 --dry-run" in out and "#SBATCH --nodes=2" in out
    assert "could not download the data of job mnist" in proc.stderr and "offline" in proc.stderr
    assert "this machine is offline, so MNIST could not be downloaded" in out
    assert "running the built-in smoke job instead" in out
    assert "$ orch run smoke --nproc 2 epochs=1 max_steps_per_epoch=5" in out
    assert "orch: smoke: 2 local process(es)" in out and "orch: completed; test accuracy" in out
    assert "orch: error: job mnist needs a data directory" not in out + proc.stderr  # the dry run's note may say it


@pytest.mark.mnist
@pytest.mark.skipif(not HAVE_MNIST, reason=NO_MNIST)
def test_the_demo_downloads_mnist_into_the_users_cache_and_trains(tmp_path: Path, mnist_mirror: Mirror) -> None:
    proc = demo(tmp_path, ORCH_MNIST_MIRROR=mnist_mirror.url)
    out = proc.stdout
    assert proc.returncode == 0, f"{out[-3000:]}\n{proc.stderr[-3000:]}"
    raw = tmp_path / "home" / ".cache" / "orch" / "data" / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(MNIST_NAMES)
    assert f"downloading {mnist_mirror.url}train-images-idx3-ubyte.gz" in out
    assert "orch: mnist: 2 local process(es)" in out and "60000 train / 10000 test samples" in out
    assert "orch: completed; test accuracy" in out and "smoke" not in out
