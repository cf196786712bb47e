"""DDP004's fix: ``sampler.set_epoch(epoch)`` first in the epoch loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixcheck import fixed_by_cli

HEAD = '''import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def train(data, model, epochs):
    dist.init_process_group("gloo")
'''


def test_a_named_sampler_is_told_the_epoch_first_in_the_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = HEAD + '''    sampler = DistributedSampler(data)   # shuffles  (two spaces kept)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    for epoch in range(epochs):
        # one pass
        for x, y in loader:
            model(x).sum().backward()
'''
    fixed = fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP004", [],
                         ["        sampler.set_epoch(epoch)"])
    assert "range(epochs):\n        sampler.set_epoch(epoch)\n        # one pass\n        for x, y in loader:" in fixed


def test_a_sampler_made_inside_the_loader_is_reached_through_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = HEAD + '''    loader = DataLoader(
        data,
        batch_size=8,
        sampler=DistributedSampler(data, shuffle=True),
    )
    for ep in range(epochs):
        for x, y in loader:
            model(x).sum().backward()
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP004", [], ["        loader.sampler.set_epoch(ep)"])


def test_a_sampler_with_no_epoch_loop_in_its_function_is_left_and_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from support import run_cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(HEAD + '''    sampler = DistributedSampler(data)
    return DataLoader(data, sampler=sampler)
''', encoding="utf-8")
    rc, out, err = run_cli(["doctor", "train.py", "--fix"], capsys)
    assert (rc, out) == (0, "")
    assert "train.py:8: DDP004 not fixed" in err and "nothing to fix" in err


def test_a_sampler_made_only_when_distributed_is_told_the_epoch_only_when_it_is_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = HEAD + '''    sampler = DistributedSampler(data) if dist.is_initialized() else None
    loader = DataLoader(data, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            model(x).sum().backward()
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP004", [],
                 ["        if isinstance(sampler, DistributedSampler):", "            sampler.set_epoch(epoch)"])


def test_a_sampler_assigned_with_other_names_in_one_tuple_is_found_by_its_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = HEAD + '''    train_sampler, shuffle = DistributedSampler(data), False
    loader = DataLoader(data, sampler=train_sampler, shuffle=shuffle)
    for epoch in range(epochs):
        for x, y in loader:
            model(x).sum().backward()
'''
    fixed_by_cli(tmp_path, monkeypatch, capsys, text, "DDP004", [], ["        train_sampler.set_epoch(epoch)"])
