"""Hints for options orch does not take: torchrun's names, and a script's own options given before ``--``.

``orch run train.py --nproc-per-node 2 --device=cpu`` is refused (argparse's "unrecognized
arguments"), but the hint says what orch understood instead: torchrun's names map to orch's
(:data:`TORCHRUN_OPTIONS`; the rendezvous options need no counterpart: Slurm gives the nodes and
ranks, orch derives MASTER_ADDR and MASTER_PORT), and any other option of a script target belongs
to the script, after ``--``. The hint ends with the user's own command rewritten that way. Pure
(only :func:`is_script_target` looks at the file system); the CLI imports it only on that error.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_RENDEZVOUS = ("orch derives the rendezvous itself (MASTER_ADDR: the first node, or loopback on one machine; "
               "MASTER_PORT from the job id)")
_RANKS = "Slurm gives each node its place and orch derives RANK, LOCAL_RANK and WORLD_SIZE from it"


@dataclass(frozen=True)
class TorchrunOption:
    """One torchrun option: the orch option for each verb (``None``: none needed), or why none is needed."""

    name: str  # normalized: leading "--", "-" between words
    run: str | None  # orch run's option (takes torchrun's value), or None
    submit: str | None  # orch submit's option, or None
    why: str  # shown when a verb has no counterpart
    takes_value: bool = True
    prefix: bool = False  # name is a prefix (--rdzv-backend, --rdzv-endpoint, ...)
    metavar: str = "N"  # the value's name in docs/bring-your-own-script.md's table

    def counterpart(self, verb: str) -> str | None:
        return self.run if verb == "run" else self.submit


# torchrun option -> orch option, or why orch needs none (one row per option). The table of
# docs/bring-your-own-script.md is rendered from it (markdown_table; scripts/docs_tables.py writes it).
TORCHRUN_OPTIONS: tuple[TorchrunOption, ...] = (
    TorchrunOption("--nproc-per-node", run="--nproc", submit="--gpus",
                   why="orch submit starts one rank per GPU: --gpus G per node (default: all the node's GPUs), "
                       "--ntasks-per-node T on a CPU partition"),
    TorchrunOption("--nnodes", run=None, submit="--nodes",
                   why="orch run uses this machine only; orch submit --nodes N runs on N nodes"),
    TorchrunOption("--node-rank", run=None, submit=None, why=_RANKS, metavar="R"),
    TorchrunOption("--standalone", run=None, submit=None, why=_RENDEZVOUS, takes_value=False),
    TorchrunOption("--rdzv-", run=None, submit=None, why=_RENDEZVOUS, prefix=True, metavar="VALUE"),
    TorchrunOption("--master-addr", run=None, submit=None, why=_RENDEZVOUS, metavar="ADDR"),
    TorchrunOption("--master-port", run=None, submit=None, why=_RENDEZVOUS, metavar="PORT"),
    TorchrunOption("--max-restarts", run="--max-restarts", submit="--max-restarts",
                   why="a failed training step is started again, up to N times, from the newest checkpoint "
                       "(default: launcher.max_restarts of cluster.yaml); a preempted Slurm job is requeued "
                       "by orch itself (launcher.requeue)"),
)


def normalize(option: str) -> str:
    """``--nproc_per_node=2`` -> ``--nproc-per-node`` (torchrun takes both spellings)."""
    name = option.split("=", 1)[0]
    return "--" + name[2:].replace("_", "-") if name.startswith("--") else name


def torchrun_option(option: str) -> TorchrunOption | None:
    name = normalize(option)
    for row in TORCHRUN_OPTIONS:
        if name == row.name or (row.prefix and name.startswith(row.name)):
            return row
    return None


def is_script_target(args: argparse.Namespace) -> bool:
    """Whether the command line names a script or ``-m`` module (not a job name or a job file)."""
    if not getattr(args, "takes_script_args", False):
        return False
    if getattr(args, "module", None):
        return True
    from orchestrator.errors import OrchError
    from orchestrator.spec.script import resolve_target

    # intermixed parsing may have put an unknown option's value in JOB (orch run --foo 2 train.py)
    for word in [getattr(args, "job", None), *getattr(args, "overrides", [])]:
        if not word or "=" in word:
            continue
        try:
            if resolve_target(word, None, None, [], Path.cwd(), []) is not None:
                return True
        except OrchError:
            if word.endswith(".py"):
                return True
    return False


def _is_value(token: str) -> bool:
    return not token.startswith("-") or token == "-" or _is_number(token)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def explain(verb: str, argv: Sequence[str], unknown: Sequence[str], script_args: Sequence[str] | None,
            *, script: bool) -> str | None:
    """The hint for ``unknown`` options of ``orch VERB argv`` (argv: orch's part, before any ``--``),
    or None when none of them is torchrun's and the target is not a script (pure). Only orch run and
    orch submit (the verbs that launch) read torchrun's names."""
    launches = verb in ("run", "submit")
    unknown_set = set(unknown)
    kept: list[str] = []
    moved: list[str] = []
    renamed: list[str] = []
    unneeded: dict[str, list[str]] = {}  # why -> the options it answers
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token not in unknown_set or not token.startswith("-"):
            kept.append(token)
            i += 1
            continue
        row = torchrun_option(token) if launches else None
        value: str | None = token.split("=", 1)[1] if "=" in token else None
        # the option's value when given as a separate word (a script target takes no key=value overrides)
        takes_next = (value is None and i + 1 < len(tokens) and _is_value(tokens[i + 1])
                      and (row.takes_value if row is not None else script))
        words = [token, tokens[i + 1]] if takes_next else [token]
        value = tokens[i + 1] if takes_next else value
        i += len(words)
        if row is None:
            (moved if script else kept).extend(words)
            continue
        other = row.counterpart(verb)
        if other is not None:
            given = token.split("=", 1)[0]  # --max_restarts: torchrun's spelling of orch's --max-restarts
            renamed.append(f"did you mean {other}? {given} is torchrun's name; orch {verb} takes {other}")
            kept.extend([other, value] if value is not None else [other])
        else:
            unneeded.setdefault(row.why, []).append(" ".join(words))
    if not renamed and not unneeded and not (script and moved):
        return None
    lines = [*renamed, *(f"{', '.join(given)}: orch {verb} needs no such option: {why}"
                         for why, given in unneeded.items())]
    after = [*moved, *(script_args or [])]
    command = "orch " + shlex.join(kept) + (" -- " + shlex.join(after) if after else "")
    if script and moved:
        lines.append(f"a script's own arguments go after --: {command}")
    else:
        lines.append(f"in orch's words: {command}")
    return "\n      ".join(lines)


def _spelled(row: TorchrunOption) -> str:
    """A row's torchrun option as the docs table shows it: ``--node-rank R`` (``--node_rank``)."""
    name = row.name + "*" if row.prefix else row.name
    shown = f"`{name} {row.metavar}`" if row.takes_value else f"`{name}`"
    underscored = "--" + name[2:].replace("-", "_")
    return f"{shown} (`{underscored}`)" if underscored != name else shown


# what the docs set as code in a hint's text: options (with a one-letter value), variables, cluster.yaml keys
_CODE = re.compile(r"(?<![\w`-])(--[a-z][\w-]*(?: [A-Z](?![\w]))?|[A-Z][A-Z_]{3,}(?![\w])|launcher\.\w+)")


def markdown_table() -> str:
    """The torchrun table of docs/bring-your-own-script.md, rendered from :data:`TORCHRUN_OPTIONS`."""
    lines = ["| torchrun option | orch run | orch submit | why |", "| --- | --- | --- | --- |"]
    for row in TORCHRUN_OPTIONS:
        run, submit = ((f"`{other} {row.metavar}`" if row.takes_value else f"`{other}`") if other else "none"
                       for other in (row.run, row.submit))
        why = _CODE.sub(lambda m: f"`{m[1]}`", row.why)
        lines.append(f"| {_spelled(row)} | {run} | {submit} | {why} |")
    return "\n".join(lines) + "\n"
