"""``orch plot JOBID|DIR``: loss and the task's metrics per epoch from metrics.jsonl, drawn to a PNG."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json
from orchestrator.commands._jobs import job_root_from_args
from orchestrator.errors import OrchError
from orchestrator.records.jobdirs import find_job_dir
from orchestrator.records.training import read_metrics
from orchestrator.spec.numbers import to_float
from orchestrator.spec.runconfig import METRICS_FILE

log = logging.getLogger(__name__)

PLOT_FILE = "metrics.png"
TITLES: dict[str, str] = {"loss": "loss", "acc": "accuracy"}  # metric name -> panel title (others: the name)
SPLITS = ("train", "test")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOBID|DIR", help="Slurm job id or job folder")
    parser.add_argument("-o", "--output", metavar="PNG",
                        help=f"where to write (default: <job folder>/{PLOT_FILE})")
    add_cluster_argument(parser)
    add_json_argument(parser)


def metric_names(records: Sequence[dict[str, Any]]) -> list[str]:
    """The loss and the task's metrics: each record's ``metrics`` list (records written before it
    existed: accuracy when there are ``*_acc`` keys)."""
    names = ["loss"]
    for record in records:
        listed = record.get("metrics")
        found = listed if isinstance(listed, list) else ["acc"] if any(
            f"{split}_acc" in record for split in SPLITS) else []
        names += [n for n in found if isinstance(n, str) and n not in names]
    return names


def series(records: Sequence[dict[str, Any]]) -> tuple[list[float], dict[str, dict[str, list[float]]]]:
    """Epochs and, per panel (one per metric), the train and test values (pure). Epoch numbers come
    from the ``epoch`` key when present (a resumed run may repeat one: the last record of an epoch wins)."""
    by_epoch: dict[float, dict[str, Any]] = {}
    for index, record in enumerate(records):
        epoch = to_float(record.get("epoch", index))
        if epoch is not None:
            by_epoch[epoch] = record
    epochs = sorted(by_epoch)
    panels: dict[str, dict[str, list[float]]] = {}
    for name in metric_names(list(by_epoch.values())):
        keys = [f"{split}_{name}" for split in SPLITS
                if any(_is_number(r.get(f"{split}_{name}")) for r in by_epoch.values())]
        panels[TITLES.get(name, name)] = {key: [_value(by_epoch[e].get(key)) for e in epochs] for key in keys}
    return epochs, panels


def _value(value: Any) -> float:
    """A number to draw; a missing value (no evaluation that epoch) leaves a gap."""
    number = to_float(value)
    return number if number is not None else float("nan")


def _is_number(value: Any) -> bool:
    return to_float(value) is not None


def draw(epochs: Sequence[float], panels: dict[str, dict[str, list[float]]], title: str, out: Path) -> None:
    """Write the PNG (matplotlib, Agg backend, imported only here)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OrchError("matplotlib is not installed",
                        hint="pip install 'orch[plot]' (or matplotlib)") from None
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
    for ax, (panel, metrics) in zip(axes[0], panels.items(), strict=True):
        for name, values in metrics.items():
            ax.plot(epochs, values, marker="o", label=name)
        ax.set_xlabel("epoch")
        ax.set_title(panel)
        if metrics:
            ax.legend()
        else:
            ax.text(0.5, 0.5, f"no {panel} metric", ha="center", va="center", transform=ax.transAxes)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    job = find_job_dir(args.job, job_root_from_args(args))
    records = read_metrics(job.path)
    if not records:
        raise OrchError(f"{job.path / METRICS_FILE} has no records yet",
                        hint="rank 0 appends one line per finished epoch; wait for the first epoch")
    epochs, panels = series(records)
    out = Path(args.output).expanduser() if args.output else job.path / PLOT_FILE
    title = f"{job.name} (job {job.job_id})" if job.job_id else job.name
    try:
        draw(epochs, panels, title, out)
    except OSError as exc:
        raise OrchError(f"cannot write the plot {out}: {exc.strerror or type(exc).__name__}",
                        hint="pass -o PNG in a folder you can write (the job folder may be read-only)") from None
    if args.json:
        metrics = sorted(m for p in panels.values() for m in p)
        print_json({"plot": str(out), "epochs": len(epochs), "metrics": metrics})
    else:
        print(out)
    return 0
