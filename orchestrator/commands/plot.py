"""``orch plot JOB [JOB ...]``: a run's curves drawn to a PNG; several runs (or a sweep) overlaid.

With ``steps.jsonl`` (the shared entrypoint's per-step scalars): one panel per scalar over the global
optimizer step, a smoothed line with the raw points faint, the epochs' evaluation metrics as markers
and, for one run, the epoch ends as dotted lines. Without it (older runs, scripts): loss and the task's
metrics per epoch from ``metrics.jsonl``. Several runs: one colour per run, labelled by the parameters
that differ between them (a sweep's folder or array id stands for its elements).
"""

from __future__ import annotations

import argparse
import io
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.errors import ConfigError, OrchError
from orchestrator.service import curves
from orchestrator.service.curves import OVERLAY_FILE, PLOT_FILE, Run
from orchestrator.spec.numbers import to_float
from orchestrator.spec.runconfig import METRICS_FILE

log = logging.getLogger(__name__)

TITLES: dict[str, str] = {"loss": "loss", "acc": "accuracy"}  # metric name -> panel title (others: the name)
SPLITS = ("train", "test")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("jobs", nargs="+", metavar="JOBID|DIR",
                        help="Slurm job ids or job folders; a sweep's folder or array id overlays its elements")
    parser.add_argument("-o", "--output", metavar="PNG",
                        help=f"where to write (default: <job folder>/{PLOT_FILE}; several runs: <sweep folder>/"
                             f"{PLOT_FILE} or ./{OVERLAY_FILE}); in a job folder the file is 0600 whatever the "
                             "umask, elsewhere it follows your umask")
    parser.add_argument("--epochs", action="store_true", help="per epoch from metrics.jsonl, even with per-step data")
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


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OrchError("matplotlib is not installed",
                        hint="pip install 'orch[plot]' (or matplotlib)") from None
    return plt


def draw(epochs: Sequence[float], panels: dict[str, dict[str, list[float]]], title: str, out: Path) -> None:
    """Write the PNG of one run per epoch (matplotlib, Agg backend, imported only here)."""
    plt = _pyplot()
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
    try:
        save(fig, out)
    finally:
        plt.close(fig)


def save(fig: Any, out: Path) -> None:
    """Write ``fig`` to exactly ``out`` (the format of its suffix, PNG without one): ``0600`` inside a job
    folder whatever the umask, elsewhere the user's umask (:func:`orchestrator.service.curves.write_plot`)."""
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, dpi=100, format=out.suffix[1:].lower() or "png")
    except ValueError as exc:  # matplotlib: Format 'xyz' is not supported (supported formats: ...)
        raise ConfigError(f"-o {out}: {exc}", hint="name a .png file (or .svg, .pdf)") from None
    curves.write_plot(out, buffer.getvalue())


def smooth(values: Sequence[float], weight: float) -> list[float]:
    """TensorBoard's smoothing: an exponential moving average with its start debiased."""
    out, last, norm = [], 0.0, 0.0
    for value in values:
        last, norm = last * weight + value, norm * weight + 1.0
        out.append(last / norm)
    return out


def step_panels(runs: Sequence[Run]) -> list[str]:
    """The scalars to draw, in a stable order: train/* first (loss first), then the epochs' metrics."""
    keys = {k for run in runs for k in run.steps}
    train = sorted((k for k in keys if k.startswith("train/")), key=lambda k: (k != "train/loss", k))
    return train + sorted(k for k in keys if not k.startswith("train/"))


def step_figure(runs: Sequence[Run], title: str) -> Any:
    """The figure of per-step curves: one panel per scalar, one colour per run (pure but for matplotlib)."""
    plt = _pyplot()
    panels = step_panels(runs)
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, key in zip(axes.flat, panels, strict=False):
        for index, run in enumerate(runs):
            if key not in run.steps:
                continue
            steps, values = run.steps[key]
            colour = colours[index % len(colours)]
            if key.startswith("epoch/"):  # a point per epoch
                ax.plot(steps, values, marker="o", color=colour, label=run.label)
                continue
            ax.plot(steps, values, color=colour, alpha=0.25, linewidth=0.8, label=f"_raw {run.label}")
            weight = 0.6 if len(values) < 50 else 0.9
            ax.plot(steps, smooth(values, weight), color=colour, linewidth=1.6, label=run.label)
        if len(runs) == 1:
            for record in runs[0].epochs[:-1]:  # the epoch ends (the last one is the end of the plot)
                if isinstance(record.get("global_step"), int):
                    ax.axvline(record["global_step"], color="grey", linestyle=":", linewidth=0.8)
        ax.set_title(key)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if len(runs) > 1:
            ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def epoch_overlay_figure(runs: Sequence[Run], title: str) -> Any:
    """Several runs without per-step data: their per-epoch curves, one colour per run."""
    plt = _pyplot()
    panel_data = [series(run.epochs) for run in runs]
    names = list(dict.fromkeys(p for _, panels in panel_data for p in panels))
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.8), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for run, (epochs, panels) in zip(runs, panel_data, strict=True):
            for key, values in panels.get(name, {}).items():
                ax.plot(epochs, values, marker="o", label=f"{run.label} {key}")
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def figure_lines(fig: Any) -> dict[str, list[str]]:
    """Each panel's labelled lines (the raw, faint ones are not labelled): what ``--json`` reports."""
    return {ax.get_title(): [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
            for ax in fig.axes if ax.get_visible()}


def run(args: argparse.Namespace) -> int:
    runs = curves.runs(args.jobs, scope(args))
    if len(runs) == 1 and (args.epochs or not runs[0].steps):
        return _one_per_epoch(args, runs[0])
    if any(not (run.steps or run.epochs) for run in runs):
        empty = next(run for run in runs if not (run.steps or run.epochs))
        raise OrchError(f"{empty.job.path} has no per-step or per-epoch records yet",
                        hint="rank 0 writes steps.jsonl every log_every steps and metrics.jsonl after each epoch")
    out = curves.plot_path(args.output, runs)
    title = runs[0].job.name if len({r.job.name for r in runs}) == 1 else "runs"
    per_step = not args.epochs and all(run.steps for run in runs)
    fig = step_figure(runs, title) if per_step else epoch_overlay_figure(runs, title)
    lines = figure_lines(fig)
    try:
        save(fig, out)
    finally:
        _pyplot().close(fig)
    if args.json:
        print_json({"plot": str(out), "x": "step" if per_step else "epoch", "runs": [r.label for r in runs],
                    "jobs": [str(r.job.path) for r in runs], "panels": lines})
    else:
        print(out)
    return 0


def _one_per_epoch(args: argparse.Namespace, run: Run) -> int:
    job, records = run.job, run.records  # metrics.jsonl read once (its damaged lines warned once)
    if not records:
        raise OrchError(f"{job.path / METRICS_FILE} has no records yet",
                        hint="rank 0 appends one line per finished epoch; wait for the first epoch")
    epochs, panels = series(records)
    out = curves.plot_path(args.output, [run])
    title = f"{job.name} (job {job.job_id})" if job.job_id else job.name
    draw(epochs, panels, title, out)
    if args.json:
        metrics = sorted(m for p in panels.values() for m in p)
        print_json({"plot": str(out), "epochs": len(epochs), "metrics": metrics})
    else:
        print(out)
    return 0
