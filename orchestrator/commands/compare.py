"""``orch compare JOB [JOB ...]|SWEEP [--sort METRIC] [--json]``: the final metrics of several runs in one
table, best first.

Each row is one run: its label (the parameters that differ between the runs), its last epoch and that
epoch's metrics (``result.json``'s ``final`` once the run completed, else the last ``metrics.jsonl``
record). ``--sort`` picks the column (default ``test_acc`` when the runs have it, else ``test_loss``,
else ``train_loss``); a loss or an error sorts lowest first, any other metric highest first (``--reverse``
turns it round); runs without that metric come last.
"""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.errors import ConfigError
from orchestrator.service.curves import final_rows

LOWER_IS_BETTER = ("loss", "mae", "mse", "rmse", "err", "error", "perplexity", "ppl")
DEFAULT_SORT = ("test_acc", "test_loss", "train_loss")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("jobs", nargs="+", metavar="JOBID|DIR",
                        help="Slurm job ids or job folders; a sweep's folder or array id stands for its elements")
    parser.add_argument("--sort", metavar="METRIC", help="the column to sort by (e.g. test_acc, test_loss)")
    parser.add_argument("--reverse", action="store_true", help="the other order than the metric's best-first")
    add_cluster_argument(parser)
    add_json_argument(parser)


def lower_is_better(metric: str) -> bool:
    return metric.rsplit("_", 1)[-1].lower() in LOWER_IS_BETTER


def sort_rows(rows: list[dict[str, Any]], metric: str, reverse: bool = False) -> list[dict[str, Any]]:
    """Best first by ``metric``; rows without it last, in their order (pure)."""
    have = [r for r in rows if metric in r["metrics"]]
    missing = [r for r in rows if metric not in r["metrics"]]
    descending = not lower_is_better(metric)
    have.sort(key=lambda r: float(r["metrics"][metric]), reverse=descending != reverse)
    return have + missing


def table(rows: list[dict[str, Any]], metric: str) -> str:
    names = [metric, *sorted({k for r in rows for k in r["metrics"]} - {metric})]
    header = ["JOB", "RUN", "EPOCH", *[n.upper() for n in names], "DONE"]
    body = [[r["job_id"] or r["job"], r["label"], str(r["epoch"] if r["epoch"] is not None else "-"),
             *[_cell(r["metrics"].get(n)) for n in names], "yes" if r["completed"] else "no"] for r in rows]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *body])


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def run(args: argparse.Namespace) -> int:
    rows = final_rows(args.jobs, scope(args))
    present = {k for r in rows for k in r["metrics"]}
    metric = args.sort or next((m for m in DEFAULT_SORT if m in present), None)
    if metric is None:
        raise ConfigError("none of these runs has finished an epoch yet", hint="wait for the first epoch's metrics")
    if metric not in present:
        raise ConfigError(f"--sort {metric}: no run has that metric",
                          hint=f"the runs have: {', '.join(sorted(present)) or 'no metrics yet'}")
    rows = sort_rows(rows, metric, args.reverse)
    if args.json:
        print_json({"sort": metric, "runs": rows})
    else:
        print(table(rows, metric))
    return 0
