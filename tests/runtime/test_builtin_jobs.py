"""The built-in jobs: torch-free job files, the models of the references, builds on test data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support import ORCH, clean_environ
from test_runtime_data import write_cifar, write_mnist

from jobs._datasets import CIFAR10_DIR
from orchestrator import BuildContext, TrainTask
from orchestrator.errors import ConfigError
from orchestrator.spec.job import BUILTIN_JOBS_DIR, TrainParams, load_job_file

JOBS = ("smoke", "mnist", "cifar10")


def ctx(data_dir: Path | None, tmp_path: Path) -> BuildContext:
    return BuildContext(data_dir=data_dir, job_dir=tmp_path, rank=0, local_rank=0, world_size=1,
                        device=torch.device("cpu"))


def test_job_files_import_without_torch() -> None:
    code = ("import sys\nfrom orchestrator.spec.job import load_job\nfrom pathlib import Path\n"
            f"for name in {JOBS!r}:\n"
            "    spec = load_job(name, {}, Path('/')).spec\n"
            "    assert spec.name == name, spec.name\n"
            "    spec.params()\n"
            "assert 'torch' not in sys.modules, 'a job file imported torch at module level'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=clean_environ())
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", JOBS)
def test_specs_and_defaults(name: str) -> None:
    spec = load_job_file(BUILTIN_JOBS_DIR / f"{name}.py")
    assert spec.name == name and issubclass(spec.params, TrainParams)
    assert spec.needs_data == (name != "smoke")
    params = spec.params()
    assert params.epochs >= 1 and params.batch_size >= 1
    assert spec.resources.nodes == 1 and spec.resources.gpus == 1


def param_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_mnist_model_is_lenet5_for_28x28() -> None:
    model = load_job_file(BUILTIN_JOBS_DIR / "mnist.py").build.__globals__["make_model"]()
    assert model(torch.zeros(3, 1, 28, 28)).shape == (3, 10)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.padding) for c in convs] == [
        (1, 6, (5, 5), (2, 2)), (6, 16, (5, 5), (0, 0))]
    linears = [(m.in_features, m.out_features) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears == [(400, 120), (120, 84), (84, 10)]
    assert param_count(model) == 61706


def test_cifar10_model_is_the_tutorial_cnn() -> None:
    model = load_job_file(BUILTIN_JOBS_DIR / "cifar10.py").build.__globals__["make_model"]()
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    linears = [(m.in_features, m.out_features) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears == [(16 * 5 * 5, 120), (120, 84), (84, 10)]
    assert param_count(model) == 62006


def test_smoke_build_is_deterministic_and_learnable(tmp_path: Path) -> None:
    spec = load_job_file(BUILTIN_JOBS_DIR / "smoke.py")
    a = spec.build(spec.params(), ctx(None, tmp_path))
    b = spec.build(spec.params(), ctx(None, tmp_path))
    assert isinstance(a, TrainTask) and a.test_set is not None
    assert torch.equal(a.train_set.inputs, b.train_set.inputs)  # every rank builds the same data
    assert a.train_set.inputs.shape == (1024, 10) and len(set(a.train_set.targets.tolist())) > 5
    other = spec.build(spec.params(seed=1), ctx(None, tmp_path))
    assert not torch.equal(a.train_set.inputs, other.train_set.inputs)


def test_mnist_and_cifar_builds_on_generated_files(tmp_path: Path) -> None:
    write_mnist(tmp_path / "MNIST" / "raw", 30, 10)
    write_cifar(tmp_path / CIFAR10_DIR, 6)
    for name, shape in (("mnist", (1, 28, 28)), ("cifar10", (3, 32, 32))):
        spec = load_job_file(BUILTIN_JOBS_DIR / f"{name}.py")
        task = spec.build(spec.params(), ctx(tmp_path, tmp_path))
        assert isinstance(task, TrainTask) and len(task.train_set) == 30
        batch = [task.train_set[i] for i in range(4)]
        inputs, targets = torch.stack([b[0] for b in batch]), torch.stack([b[1] for b in batch])
        assert inputs.shape == (4, *shape)
        loss = task.loss_fn(task.model(inputs), targets)
        assert loss.shape == () and torch.isfinite(loss)
        with pytest.raises(ConfigError, match="needs a data directory") as info:
            spec.build(spec.params(), ctx(None, tmp_path))
        assert info.value.hint and "ORCH_DATA_DIR" in info.value.hint


def test_cifar10_augmentation_crops_and_flips_per_seed(tmp_path: Path) -> None:
    """The training set is a Dataset (DataLoader path); the test set stays in memory (fast path)."""
    from jobs._datasets import Augmented
    from orchestrator import TensorData

    write_cifar(tmp_path / CIFAR10_DIR, 6)
    spec = load_job_file(BUILTIN_JOBS_DIR / "cifar10.py")
    task = spec.build(spec.params(), ctx(tmp_path, tmp_path))
    assert isinstance(task.train_set, Augmented) and isinstance(task.test_set, TensorData)
    plain = spec.build(spec.params(augment=False), ctx(tmp_path, tmp_path)).train_set
    assert isinstance(plain, TensorData)
    views = []
    for seed in range(12):
        torch.manual_seed(seed)
        image, label = task.train_set[0]
        assert image.shape == (3, 32, 32) and int(label) == int(plain.targets[0])
        views.append(image)
    torch.manual_seed(3)
    assert torch.equal(task.train_set[0][0], views[3]), "the same seed gives the same view"
    assert len({v.sum().item() for v in views}) > 3, "crops and flips differ between seeds"
    # every view is the image shifted by at most 4 pixels (zero padded), maybe mirrored
    original = plain.inputs[0]
    padded = torch.nn.functional.pad(original, (4, 4, 4, 4))
    for view in views:
        found = any(torch.equal(view, cand[:, t:t + 32, lft:lft + 32])
                    for cand in (padded, padded.flip(-1)) for t in range(9) for lft in range(9))
        assert found


@pytest.mark.slow
def test_cifar10_trains_end_to_end_on_generated_batches(tmp_path: Path) -> None:
    """CIFAR-10 is not on this machine: its real loader and model run on files of the real format."""
    data = tmp_path / "data"
    write_cifar(data / CIFAR10_DIR, 10)
    proc = subprocess.run([ORCH, "run", "cifar10", "--nproc", "2", "--data-dir", str(data), "--job-root",
                           str(tmp_path / "jobs"), "--json", "epochs=1", "batch_size=4", "check_sync=true",
                           "num_workers=1"],
                          capture_output=True, text=True, timeout=180, env=clean_environ(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["final"]["train_samples"] == 50 and summary["result"]["in_sync"] is True
    log = (Path(summary["job_dir"]) / "logs" / "local-rank0.out").read_text()
    assert "DataLoader, 1 worker(s) per rank" in log
