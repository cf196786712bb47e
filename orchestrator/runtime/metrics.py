"""Per-epoch metrics: one line printed by rank 0, one JSON object per epoch in ``metrics.jsonl``,
and ``result.json`` at the end. No torch here: the numbers arrive already reduced over ranks."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EpochMetrics:
    epoch: int  # 1-based
    epochs: int
    train_loss: float
    train_acc: float  # fraction in [0, 1]
    test_loss: float | None
    test_acc: float | None
    samples_per_s: float  # training samples (all ranks, padding excluded) per second of training
    seconds: float  # wall time of the epoch: training and evaluation
    world_size: int
    train_samples: int
    steps: int  # optimizer steps of this epoch (per rank)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        width = len(str(self.epochs))
        text = (f"epoch {self.epoch:>{width}}/{self.epochs}  train loss {self.train_loss:.4f} "
                f"acc {self.train_acc * 100:6.2f}%")
        if self.test_loss is not None and self.test_acc is not None:
            text += f"  test loss {self.test_loss:.4f} acc {self.test_acc * 100:6.2f}%"
        return text + f"  {self.samples_per_s:,.0f} samples/s  {self.seconds:.1f} s"


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


class MetricsLog:
    """``metrics.jsonl``: exactly one object per completed epoch, also across resumes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        entries = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line torn by a kill mid-write; the epoch is rerun and logged again
            if isinstance(entry, dict) and isinstance(entry.get("epoch"), int):
                entries.append(entry)
        return entries

    def trim(self, completed_epochs: int) -> None:
        """Drop entries after the resumed checkpoint (those epochs run again and log again)."""
        if self.path.exists():
            kept = [e for e in self.read() if e["epoch"] <= completed_epochs]
            write_text_atomic(self.path, "".join(json.dumps(e) + "\n" for e in kept))

    def append(self, metrics: EpochMetrics) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(metrics.as_dict()) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".tmp-{path.name}.{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    write_text_atomic(path, json.dumps(dict(data), indent=2, sort_keys=True) + "\n")
