"""Permissions that fit a shared project: a script's own outputs follow the user's umask (as at ``orch
run``/``orch submit`` time, or ``launcher.umask`` in cluster.yaml), recorded in ``job.json`` and handed to
the script by its rank right before it runs; orch's own records (the job folder, its logs) stay ``0700``
/``0600`` whatever the umask. Before this, every rank ran under umask 077 (the batch script, the local
runner and the task all set it), so a teammate could not read the results (``drwx------``)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from support import ORCH, ROOT, Stubs, batch_task_env, clean_environ

from orchestrator.errors import ConfigError
from orchestrator.records.cache import load_cluster
from orchestrator.spec.umask import check_umask

WRITER = """\
import os, pathlib
out = pathlib.Path("runs/a")
out.mkdir(parents=True, exist_ok=True)
(out / ("out%s.txt" % os.environ["RANK"])).write_text("done")
"""


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _orch(env: dict[str, str], cwd: Path, *args: str, mask: int = 0o022) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ORCH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180,
                          check=False, preexec_fn=lambda: os.umask(mask))


def _private(job_dir: Path) -> None:
    """Every folder of the job folder 0700, every file 0600 (sbatch.sh 0700) (orch's records: yours alone)."""
    for path in [job_dir, *job_dir.rglob("*")]:
        if path.is_symlink():
            continue
        private = 0o700 if path.is_dir() or path.name == "sbatch.sh" else 0o600
        assert _mode(path) == private, f"{path}: {oct(_mode(path))}"


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(WRITER)
    return root


def test_a_local_run_under_umask_022_leaves_readable_outputs_and_a_private_job_folder(proj: Path,
                                                                                     tmp_path: Path) -> None:
    env = clean_environ(PYTHONPATH=str(ROOT))
    env.pop("OMP_NUM_THREADS", None)
    proc = _orch(env, proj, "run", "train.py", "--nproc", "2", "--cpu", "--job-root", str(tmp_path / "jobs"))
    assert proc.returncode == 0, proc.stderr
    assert (_mode(proj / "runs"), _mode(proj / "runs" / "a")) == (0o755, 0o755)
    assert {_mode(p) for p in (proj / "runs" / "a").iterdir()} == {0o644}
    [job_dir] = [p for p in (tmp_path / "jobs").iterdir() if (p / "job.json").is_file()]
    assert json.loads((job_dir / "job.json").read_text())["umask"] == "0022"
    assert (job_dir / "logs" / "local-rank0.out").is_file()
    _private(job_dir)


def test_a_group_umask_is_kept_for_the_outputs_and_never_for_the_records(proj: Path, tmp_path: Path) -> None:
    """umask 002 (a project group that shares writing): the outputs are group-writable, as with plain
    python; orch's own records stay 0700/0600 (orch adds 022 for what it creates itself, and sets modes)."""
    env = clean_environ(PYTHONPATH=str(ROOT))
    proc = _orch(env, proj, "run", "train.py", "--cpu", "--job-root", str(tmp_path / "jobs"), mask=0o002)
    assert proc.returncode == 0, proc.stderr
    assert (_mode(proj / "runs" / "a"), _mode(proj / "runs" / "a" / "out0.txt")) == (0o775, 0o664)
    [job_dir] = [p for p in (tmp_path / "jobs").iterdir() if (p / "job.json").is_file()]
    _private(job_dir)


def test_the_batch_job_hands_the_recorded_umask_to_the_script(proj: Path, stubs: Stubs, tmp_path: Path,
                                                              write_cluster: Callable[..., Path]) -> None:
    """sbatch.sh under bash (its ``umask 077``), the stub srun running the task: the script's files get the
    umask of submit time (--no-snapshot: the files in place, as the issue's report)."""
    cluster = write_cluster(launcher={"job_root": str(tmp_path / "jobroot")})
    proc = _orch(stubs.env(), proj, "submit", "train.py", "--no-snapshot", "--cluster", str(cluster),
                 "--partition", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    assert json.loads((job_dir / "job.json").read_text())["umask"] == "0022"
    assert "\numask 077\n" in (job_dir / "sbatch.sh").read_text()  # orch's records: private
    task = batch_task_env()
    run = subprocess.run(["bash", str(job_dir / "sbatch.sh")], cwd=proj, capture_output=True, text=True,
                         timeout=180, check=False, env=stubs.env(**task, ORCH_STUB_SRUN_EXEC="1"),
                         preexec_fn=lambda: os.umask(0o077))  # what slurmd gives it (sbatch ran under 077)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (_mode(proj / "runs" / "a"), _mode(proj / "runs" / "a" / "out0.txt")) == (0o755, 0o644)
    _private(job_dir)


def test_launcher_umask_wins_over_the_users(proj: Path, stubs: Stubs, tmp_path: Path,
                                            write_cluster: Callable[..., Path]) -> None:
    cluster = write_cluster(launcher={"job_root": str(tmp_path / "jobroot"), "umask": "027"})
    proc = _orch(stubs.env(), proj, "submit", "train.py", "--cluster", str(cluster), "--partition", "cpu",
                 "--json")
    assert proc.returncode == 0, proc.stderr
    job_dir = Path(json.loads(proc.stdout)["job_dir"])
    config = json.loads((job_dir / "job.json").read_text())
    assert (config["umask"], config["launcher"]["umask"]) == ("0027", "0027")


@pytest.mark.parametrize(("value", "fix"), [
    ("0922", 'such as "0022"'), ("22", 'such as "0022"'), ("00022", 'such as "0022"'), ("u=rwx", 'such as "0022"'),
])
def test_a_bad_launcher_umask_names_the_field_and_the_fix(write_cluster: Callable[..., Path], value: str,
                                                          fix: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_cluster(write_cluster(launcher={"umask": value}))
    assert "launcher.umask" in err.value.message and fix in err.value.message
    assert 'launcher.umask: quote it' in (err.value.hint or "")


def test_a_bare_yaml_number_is_refused_with_the_quoting_hint(write_cluster: Callable[..., Path],
                                                             tmp_path: Path) -> None:
    path = write_cluster()
    text = path.read_text().replace("launcher:\n", "launcher:\n  umask: 0022\n", 1)
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_cluster(path)
    assert "launcher.umask" in err.value.message
    assert 'HINT: launcher.umask: quote it (YAML reads a bare 0022 as the number 18), e.g. umask: "0022"' in (
        err.value.render())


def test_check_umask_normalises_three_and_four_digits() -> None:
    assert [check_umask(v) for v in ("022", "0022", "0777", "000", None)] == ["0022", "0022", "0777", "0000", None]
