"""``orch nodes``: the nodes recorded as bad on this cluster (``<job root>/bad_nodes.jsonl``) that
``orch submit`` leaves out, and ``--forget NODE`` / ``--all`` to use them again. No Slurm needed."""

from __future__ import annotations

import argparse
import time

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.service.jobs import cluster_or_none
from orchestrator.service.nodes import forget, recorded


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--forget", metavar="NODE", help="forget one node: orch submit uses it again")
    which.add_argument("--all", action="store_true", help="forget every node recorded as bad")
    add_cluster_argument(parser)
    add_json_argument(parser)


def _ago(seconds: float) -> str:
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours} h {rest // 60} min ago" if hours else f"{rest // 60} min ago"


def run(args: argparse.Namespace) -> int:
    cluster = cluster_or_none(scope(args))
    if args.forget or args.all:
        gone = forget(cluster, None if args.all else args.forget)
        if args.json:
            print_json({"forgotten": gone})
        else:
            print(f"forgot {len(gone)} node(s){': ' + ', '.join(gone) if gone else ''}; orch submit uses "
                  f"{'them' if len(gone) != 1 else 'it'} again")
        return 0
    now = time.time()
    found = recorded(cluster, now)
    if args.json:
        print_json(found.as_dict())
        return 0
    ttl, nodes = found.ttl_s, found.nodes
    if not nodes:
        print(f"no node is recorded as bad within launcher.bad_node_ttl ({ttl} s) in {found.file}")
        return 0
    rows = [("NODE", "EVIDENCE", "JOB", "RECORDED", "COUNT", "REASON")]
    rows += [(n.node, n.kind, n.job_id, f"{n.time} ({_ago(now - n.ts)})", str(n.count), n.reason) for n in nodes]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for row in rows:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(row[:5], widths, strict=True)) + "  " + row[5])
    print(f"orch submit leaves these out for launcher.bad_node_ttl ({ttl} s) after their last record; "
          "orch nodes --forget NODE (or --all) uses them again")
    return 0
