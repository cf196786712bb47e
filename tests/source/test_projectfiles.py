"""The launch style and the frameworks are read from the script's project, not just the entry: a spawn, Slurm's
variables, a Fabric or Accelerate loop in a project module the entry calls decide, and the result names that
file and line (``orch doctor``'s note, the dry run's ``launch:`` and ``framework:`` lines)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import cluster_file

from orchestrator.cli import main
from orchestrator.doctor.check import check_file
from orchestrator.doctor.frameworks import read_frameworks
from orchestrator.launchstyles import detect, read
from orchestrator.source.projectfiles import project_files

PROJECTS = Path(__file__).resolve().parents[1] / "doctor" / "fixtures" / "projects"
SPAWN_WHY = "launcher.py:19: mp.spawn(worker, args=(args,), nprocs=args.gpus)"
PASSED_WHY = "utils/dist.py:10: spawn(fn, args=(world, args), nprocs=world)"
SLURM_WHY = 'dist_utils.py:7: rank = int(os.environ["SLURM_PROCID"])'


def _detect(script: str) -> tuple[str, str, str]:
    path = PROJECTS / script
    launch = detect(read(path))
    return launch.style, launch.how, launch.why


@pytest.mark.parametrize(("script", "style", "why"), [
    ("helper_spawn/main.py", "per-node", SPAWN_WHY),  # the entry also reads --local_rank (DDP015): still per-node
    ("helper_spawn_passed/main.py", "per-node", PASSED_WHY),  # the entry hands engine.train_worker to the spawner
    ("helper_slurm/train.py", "slurm", SLURM_WHY),
    ("helper_fabric/main.py", "env", ""),
])
def test_the_style_is_read_from_the_project_modules_the_entry_calls(script: str, style: str, why: str) -> None:
    assert _detect(script) == (style, "detected" if why else "default", why)


def test_an_entry_that_declares_local_rank_but_whose_helper_spawns_is_per_node() -> None:
    path = PROJECTS / "helper_spawn" / "main.py"
    assert {f.code for f in check_file(path)} >= {"DDP014", "DDP015"}
    assert detect(read(path)).style == "per-node"


def test_torchrun_variables_read_in_a_helper_keep_the_env_style(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import os\nfrom ranks import ranks\n\n"
                                       "node = os.environ['SLURM_PROCID']\nrank, local = ranks()\n")
    (tmp_path / "ranks.py").write_text("import os\n\n\ndef ranks():\n"
                                       "    return int(os.environ['RANK']), int(os.environ['LOCAL_RANK'])\n")
    assert detect(read(tmp_path / "train.py")).style == "env"


@pytest.mark.parametrize(("script", "name", "why"), [
    ("helper_fabric/main.py", "fabric", 'loop.py:6: fabric = L.Fabric(accelerator="cpu", devices=2, strategy="ddp")'),
    ("helper_accelerate/main.py", "accelerate", "trainers/accel.py:6: accelerator = Accelerator()"),
])
def test_a_framework_in_a_helper_module_is_named_with_its_file_and_line(script: str, name: str, why: str) -> None:
    [framework] = read_frameworks(PROJECTS / script)
    assert (framework.name, framework.why) == (name, why)


def test_the_helpers_layout_is_kept() -> None:
    [framework] = read_frameworks(PROJECTS / "helper_fabric" / "main.py")
    [layout] = framework.layouts
    assert (layout.devices, layout.strategy, layout.accelerator) == (2, "ddp", "cpu")


def test_only_the_projects_own_modules_are_read() -> None:
    """The entry and the modules its calls reach in its folder; torch and other installed packages never."""
    files = project_files(PROJECTS / "helper_spawn_passed" / "main.py")
    assert [f.shown for f in files] == ["main.py", "utils/dist.py", "engine.py"]
    assert all(PROJECTS in f.path.parents for f in files)


def test_an_unreadable_entry_has_no_files(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def (\n")
    assert project_files(tmp_path / "broken.py") == [] and project_files(tmp_path / "missing.py") == []


# -- through the real CLI -------------------------------------------------------------------------------

@pytest.mark.parametrize(("script", "line"), [
    ("helper_spawn/main.py", f"#   launch: per-node (detected: {SPAWN_WHY})"),
    ("helper_spawn_passed/main.py", f"#   launch: per-node (detected: {PASSED_WHY})"),
    ("helper_slurm/train.py", f"#   launch: slurm (detected: {SLURM_WHY})"),
    ("helper_fabric/main.py", "#   framework: fabric (loop.py:6: fabric = L.Fabric("),
    ("helper_accelerate/main.py", "#   framework: accelerate (trainers/accel.py:6: accelerator = Accelerator())"),
])
def test_the_dry_run_says_which_file_and_line_decided(script: str, line: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["submit", str(PROJECTS / script), "--cluster", str(cluster_file(tmp_path)), "--nodes", "1", "--gpus", "2",
            "--dry-run"]
    assert main(argv) == 0
    assert line in capsys.readouterr().out


@pytest.mark.parametrize(("script", "style", "why"), [
    ("helper_spawn_passed/main.py", "per-node", PASSED_WHY),
    ("helper_slurm/train.py", "slurm", SLURM_WHY),
])
def test_orch_doctor_says_which_file_and_line_decided(script: str, style: str, why: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(PROJECTS / script)]) == 0
    assert f"written for the {style} launch style ({why})" in capsys.readouterr().err
