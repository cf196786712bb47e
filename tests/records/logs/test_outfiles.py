"""Files the follow-up verbs write keep the private-folder rule (docs/trust.md): inside a job folder a file
is 0600 whatever the umask (``orch plot``'s metrics.png, a sweep's, or ``-o`` into a job folder); a path
outside job folders follows the user's umask. ``orch compare`` and ``orch tb`` write nothing. Through the
installed ``orch`` under umask 022 (the common default, which would leave a PNG world-readable).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from support import ORCH, clean_environ

from orchestrator.records.jobcreate import write_run_config
from orchestrator.records.logs.outfiles import job_folder_of
from orchestrator.spec.runconfig import RunConfig

pytest.importorskip("matplotlib")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    jobs = tmp_path / "jobs"
    jobs.mkdir(mode=0o700)
    (tmp_path / "cluster.yaml").write_text(
        "name: t\npartitions:\n  - {name: debug, nodes: 'node[1-2]', gpus_per_node: 8, cpus_per_node: 4, "
        f"mem_per_node: 4096}}\nlauncher:\n  job_root: {jobs}\n")
    return jobs


def make_run(folder: Path, lr: float, job_id: str) -> Path:
    folder.mkdir(mode=0o700, parents=True)
    write_run_config(folder, RunConfig(mode="slurm", job_name="toy", job_file="/jobs/toy.py", params={"lr": lr},
                                       nodes=1, gpus_per_node=1, tasks_per_node=1, cpus_per_task=1,
                                       job_dir=str(folder), created="2026-01-02T03:04:05"))
    (folder / "job_id").write_text(job_id + "\n")
    steps = [{"step": s, "time": 0.0, "train/loss": 2.0 / (1 + lr * s)} for s in range(1, 21)]
    (folder / "steps.jsonl").write_text("".join(json.dumps(x) + "\n" for x in steps))
    epochs = [{"epoch": e, "epochs": 2, "train_loss": 1.0 / e, "test_loss": 1.0 / e, "test_acc": 0.5 * e,
               "metrics": ["acc"], "global_step": 10 * e} for e in (1, 2)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in epochs))
    return folder


def orch(cwd: Path, *args: str, umask: int = 0o022, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([ORCH, *args], cwd=cwd, env=clean_environ(HOME=str(cwd)), capture_output=True,
                          text=True, timeout=120, check=False, preexec_fn=lambda: os.umask(umask))
    if ok:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def listing(folder: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p.relative_to(folder)): (p.lstat().st_mode, p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in folder.rglob("*")}


def test_a_plot_in_a_job_folder_is_private_whatever_the_umask(root: Path, tmp_path: Path) -> None:
    run = make_run(root / "toy-20260102-030405-aaaaaa", 0.1, "5")
    orch(tmp_path, "plot", "5")  # per step
    assert mode(run / "metrics.png") == 0o600
    (run / "metrics.png").chmod(0o644)  # an older plot, world-readable: replaced by a private one
    orch(tmp_path, "plot", "5", "--epochs", umask=0o000)  # per epoch, under the widest umask
    assert mode(run / "metrics.png") == 0o600
    # named explicitly, but inside the job folder (or a folder in it): private all the same
    (run / "plots").mkdir(mode=0o700)
    orch(tmp_path, "plot", "5", "-o", str(run / "plots" / "mine.png"))
    assert mode(run / "plots" / "mine.png") == 0o600
    # a link planted at the plot's place is replaced, never followed
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not a plot\n")
    (run / "metrics.png").unlink()
    (run / "metrics.png").symlink_to(outside)
    orch(tmp_path, "plot", "5")
    assert outside.read_text() == "not a plot\n"
    assert not (run / "metrics.png").is_symlink() and mode(run / "metrics.png") == 0o600


def test_a_sweeps_plot_is_private_and_an_overlay_elsewhere_follows_the_umask(root: Path, tmp_path: Path) -> None:
    sweep = root / "toy-20260102-030405-bbbbbb"
    sweep.mkdir(mode=0o700)
    (sweep / "array.json").write_text(json.dumps({"elements": [{"lr": 0.1}, {"lr": 0.01}]}))
    (sweep / "job_id").write_text("77\n")
    for index, lr in enumerate((0.1, 0.01)):
        make_run(sweep / str(index), lr, f"77_{index}")
    orch(tmp_path, "plot", "77")
    assert mode(sweep / "metrics.png") == 0o600
    other = make_run(root / "toy-20260102-030405-cccccc", 0.5, "6")
    orch(tmp_path, "plot", "77_0", str(other))  # two unrelated runs: ./orch-plot.png, the user's umask
    assert mode(tmp_path / "orch-plot.png") == 0o644


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o027, 0o640)])
def test_a_path_named_outside_job_folders_follows_the_umask(root: Path, tmp_path: Path, umask: int,
                                                            expected: int) -> None:
    make_run(root / "toy-20260102-030405-dddddd", 0.1, "5")
    out = tmp_path / "out" / "x.png"
    out.parent.mkdir()
    orch(tmp_path, "plot", "5", "-o", str(out), umask=umask)
    assert mode(out) == expected


def test_the_named_path_is_written_exactly_and_a_bad_format_is_refused(root: Path, tmp_path: Path) -> None:
    make_run(root / "toy-20260102-030405-eeeeee", 0.1, "5")
    proc = orch(tmp_path, "plot", "5", "-o", str(tmp_path / "curves"), "--json")
    assert json.loads(proc.stdout)["plot"] == str(tmp_path / "curves")
    assert (tmp_path / "curves").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not (tmp_path / "curves.png").exists()
    orch(tmp_path, "plot", "5", "-o", str(tmp_path / "c.svg"))
    assert b"<svg" in (tmp_path / "c.svg").read_bytes()[:500]
    proc = orch(tmp_path, "plot", "5", "-o", str(tmp_path / "c.xyz"), ok=False)
    assert proc.returncode == 2 and "Format 'xyz' is not supported" in proc.stderr and "HINT:" in proc.stderr
    assert not (tmp_path / "c.xyz").exists()


def test_compare_and_tb_write_nothing_in_the_job_folders(root: Path, tmp_path: Path) -> None:
    run = make_run(root / "toy-20260102-030405-ffffff", 0.1, "5")
    (run / "tb").mkdir(mode=0o700)
    before = listing(root)
    orch(tmp_path, "compare", "5")
    orch(tmp_path, "tb", "5", "--print")
    assert listing(root) == before


def test_which_folder_is_a_job_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    assert job_folder_of(run / "sub" / "x.png") is None
    (run / "job.json").write_text("{}")
    assert job_folder_of(run / "x.png") == run and job_folder_of(run / "sub" / "x.png") == run
    link = tmp_path / "link"
    link.symlink_to(run)
    assert job_folder_of(link / "x.png") == run  # a link into a job folder leads into it
    assert job_folder_of(tmp_path / "x.png") is None
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "array.json").write_text("{}")
    assert job_folder_of(sweep / "metrics.png") == sweep
