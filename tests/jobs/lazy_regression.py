"""Test-only job: regression on a lazy, file-backed Dataset (read through DataLoader workers).

``<data_dir>/lazy/{x,y}_{train,test}.npy`` (the test writes them) are opened with ``mmap_mode="r"``
in the process that reads them (a worker) and read one sample per ``__getitem__``. Items are
``({"x": features}, target)`` (a nested input); inputs get Gaussian noise from torch's RNG (seeded
per batch by the runtime), the model has dropout (the training RNG). Loss: MSE; metric: ``mae``
(sum of absolute errors), no accuracy.

Faults (off by default): ``nan`` (the model returns NaN at forward call ``fault_step`` on
``fault_rank``; call 0 is the runtime's bucket-settling pass), ``bad_metric`` (the metric returns a
vector), ``bad_shape`` (sample 100 has 5 features instead of 4), ``iterable`` (an IterableDataset).
``signal_step`` sends SIGUSR2 to every rank at that forward call, as Slurm would. ``slow_exit_rank``: on that
rank the bad metric's value holds an object that takes 4 s to free, as a DataLoader joining its workers does
while the rank leaves after the error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from orchestrator import JobSpec, TrainParams

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask

FEATURES = 4


class LazyParams(TrainParams):
    epochs: int = Field(default=3, ge=1)
    batch_size: int = 8
    lr: float = 0.05
    noise: float = 0.05
    fault: Literal["none", "nan", "bad_metric", "bad_shape", "iterable"] = "none"
    fault_rank: int = 1
    fault_step: int = 5
    signal_step: int | None = None
    slow_exit_rank: int | None = None


def write_data(folder: Any, train: int, test: int, seed: int = 0) -> None:
    """The files the job reads (used by the tests): y = x @ w + 0.5 plus a little noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(FEATURES, 1)).astype(np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", train), ("test", test)):
        x = rng.normal(size=(n, FEATURES)).astype(np.float32)
        y = (x @ weights + 0.5 + 0.01 * rng.normal(size=(n, 1))).astype(np.float32)
        np.save(folder / f"x_{split}.npy", x)
        np.save(folder / f"y_{split}.npy", y)


def build(params: LazyParams, ctx: BuildContext) -> TrainTask:
    import os
    import signal
    import time

    import numpy as np
    import torch
    from torch import nn
    from torch.utils.data import Dataset, IterableDataset

    from orchestrator import TrainTask

    folder = ctx.require_data_dir("lazy_regression") / "lazy"

    class Lazy(Dataset[Any]):
        def __init__(self, split: str, noise: float) -> None:
            self.paths = (folder / f"x_{split}.npy", folder / f"y_{split}.npy")
            self.noise = noise
            self.arrays: tuple[Any, Any] | None = None  # opened in the process that reads
            self.length = int(np.load(self.paths[1], mmap_mode="r").shape[0])

        def __len__(self) -> int:
            return self.length

        def __getitem__(self, index: int) -> Any:
            if self.arrays is None:
                self.arrays = (np.load(self.paths[0], mmap_mode="r"), np.load(self.paths[1], mmap_mode="r"))
            x = torch.from_numpy(np.array(self.arrays[0][index]))
            if params.fault == "bad_shape" and index == 100:
                x = torch.cat([x, x[:1]])
            if self.noise:
                x = x + self.noise * torch.randn(x.shape)
            return {"x": x}, torch.from_numpy(np.array(self.arrays[1][index]))

    class Stream(IterableDataset[Any]):
        def __iter__(self) -> Any:
            return iter([])

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1))
            self.calls = 0

        def forward(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
            out: torch.Tensor = self.body(inputs["x"])
            if self.training:
                step, self.calls = self.calls, self.calls + 1
                if step == params.signal_step:
                    os.kill(os.getpid(), signal.SIGUSR2)
                if params.fault == "nan" and step == params.fault_step and ctx.rank == params.fault_rank:
                    out = out * float("nan")
            return out

    class SlowToFree:
        def __del__(self) -> None:
            time.sleep(4)

    def mae(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        errors = (outputs - targets).abs()
        if params.fault == "bad_metric" and ctx.rank == params.slow_exit_rank:
            errors.held = SlowToFree()  # type: ignore[attr-defined]
        return errors if params.fault == "bad_metric" else errors.sum()

    train: Any = Stream() if params.fault == "iterable" else Lazy("train", params.noise)
    return TrainTask(model=Net(), train_set=train, test_set=Lazy("test", 0.0),
                     loss=nn.functional.mse_loss, metrics={"mae": mae})


SPEC = JobSpec(name="lazy_regression", params=LazyParams, build=build, needs_data=True,
               description="test-only: regression on a lazy file-backed Dataset with workers")
