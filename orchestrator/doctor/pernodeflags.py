"""A per-node script whose node flags get no placeholder: a warning, with the exact ``-- ...`` to pass.

A ``per-node`` script (``orchestrator.spec.launch``) starts its own processes and learns the layout from its
own flags, as the seed wiki's ``mnist-distributed.py`` does: ``-n`` nodes, ``-g`` processes per node, ``-nr``
this node's index. orch fills ``{nnodes}``, ``{nproc_per_node}``, ``{node_rank}``... in the script's arguments,
each node its own values; given none, every node starts with the flags' defaults (``-n 1 -g 1 -nr 0``): locally
the script trains silently as a world of one, on Slurm every node claims node 0's ranks and port
(EADDRINUSE). The gate (``gate.check_script``) prints :func:`placeholder_warning` for ``orch run``, ``orch
submit`` (and its dry run) and ``orch exec`` when the script declares such flags (``add_argument``) and no
argument after ``--`` names a placeholder.
"""

from __future__ import annotations

import ast
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.doctor.check import read_script
from orchestrator.errors import OrchError
from orchestrator.source.argflags import declared_flags
from orchestrator.spec.launch import Launch, uses_placeholders
from orchestrator.spec.pysource import UnreadableSource, parse_source

# a flag's name (its long spelling or dest, without dashes, "-" read as "_") -> the placeholder orch fills
FLAG_PLACEHOLDERS: dict[str, str] = {
    **dict.fromkeys(("nr", "node_rank", "noderank", "node_id", "node_idx", "node_index", "machine_rank"),
                    "node_rank"),
    **dict.fromkeys(("nodes", "nnodes", "num_nodes", "n_nodes", "numnodes", "node_count", "num_machines"), "nnodes"),
    **dict.fromkeys(("gpus", "ngpus", "num_gpus", "n_gpus", "gpus_per_node", "ngpus_per_node", "nproc_per_node",
                     "nprocs_per_node", "procs_per_node", "nproc", "nprocs", "num_procs", "num_processes"),
                    "nproc_per_node"),
    **dict.fromkeys(("world_size", "worldsize"), "world_size"),
    **dict.fromkeys(("master_addr", "master_address"), "master_addr"),
    "master_port": "master_port",
}
# the flags that say the layout (a master address alone does not make the warning)
_LAYOUT = frozenset({"node_rank", "nnodes", "nproc_per_node", "world_size"})


@dataclass(frozen=True)
class NodeFlag:
    options: tuple[str, ...]  # every spelling it declares: ("-n", "--nodes")
    placeholder: str
    default: str | None  # the default's source, when there is one


def node_flags(tree: ast.Module) -> list[NodeFlag]:
    """The flags of ``add_argument`` calls that name the node count, the node's index, its processes, the
    world size or the master's address, in the order the script declares them (each placeholder once)."""
    found: list[tuple[int, NodeFlag]] = []
    for declared in declared_flags(tree):
        node, options, keywords = declared.node, declared.options, declared.keywords
        dest = keywords.get("dest")
        names = [o.lstrip("-").replace("-", "_").lower() for o in options if len(o.lstrip("-")) > 1]
        if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
            names.append(dest.value.lower())
        placeholder = next((FLAG_PLACEHOLDERS[n] for n in names if n in FLAG_PLACEHOLDERS), None)
        if placeholder is None or not options:
            continue
        kind = keywords.get("type")
        if placeholder != "master_addr" and kind is not None and ast.unparse(kind) != "int":
            continue  # --gpus "0,1": the devices, not a count
        default = keywords.get("default")
        shown = ast.unparse(default) if default is not None else None
        found.append((node.lineno, NodeFlag(options, placeholder, shown)))
    kept: list[NodeFlag] = []
    for _, flag in sorted(found, key=lambda item: item[0]):
        if all(k.placeholder != flag.placeholder for k in kept):
            kept.append(flag)
    return kept


def shell_words(args: Sequence[str]) -> str:
    """``args`` as a shell line, placeholders left bare (``{nnodes}`` needs no quotes)."""
    bare = [a.replace("{", "").replace("}", "") for a in args]
    return " ".join(a if shlex.quote(b) == b else shlex.quote(a) for a, b in zip(args, bare, strict=True))


def given_in(args: Sequence[str], flag: NodeFlag) -> bool:
    return any(a in flag.options or a.partition("=")[0] in flag.options for a in args)


def filled_args(args: Sequence[str], flags: Sequence[NodeFlag]) -> list[str]:
    """``args`` with each node flag's value replaced by its placeholder, and the flags not given added."""
    out = list(args)
    for flag in flags:
        value = "{" + flag.placeholder + "}"
        for i, arg in enumerate(out):
            if arg in flag.options and i + 1 < len(out):
                out[i + 1] = value
                break
            name, eq, _ = arg.partition("=")
            if eq and name in flag.options:
                out[i] = f"{name}={value}"
                break
        else:
            out += [flag.options[0], value]
    return out


def placeholder_warning(path: Path, launch: Launch, args: Sequence[str]) -> str | None:
    """The warning (with its HINT: the whole ``-- ...`` to pass) for a per-node script that declares node
    flags while none of ``args`` names a placeholder; None otherwise, or when the script cannot be read."""
    if launch.style != "per-node" or uses_placeholders(args):
        return None
    try:
        tree = parse_source(read_script(path), str(path))
    except (OrchError, UnreadableSource):
        return None
    flags = node_flags(tree)
    if not any(f.placeholder in _LAYOUT for f in flags):
        return None
    declared = ", ".join("/".join(f.options) for f in flags)
    defaults = " ".join(f"{f.options[0]} {f.default}" for f in flags
                        if f.default is not None and not given_in(args, f))
    given = "the same values on every node" + (f" (the defaults where not given: {defaults})" if defaults else "")
    return (f"orch: warning: {path.name} starts its own processes on each node (launch per-node) and reads the "
            f"layout from its flags {declared}, but no argument after -- names a placeholder: it gets {given}; "
            "locally it trains as a world of its own, on several nodes every node claims node 0's ranks "
            "(EADDRINUSE)\n"
            f"HINT: let orch fill them on each node: -- {shell_words(filled_args(args, flags))}")
