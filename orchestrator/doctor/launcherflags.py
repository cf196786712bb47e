"""init_process_group's ``rank`` and ``world_size``, which a launcher gives through the environment, taken from a
flag's fixed default instead (``rank=args.rank`` with ``--rank`` defaulting to 0): a launcher passes no such flag.
What the flag is (:func:`default_flag`), where it is declared, and whether the project reads the launcher's variable
anywhere (:func:`reads_env`); ``rules_rendezvous`` reports it (DDP008)."""

from __future__ import annotations

import ast

from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.argflags import declared_flags
from orchestrator.source.exprnames import dotted, last_name


def default_flag(a: Reading, expr: ast.expr, depth: int = 0) -> str | None:
    """``--rank`` when ``expr`` is (a parameter filled with) ``args.rank`` of ``add_argument("--rank",
    default=0)``: the rank a launcher never passes (Tacotron 2's ``train(..., args.rank, ...)``)."""
    if depth > 3:
        return None
    if isinstance(expr, ast.Attribute):
        key = dotted(expr)
        if key is None or a.module.values_anywhere(key):
            return None  # args.rank = args.rank * ngpus_per_node + gpu: the flag is a node's offset, not the rank
        call = flag_declaration(a, expr.attr)
        default = next((k.value for k in call.keywords if k.arg == "default"), None) if call is not None else None
        if isinstance(default, ast.Constant) and isinstance(default.value, int):
            return f"--{expr.attr}"
        return None
    if isinstance(expr, ast.Name):
        function = a.module.function_of(expr)
        if function is not None and expr.id in {p.arg for p in function.args.args}:
            found = [default_flag(a, value, depth + 1) for value in a.module.argument_for(function, expr.id)]
            if not found and a.outer is not None:  # a helper module's function: what the script passes
                index = [p.arg for p in function.args.args].index(expr.id)
                found = [default_flag(a.outer, call.args[index], depth + 1) for call in a.outer.module.nodes
                         if isinstance(call, ast.Call) and last_name(call.func) == function.name
                         and len(call.args) > index]
            return found[0] if found and all(found) else None
    return None


def flag_declaration(a: Reading, dest: str) -> ast.Call | None:
    """The file's ``add_argument`` of the flag whose value is ``args.<dest>``."""
    return next((flag.node for flag in declared_flags(a.module.tree) if dest in flag.long_names), None)


def constant_flag_default(a: Reading, expr: ast.expr) -> tuple[str, str] | None:
    """``(flag, default)`` when ``expr`` is ``args.port`` (also inside ``str()``/``int()``) of an ``add_argument`` with
    a constant default (``--port``, ``'12356'``; a short ``-p`` too) that the file never assigns: the value every run
    gets unless the flag is passed."""
    while isinstance(expr, ast.Call) and last_name(expr.func) in ("str", "int") and len(expr.args) == 1:
        expr = expr.args[0]
    key = dotted(expr) if isinstance(expr, ast.Attribute) else None
    if key is None or "." not in key or a.module.values_anywhere(key):
        return None
    assert isinstance(expr, ast.Attribute)
    for flag in declared_flags(a.module.tree):
        default = flag.keywords.get("default")
        if flag.attribute == expr.attr and isinstance(default, ast.Constant) and isinstance(
                default.value, int | str) and str(default.value):
            return flag.longs[0], repr(default.value)
    return None


# init_process_group's arguments a launcher gives through the environment: the variables that carry it, and what a
# flag's default there does when the flag is not passed
LAUNCHER_READS = {
    "rank": (("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"), "every process is rank 0"),
    "world_size": (("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
                   "the group waits for that many processes, whatever the launcher started"),
}


def reads_env(a: Reading, names: tuple[str, ...]) -> bool:
    """The script's project reads one of the launcher's variables ``names`` anywhere."""
    return any(isinstance(node, ast.Constant) and node.value in names for module in a.read_modules()
               for node in module.nodes)
