"""The runs ``orch plot``, ``orch compare`` and ``orch tb`` read: the job folders named (a sweep's folder or array
id stands for its elements), their curves loaded (:mod:`orchestrator.records.curves`), where a plot goes and its
file written, and the TensorBoard log directories of the runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator.errors import ConfigError, OrchError
from orchestrator.records.curves import Run, expand, final_row, load_runs
from orchestrator.records.joblayout import ARRAY_FILE
from orchestrator.records.logs.outfiles import write_output
from orchestrator.service.jobs import Scope, job_root_of
from orchestrator.spec.tracking import TB_DIR

__all__ = ["OVERLAY_FILE", "PLOT_FILE", "Run", "final_rows", "plot_path", "runs", "tensorboard_logdir", "write_plot"]

PLOT_FILE = "metrics.png"
OVERLAY_FILE = "orch-plot.png"


def runs(refs: Sequence[str], scope: Scope) -> list[Run]:
    """The runs of ``refs`` (job ids or folders; a sweep: its elements), their records and per-step curves read."""
    return load_runs(expand(refs, job_root_of(scope)))


def final_rows(refs: Sequence[str], scope: Scope) -> list[dict[str, Any]]:
    """``orch compare``'s rows: each run's label, its last epoch and that epoch's metrics, in the runs' order."""
    return [final_row(run) for run in runs(refs, scope)]


def plot_path(output: str | None, shown: Sequence[Run]) -> Path:
    """Where the plot of ``shown`` goes: ``output`` (``-o``) when given; one run: its folder's ``metrics.png``; a
    sweep's elements: the sweep folder's; other runs: ``./orch-plot.png``."""
    if output:
        return Path(output).expanduser()
    if len(shown) == 1:
        return shown[0].job.path / PLOT_FILE
    parents = {run.job.path.parent for run in shown}
    if len(parents) == 1 and (next(iter(parents)) / ARRAY_FILE).is_file():
        return next(iter(parents)) / PLOT_FILE
    return Path.cwd() / OVERLAY_FILE


def write_plot(out: Path, data: bytes) -> None:
    """Write the rendered plot to exactly ``out``: ``0600`` inside a job folder whatever the umask, elsewhere the
    user's umask (records/logs/outfiles.py, docs/trust.md)."""
    try:
        write_output(out, data)
    except OSError as exc:
        raise OrchError(f"cannot write the plot {out}: {exc.strerror or type(exc).__name__}",
                        hint="pass -o PNG in a folder you can write (the job folder may be read-only)") from None


def tensorboard_logdir(refs: Sequence[str], scope: Scope, *, every: bool = False) -> list[str]:
    """TensorBoard's log directory arguments for the runs of ``refs`` (``every``: the whole job root, where
    TensorBoard finds every ``tb/``): ``--logdir`` for one folder, ``--logdir_spec`` with one name per run."""
    if every:
        return ["--logdir", str(job_root_of(scope))]
    jobs = expand(refs, job_root_of(scope))
    dirs = [job.path / TB_DIR for job in jobs]
    missing = [d for d in dirs if not d.is_dir()]
    if missing:
        raise ConfigError(f"{missing[0]} does not exist: no TensorBoard events there",
                          hint="the shared entrypoint's rank 0 writes them from its first logged step; a script "
                               "writes its own (SummaryWriter(os.environ['ORCH_JOB_DIR'] + '/tb'))")
    if len(dirs) == 1:
        return ["--logdir", str(dirs[0])]
    names = [job.job_id or job.path.name for job in jobs]
    if any(c in str(d) + n for d, n in zip(dirs, names, strict=True) for c in ",:"):
        raise ConfigError("a job folder's path holds ',' or ':', which TensorBoard's --logdir_spec cannot take",
                          hint="start TensorBoard on each folder's tb/ with --logdir")
    spec = ",".join(f"{n}:{d}" for n, d in zip(names, dirs, strict=True))
    return ["--logdir_spec", spec]
