"""``orch cancel JOBID|DIR ...``: cancel jobs (or, with ``--signal``, only signal them); the acting is the
service's (:mod:`orchestrator.service.cancel`)."""

from __future__ import annotations

import argparse

from orchestrator.commands._common import add_cluster_argument, add_json_argument, print_json, scope
from orchestrator.service.cancel import cancel, unknown_error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("jobs", nargs="+", metavar="JOBID|DIR", help="Slurm job ids or job folders")
    parser.add_argument("--signal", metavar="SIG",
                        help="send SIG (e.g. USR2) to the batch shell and every task instead of cancelling")
    add_cluster_argument(parser)
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    done = cancel(args.jobs, scope(args), args.signal)
    verb = f"signalled ({args.signal})" if args.signal else "cancelled"
    if args.json:
        print_json(done)
    else:
        for chain in done.get("followed", {}).values():
            print(f"job {chain}")
        for job_id in done["acted"]:
            print(f"{verb} {job_id}")
        for job_id, state in done["finished"].items():
            print(f"{job_id} had already ended ({state})")
    if done["unknown"]:
        raise unknown_error(done["unknown"])
    return 0
