"""``orch clusters [--json]``: the cluster files orch can use, whether each is reachable, its partitions.

The files: ``./cluster.yaml`` and every ``NAME.yaml`` in ``$XDG_CONFIG_HOME/orch/clusters``
(``~/.config/orch/clusters``), picked with ``--cluster NAME`` or ``ORCH_CLUSTER=NAME``; the one a
verb would use without ``--cluster`` is marked. Reachable, for a cluster on this machine: Slurm's
commands are installed and its controller answers ``scontrol ping`` (asked once for every file: they all
reach the controller of this machine's Slurm configuration; :mod:`orchestrator.service.clusters`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from orchestrator.commands._common import add_json_argument, print_json
from orchestrator.errors import OrchError
from orchestrator.service.clusters import describe, init


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("init",), metavar="init",
                        help="init NAME: write ~/.config/orch/clusters/NAME.yaml from the cluster you are on (sinfo: "
                             "partitions, nodes, GPUs, CPUs, memory, time limits)")
    parser.add_argument("name", nargs="?", metavar="NAME", help="with init: the cluster file's name")
    parser.add_argument("--force", action="store_true", help="with init: replace an existing NAME.yaml")
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    from orchestrator.spec.clusterfiles import clusters_dir

    if args.action == "init":
        path = init(args.name, force=args.force, environ=os.environ)
        if args.json:
            print_json({"file": str(path), "name": args.name})
        else:
            print(f"wrote {path}\n# check it: orch submit smoke --cluster {args.name} --dry-run (then add "
                  "defaults, env and launcher settings: docs/cluster-yaml.md)")
        return 0
    rows = describe(os.environ, Path.cwd())
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        raise OrchError("no cluster files: no ./cluster.yaml here and none in "
                        f"{clusters_dir(os.environ) or '~/.config/orch/clusters'}",
                        hint="copy a cluster.yaml to ~/.config/orch/clusters/NAME.yaml, then use --cluster NAME")
    width = max(len("CLUSTER"), *(len(r["pick"]) + 2 for r in rows))
    print(f"{'CLUSTER':<{width}}  {'NAME':<16}  {'REACHABLE':<9}  {'PARTITIONS':<24}  FILE")
    for r in rows:
        pick = r["pick"] + (" *" if r["default"] else "")
        parts = ",".join(r["partitions"]) or "-"
        print(f"{pick:<{width}}  {r['name'] or '-':<16}  {'yes' if r['reachable'] else 'no':<9}  {parts:<24}  "
              f"{r['file']}")
    reasons = dict.fromkeys(r["reason"] for r in rows if r["reason"])
    for reason in reasons:
        print(f"# {reason}")
    if any(r["default"] for r in rows):
        print("# *: used when --cluster and $ORCH_CLUSTER are not given")
    return 0
