"""``orch clean [--dry-run] [--json]``: remove the code snapshots no job folder refers to any more.

Looks in ``launcher.job_root`` of the cluster file in use (``--cluster``) for ``.snapshots/``; a
snapshot stays while a job folder's ``job.json`` names it (:mod:`orchestrator.service.snapshots`).
"""

from __future__ import annotations

import argparse

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.service.snapshots import clean
from orchestrator.spec.snapshot import human_size


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed; remove nothing")
    add_cluster_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    done = clean(scope(args), dry_run=args.dry_run)
    if args.json:
        print_json(done.as_dict())
        return 0
    report, root = done.report, done.job_root
    verb = "would remove" if args.dry_run else "removed"
    for digest in report.removed:
        print(f"{verb} snapshot {digest[:12]}")
    print(f"orch clean: {verb} {len(report.removed)} snapshot(s) and {report.objects} stored file(s) "
          f"({human_size(report.freed)}) under {root}/.snapshots; kept {len(report.kept)} in use")
    return 0
