"""The pieces of the Dataset path, in one process: sources, nested batches, metrics, schedules, progress."""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import Dataset, IterableDataset

from orchestrator.errors import ConfigError
from orchestrator.runtime.data import TensorData, batch_len, take, to_device
from orchestrator.runtime.loop import decode_nonfinite, nonfinite_code
from orchestrator.runtime.measures import Tally, TrainingError, accuracy, is_classification, means, task_metrics
from orchestrator.runtime.progress import Progress, eta_text, progress_line
from orchestrator.runtime.schedule import Schedule, make_schedule
from orchestrator.runtime.sources import (
    LoaderSource,
    TensorSource,
    batch_seed,
    check_dataset,
    default_workers,
    make_source,
)

CPU = torch.device("cpu")


class Noisy(Dataset[Any]):
    """Item i: ({"x": i + noise}, i); the noise comes from torch's global RNG (seeded per batch)."""

    def __len__(self) -> int:
        return 40

    def __getitem__(self, index: int) -> Any:
        return {"x": torch.full((3,), float(index)) + torch.randn(3)}, torch.tensor(index)


def collect(batches: Iterator[Any]) -> list[Any]:
    return [(inputs["x"].clone(), targets.clone()) for inputs, targets in batches]


def same(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    return all(torch.equal(x[0], y[0]) and torch.equal(x[1], y[1]) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("workers", [0, 2])
def test_loader_batches_resume_at_a_step_with_the_same_augmentation(workers: int) -> None:
    order = list(np.random.default_rng(0).permutation(40))
    source = LoaderSource(Noisy(), CPU, batch_size=6, eval_batch_size=16, num_workers=workers, seed=3, rank=1)
    full = collect(source.batches(order, epoch=2, start_step=0))
    assert [int(t.shape[0]) for _, t in full] == [6] * 6 + [4]
    assert [int(i) for _, t in full for i in t] == [int(i) for i in order]
    resumed = collect(source.batches(order, epoch=2, start_step=4))
    assert same(resumed, full[4:]), "a resumed epoch gets the very batches of the uninterrupted one"
    other_epoch = collect(source.batches(order, epoch=3, start_step=0))
    assert not torch.equal(other_epoch[0][0], full[0][0]), "the augmentation changes with the epoch"
    reference = LoaderSource(Noisy(), CPU, batch_size=6, eval_batch_size=16, num_workers=0, seed=3, rank=1)
    assert same(collect(reference.batches(order, epoch=2, start_step=0)), full), "any number of workers"


def test_workers_started_at_set_up_serve_every_later_pass_without_a_new_fork() -> None:
    """start_workers forks the persistent workers before training (no key to fetch yet); the passes
    after it resume those very processes and give the batches of a source started lazily."""
    order = list(np.random.default_rng(1).permutation(40))
    source = LoaderSource(Noisy(), CPU, batch_size=6, eval_batch_size=16, num_workers=2, seed=3, rank=0)
    source.start_workers(evaluation=False)
    source.start_workers(evaluation=True)
    pids = {name: [w.pid for w in getattr(source, name)._iterator._workers] for name in ("train_loader", "eval_loader")}
    assert all(len(found) == 2 for found in pids.values()), pids
    train = collect(source.batches(order, epoch=0, start_step=0))
    evaluated = collect(source.eval_batches(range(40)))
    again = collect(source.batches(order, epoch=1, start_step=0))
    assert pids == {name: [w.pid for w in getattr(source, name)._iterator._workers]
                    for name in ("train_loader", "eval_loader")}, "no worker was forked after set-up"
    lazy = LoaderSource(Noisy(), CPU, batch_size=6, eval_batch_size=16, num_workers=2, seed=3, rank=0)
    assert same(train, collect(lazy.batches(order, epoch=0, start_step=0)))
    assert same(evaluated, collect(lazy.eval_batches(range(40))))
    assert same(again, collect(lazy.batches(order, epoch=1, start_step=0)))
    assert [int(t.shape[0]) for _, t in evaluated] == [16, 16, 8]


def test_loader_in_the_main_process_leaves_the_training_rng_alone() -> None:
    source = LoaderSource(Noisy(), CPU, batch_size=8, eval_batch_size=8, num_workers=0, seed=0, rank=0)
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    expected = (torch.rand(2), random.random(), np.random.rand())
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    collect(source.batches(list(range(40)), epoch=0, start_step=0))
    collect(source.eval_batches(list(range(0, 40, 2))))
    assert torch.equal(torch.rand(2), expected[0]) and random.random() == expected[1]
    assert np.random.rand() == expected[2]


def test_first_batch_is_made_in_this_process_without_touching_the_rng() -> None:
    source = LoaderSource(Noisy(), CPU, batch_size=8, eval_batch_size=8, num_workers=2, seed=0, rank=0)
    torch.manual_seed(1)
    inputs, targets = source.first_batch(5)
    assert inputs["x"].shape == (5, 3) and targets.tolist() == [0, 1, 2, 3, 4]
    assert torch.equal(source.first_batch(5)[0]["x"], inputs["x"])
    assert torch.get_rng_state().equal(torch.manual_seed(1).get_state())


def test_tensor_source_gathers_the_order_from_a_step() -> None:
    data = TensorData(torch.arange(20.0).reshape(10, 2), torch.arange(10))
    source = make_source(data, CPU, batch_size=3, eval_batch_size=4, num_workers=2, seed=0, rank=0,
                         channels_last=False)
    assert isinstance(source, TensorSource)
    order = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert [t.tolist() for _, t in source.batches(order, epoch=0, start_step=2)] == [[3, 2, 1], [0]]
    assert [t.tolist() for _, t in source.eval_batches([0, 2, 4, 6, 8])] == [[0, 2, 4, 6], [8]]


def test_batch_seeds_differ_per_epoch_rank_and_step() -> None:
    seeds = {batch_seed(0, e, r, s) for e in range(4) for r in range(4) for s in range(50)}
    assert len(seeds) == 4 * 4 * 50 and all(0 <= s < 2**63 for s in seeds)
    assert batch_seed(1, 2, 3, 4) == batch_seed(1, 2, 3, 4)


def test_iterable_and_length_less_sets_are_refused() -> None:
    class Stream(IterableDataset[int]):
        def __iter__(self) -> Iterator[int]:
            return iter(range(3))

    with pytest.raises(ConfigError, match="train_set is an IterableDataset") as info:
        check_dataset(Stream(), "train_set", "job1")
    assert info.value.hint and "__getitem__" in info.value.hint
    with pytest.raises(ConfigError, match="no __len__"):
        check_dataset(object(), "test_set", "job1")
    with pytest.raises(ConfigError, match="is empty"):
        check_dataset(TensorData(torch.zeros(0, 2), torch.zeros(0)), "train_set", "job1")


def test_loader_refuses_items_that_are_not_pairs() -> None:
    class Triples(Dataset[Any]):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, index: int) -> Any:
            return torch.zeros(2), torch.zeros(()), torch.zeros(())

    source = LoaderSource(Triples(), CPU, batch_size=2, eval_batch_size=2, num_workers=0, seed=0, rank=0)
    with pytest.raises(ConfigError, match="not an \\(input, target\\) pair"):
        next(source.batches([0, 1, 2, 3], epoch=0, start_step=0))


def test_nested_batches() -> None:
    batch = ({"a": torch.zeros(5, 2), "b": [torch.ones(5), torch.ones(5, 3)]}, torch.arange(5))
    assert batch_len(batch) == 5
    cut = take(batch, 2)
    assert cut[0]["b"][1].shape == (2, 3) and cut[1].tolist() == [0, 1]
    moved = to_device(batch, CPU, channels_last=True)
    assert isinstance(moved[0]["b"], list) and torch.equal(moved[1], batch[1])
    with pytest.raises(ValueError, match="no tensor"):
        batch_len({"a": 1})
    assert default_workers(None, 1) == 0 and default_workers(None, 12) == 4 and default_workers(7, 1) == 7


@pytest.mark.parametrize(("outputs", "targets", "classification"), [
    (torch.zeros(4, 10), torch.zeros(4, dtype=torch.long), True),
    (torch.zeros(4, 10), torch.zeros(4, dtype=torch.int32), True),
    (torch.zeros(4, 1), torch.zeros(4, 1), False),  # regression
    (torch.zeros(4), torch.zeros(4), False),
    (torch.zeros(4, 10), torch.zeros(4), False),  # float targets
    (torch.zeros(4, 10), torch.zeros(4, dtype=torch.bool), False),
    (torch.zeros(4, 3, 8), torch.zeros(4, 8, dtype=torch.long), False),  # segmentation-like: no default
    ({"logits": torch.zeros(4, 10)}, torch.zeros(4, dtype=torch.long), False),
])
def test_accuracy_is_on_only_for_classification(outputs: Any, targets: Any, classification: bool) -> None:
    assert is_classification(outputs, targets) is classification
    assert list(task_metrics(None, outputs, targets)) == (["acc"] if classification else [])
    assert list(task_metrics({}, outputs, targets)) == []


def test_tally_sums_metrics_over_real_samples_only() -> None:
    def mae(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return (outputs - targets).abs().sum()

    metrics = {"acc": accuracy, "mae": lambda o, t: mae(o.argmax(dim=1).float(), t.float())}
    tally = Tally.zeros(CPU, list(metrics))
    outputs = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    targets = torch.tensor([1, 1, 1, 1])
    tally.add(torch.tensor(0.5), outputs, targets, 3, metrics)  # the 4th sample is padding
    summed = [float(v) for v in tally.values()]
    assert summed == [1.5, 2.0, 1.0, 3.0]
    assert means(list(metrics), summed, "train") == {"train_loss": 0.5, "train_acc": 2 / 3, "train_mae": 1 / 3}
    again = Tally.zeros(CPU, list(metrics))
    again.restore(tally.saved())
    assert [float(v) for v in again.values()] == summed
    with pytest.raises(TrainingError, match="2 metric sum\\(s\\); the task now has 1 metric\\(s\\) \\(acc\\)"):
        Tally.zeros(CPU, ["acc"]).restore(tally.saved())


def test_schedules() -> None:
    cosine = make_schedule("cosine", epochs=2, steps_per_epoch=10, warmup=4, step_epochs=1, gamma=0.1, lr=0.1,
                           lr_min=0.01)
    factors = [cosine.factor(s) for s in range(20)]
    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    assert all(a >= b for a, b in itertools.pairwise(factors[3:]))
    assert math.isclose(cosine.factor(20), 0.1) and factors[-1] > 0.1
    step = make_schedule("step", epochs=3, steps_per_epoch=5, warmup=0, step_epochs=1, gamma=0.5, lr=1, lr_min=0)
    assert [step.factor(s) for s in (0, 4, 5, 9, 10)] == [1.0, 1.0, 0.5, 0.5, 0.25]
    assert Schedule("constant", total=10).constant and not Schedule("constant", total=10, warmup=1).constant


def test_nonfinite_codes_pick_the_earliest_step() -> None:
    codes = [nonfinite_code(12, 3), nonfinite_code(7, 100), nonfinite_code(7, 2)]
    first = decode_nonfinite(max(codes), epoch=4)
    assert (first.epoch, first.step, first.rank) == (4, 7, 2)


def test_progress_lines_and_atomic_progress_json(tmp_path: Path) -> None:
    now = [100.0]
    progress = Progress(tmp_path / "progress.json", epochs=3, every=10.0, world_size=2, clock=lambda: now[0])
    progress.start_epoch(1, steps=100, start_step=20)
    lines = []
    for step in range(21, 101):
        now[0] += 0.5
        lines.append(progress.step(step, (step - 20) * 8, lambda: 0.25))
    shown = [line for line in lines if line]
    assert len(shown) == 4, shown  # every 10 s of 40 s
    assert shown[0] == progress_line(2, 3, 40, 100, 0.25, 20 * 8 * 2 / 10.0, 30.0)
    assert shown[0].startswith("epoch 2/3  step  40/100 (40%)  loss 0.2500  32 samples/s  ETA 0:30")
    record = json.loads((tmp_path / "progress.json").read_text())
    assert record["epoch"] == 2 and record["steps"] == 100 and record["loss"] == 0.25
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]
    assert eta_text(3725) == "1:02:05" and eta_text(-3) == "0:00"
