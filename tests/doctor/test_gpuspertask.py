"""``--gpus-per-task K`` (K > 1) with a script that picks its GPU from the local rank
(orchestrator/doctor/gpuspertask.py): a warning with the fix, for the script's own binding and for the
frameworks that bind cuda:LOCAL_RANK themselves; no warning for one GPU per rank or a script that maps
its devices itself. Through the gate: ``orch submit --dry-run`` prints it and still submits nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import ROOT, run_cli

from orchestrator.doctor.gpuspertask import gpus_per_task_warning

if TYPE_CHECKING:
    from support import Stubs

Capsys = pytest.CaptureFixture[str]
SCRIPTS = ROOT / "tests" / "scripts"
HEAD = "import os\nimport torch\nimport torch.distributed as dist\n"
SCRIPT_HINT = ('HINT: use the rank\'s own GPUs by their numbers in the rank: torch.device("cuda", 0) for the first '
               "(orch binds it before the script starts: torch.cuda.current_device()), or one GPU per rank without "
               "--gpus-per-task")


@pytest.fixture
def cluster(clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path]) -> Stubs:
    clean_env.setenv("ORCH_CLUSTER", str(write_cluster()))
    return stubs


@pytest.fixture
def script(tmp_path: Path) -> Callable[[str], Path]:
    def write(body: str) -> Path:
        path = tmp_path / "train.py"
        path.write_text(HEAD + body)
        return path
    return write


@pytest.mark.parametrize(("body", "line", "call"), [
    ('local_rank = int(os.environ["LOCAL_RANK"])\ntorch.cuda.set_device(local_rank)\n', 5,
     "torch.cuda.set_device(local_rank)"),
    ('def main(args):\n    model = torch.nn.Linear(2, 2).to(f"cuda:{args.local_rank}")\n', 5,
     "torch.nn.Linear(2, 2).to(f'cuda:{args.local_rank}')"),
    ('device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))\n', 4,
     "torch.device('cuda', int(os.environ['LOCAL_RANK']))"),
])
def test_a_device_from_the_local_rank_is_a_warning_with_the_fix(script: Callable[[str], Path], body: str,
                                                                 line: int, call: str) -> None:
    path = script(body)
    assert gpus_per_task_warning(path, 2) == (
        f"orch: warning: --gpus-per-task 2: {path}:{line} picks its GPU from the local rank ({call}); each rank "
        "sees only its own 2 GPUs, cuda:0 to cuda:1, so a rank with LOCAL_RANK >= 2 names a GPU it cannot see "
        f"(invalid device ordinal)\n{SCRIPT_HINT}")


@pytest.mark.parametrize(("name", "framework", "call"), [
    ("accelerate_train.py", "Accelerate", "Accelerator()"),
    ("hf_trainer_train.py", "the HF Trainer", "TrainingArguments(...)"),
])
def test_frameworks_that_bind_the_local_rank_get_it_too(name: str, framework: str, call: str) -> None:
    warning = gpus_per_task_warning(SCRIPTS / name, 4)
    assert warning is not None
    assert f"{framework} puts each process on cuda:LOCAL_RANK ({call}); each rank sees only its own 4 GPUs" in warning
    assert warning.endswith(f"HINT: run {framework} with one GPU per rank: leave out --gpus-per-task "
                            "(orch run --nproc N, orch submit --gpus N)")


@pytest.mark.parametrize("body", [
    'torch.cuda.set_device(0)\n',  # the rank's first GPU
    'local_rank = int(os.environ["LOCAL_RANK"])\ntorch.cuda.set_device(local_rank % torch.cuda.device_count())\n',
    'rank = dist.get_rank()\nprint(rank)\nmodel = torch.nn.Linear(2, 2).cuda()\n',
])
def test_a_script_that_maps_its_own_devices_gets_none(script: Callable[[str], Path], body: str) -> None:
    assert gpus_per_task_warning(script(body), 2) is None


def test_one_gpu_per_rank_or_an_unreadable_script_gets_none(script: Callable[[str], Path], tmp_path: Path) -> None:
    path = script('torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))\n')
    assert gpus_per_task_warning(path, None) is None and gpus_per_task_warning(path, 1) is None
    assert gpus_per_task_warning(tmp_path / "missing.py", 2) is None
    assert gpus_per_task_warning(script("def broken(:\n"), 2) is None


def test_the_dry_run_says_it_and_submits_nothing(cluster: Stubs, capsys: Capsys) -> None:
    code, _, err = run_cli(["submit", str(SCRIPTS / "accelerate_train.py"), "--nodes", "1", "--gpus", "8",
                            "--gpus-per-task", "2", "--dry-run", "--", "--out", "x"], capsys)
    assert code == 0, err
    assert "orch: warning: --gpus-per-task 2: " in err and "Accelerate puts each process on cuda:LOCAL_RANK" in err
    assert cluster.records("sbatch") == []
