"""``orch hosts EXPR``: expand a Slurm hostlist like ``scontrol show hostnames`` (no Slurm needed)."""

from __future__ import annotations

import argparse
import sys

from orchestrator.commands._common import add_json_argument, print_json
from orchestrator.env.hostlist import compress, expand_all
from orchestrator.errors import ConfigError

MAX_INPUT = 16 * 1024 * 1024  # what orch hosts reads from stdin, at most


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exprs", nargs="*", metavar="EXPR",
                        help="hostlist such as 'gpu[01-04],cpu7' (default: read it from stdin)")
    parser.add_argument("--compress", action="store_true",
                        help="the other way round: host names (commas, spaces or lines) -> one hostlist, "
                             "like 'scontrol show hostlist'")
    add_json_argument(parser)


def run(args: argparse.Namespace) -> int:
    exprs: list[str] = list(args.exprs)
    if not exprs:
        if sys.stdin is None or sys.stdin.isatty():
            raise ConfigError("no hostlist given",
                              hint="pass one, e.g. orch hosts 'node[1-4]', or pipe it: "
                                   "echo \"$SLURM_JOB_NODELIST\" | orch hosts")
        text = sys.stdin.read(MAX_INPUT + 1)
        if len(text) > MAX_INPUT:
            raise ConfigError(f"the hostlist on stdin is longer than {MAX_INPUT:,} characters",
                              hint="pass a Slurm nodelist, e.g. echo \"$SLURM_JOB_NODELIST\" | orch hosts")
        exprs = [text]
    hosts = expand_all(exprs)  # the host caps hold for the whole call, not per expression
    if args.compress:
        ranged = compress(hosts)
        if args.json:
            print_json(ranged)
        else:
            print(ranged)
    elif args.json:
        print_json(hosts)
    elif hosts:
        sys.stdout.write("\n".join(hosts) + "\n")
    return 0
