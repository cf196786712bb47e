"""Helpers shared by the verbs: the arguments several verbs take (built from the one table of options,
:mod:`orchestrator.spec.options`), cluster discovery from args, JSON output."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from orchestrator.service.jobs import Scope
from orchestrator.spec.options import BY_NAME, EXEC, GROUPS, JOB_HELP, SUBMIT, Option, options_of


def add_options(parser: argparse.ArgumentParser, verb: str, *, only: tuple[str, ...] = ()) -> None:
    """The options ``verb`` takes (``only``: these alone), as the table declares them
    (:mod:`orchestrator.spec.options`), in its order: orch submit's in their --help sections."""
    groups: dict[str, Any] = {}
    later: dict[str, list[Option]] = {}
    added: list[str] = []
    for option in options_of(verb):
        if only and option.name not in only:
            continue
        after = option.after(verb)
        if after is not None:
            later.setdefault(after, []).append(option)
            continue
        for one in (option, *later.pop(option.name, [])):
            group = one.group if verb == SUBMIT else None
            if group is not None and group not in groups:
                groups[group] = parser.add_argument_group(GROUPS[group])
            add_option(groups[group] if group is not None else parser, one, verb)
            added.append(one.name)
    if "job" in added:
        parser.set_defaults(takes_script_args=True)  # a script's own arguments after -- (cli.py)


def add_option(parser: Any, option: Option, verb: str) -> None:
    """One option's argparse argument(s) (``parser``: a parser or one of its groups)."""
    help_text = option.help_for(verb)
    if option.switches:
        group = parser.add_mutually_exclusive_group()
        for switch in option.switches:
            group.add_argument(switch.flag, dest=option.key, action="store_const", const=switch.const,
                               help=switch.help)
        return
    if not option.flags:
        return  # a keyword only (script_args: what follows --, cli.py's)
    flag = option.flags[0]
    if not flag.startswith("-"):  # a positional
        parser.add_argument(option.key, nargs=option.nargs, metavar=option.metavar, help=help_text)
        return
    extra: dict[str, Any] = {}
    if option.kind == "flag":
        extra.update(action="store_true", default=option.default)
    elif option.kind == "list":
        extra.update(action="append", default=[], metavar=option.metavar)
    else:
        extra.update(metavar=option.metavar)
        if option.kind == "int":
            extra["type"] = int
        if option.nargs is not None:
            extra.update(nargs=option.nargs, const=option.const)
        if option.choices is not None:
            extra["choices"] = option.choices
        if option.default is not None:
            extra["default"] = option.default
    parser.add_argument(*option.flags, dest=option.key, help=help_text, **extra)


EXEC_OWN = ("cluster", "job_root")  # orch exec's options that commands/exec_script.py adds after the job's


def add_job_arguments(parser: argparse.ArgumentParser, *, example: str) -> None:
    """What to run, as ``orch submit``, ``orch run`` and ``orch exec`` take it: JOB or ``-m MODULE``, then
    ``key=value`` overrides (a script's own arguments come after ``--``), ``--data-dir``, ``--no-check``,
    ``--ignore``, ``--launch`` and ``--track`` (``example``: the jobs the JOB help names); orch exec adds its
    ``--cluster`` and ``--job-root`` after them (:data:`EXEC_OWN`)."""
    add_options(parser, EXEC, only=tuple(o.name for o in options_of(EXEC) if o.name not in EXEC_OWN))
    for action in parser._actions:
        if action.dest == "job":
            action.help = JOB_HELP.format(example)


def add_ignore_argument(parser: argparse.ArgumentParser) -> None:
    add_option(parser, BY_NAME["ignore"], SUBMIT)


def add_cluster_argument(parser: argparse.ArgumentParser) -> None:
    add_option(parser, BY_NAME["cluster"], SUBMIT)


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    add_option(parser, BY_NAME["json"], SUBMIT)


# run's per-job launcher settings -> their flags (orch submit checks them in its request, naming the flag too)
LAUNCHER_FLAGS = {name: BY_NAME[name].flags[0] for name in ("max_restarts", "collective_timeout")}


def check_launcher_flags(args: argparse.Namespace) -> None:
    """Each launcher setting given as a flag within its bound (ConfigError naming the flag), before anything starts."""
    from orchestrator.errors import ConfigError
    from orchestrator.spec.bounds import check

    for dest, flag in LAUNCHER_FLAGS.items():
        try:
            check(dest, getattr(args, dest, None))
        except ValueError as exc:
            raise ConfigError(f"{flag} {exc}", hint=f"pass {flag} within the bound, or leave it out for "
                              f"launcher.{dest} of cluster.yaml") from None


def restarts_note(max_restarts: int, spare_nodes: int = 0, how: str | None = None) -> str:
    """The dry run's lines on restarts inside the allocation (empty when they are off); ``how``: in-process or by
    step, in words (the service's ``restarts_of``)."""
    if max_restarts == 0:
        return ""
    spares = (f"; {spare_nodes} spare node(s) allocated: a restart runs without a blamed node"
              if spare_nodes else "; a failure blamed on a node: the job is submitted again without it")
    return (f"# restarts: a failed training step is restarted up to {max_restarts} time(s) in the allocation "
            f"from the newest checkpoint (attempts.json){spares}\n" + (f"#   restart: {how}\n" if how else ""))


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def scope(args: argparse.Namespace) -> Scope:
    """Which cluster file a follow-up verb reads (the service's :class:`~orchestrator.service.jobs.Scope`)."""
    return Scope(getattr(args, "cluster", None))
