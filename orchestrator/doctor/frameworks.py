"""Which training frameworks a script is written with (``orchestrator.spec.framework``), read from its source.

The script is never imported: its imports give each name its module (``import lightning as L`` makes
``L.Trainer`` ``lightning.Trainer``), and a call or decorator of one of :data:`QUALIFIED`'s names shows the
framework. For Lightning's ``Trainer(...)`` and ``Fabric(...)`` the literal layout arguments are kept
(``devices``, ``num_nodes``, ``strategy``, ``accelerator``; left out: the framework's default); an
argument that is not a literal, and any call with ``*args``/``**kwargs``, is not judged.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.spec.framework import Framework, Layout
from orchestrator.spec.pysource import quote_line

if TYPE_CHECKING:
    from orchestrator.spec.script import ScriptTarget

_LIGHTNING = ("lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
              "lightning.pytorch.trainer.trainer.Trainer", "pytorch_lightning.Trainer",
              "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer")
_FABRIC = ("lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric", "lightning.fabric.fabric.Fabric")
# qualified name (called or used as a decorator) -> the framework it shows
QUALIFIED: dict[str, str] = {
    **dict.fromkeys(_LIGHTNING, "lightning"), **dict.fromkeys(_FABRIC, "fabric"),
    "accelerate.Accelerator": "accelerate",
    "transformers.Trainer": "hf-trainer", "transformers.Seq2SeqTrainer": "hf-trainer",
    "hydra.main": "hydra",
    "torch.distributed.elastic.multiprocessing.errors.record": "torchelastic",
}
LAYOUT_ARGS = ("devices", "num_nodes", "strategy", "accelerator")


def read_frameworks(path: Path) -> list[Framework]:
    """The frameworks of the script at ``path`` and of the project modules it reaches (a Fabric loop in
    ``loop.py``: ``projectfiles.py``), in the order they first show, each with the file and line that showed it
    (none when the script cannot be read)."""
    from orchestrator.source.projectfiles import project_files  # the doctor's reading, only when asked

    found: dict[str, Framework] = {}
    for source in project_files(path):
        for framework in frameworks_of(source.tree, source.lines, source.shown):
            seen = found.get(framework.name)
            found[framework.name] = framework if seen is None else seen.model_copy(
                update={"layouts": [*seen.layouts, *framework.layouts]})
    return list(found.values())


def frameworks_of(tree: ast.Module, lines: list[str], name: str) -> list[Framework]:
    """:func:`read_frameworks` of a parsed source (``lines``: its text, ``name``: the file's name)."""
    aliases = _aliases(tree)
    found: dict[str, tuple[str, list[Layout]]] = {}
    for node in sorted(_uses(tree), key=lambda n: (n.lineno, n.col_offset)):
        target = node.func if isinstance(node, ast.Call) else node
        framework = QUALIFIED.get(_qualified(target, aliases) or "")
        if framework is None:
            continue
        where = quote_line(name, lines, node.lineno)
        _, layouts = found.setdefault(framework, (where, []))
        if framework in ("lightning", "fabric") and isinstance(node, ast.Call):
            layouts.append(_layout(node, where))
    return [Framework(name=fw, why=why, layouts=layouts) for fw, (why, layouts) in found.items()]  # type: ignore[arg-type]


def script_frameworks(target: ScriptTarget) -> list[Framework]:
    """What ``orch submit``/``orch run`` were given, read (a module not found here: none)."""
    from orchestrator.spec.script import find_module

    path = Path(target.target) if target.kind == "script" else find_module(target.target, [Path(target.cwd)])
    return read_frameworks(path) if path is not None else []


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Each imported name -> its module path (``L`` -> ``lightning``, ``Trainer`` -> ``lightning.Trainer``)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    names[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _qualified(node: ast.expr, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        head = _qualified(node.value, aliases)
        return f"{head}.{node.attr}" if head else None
    return None


def _uses(tree: ast.Module) -> list[ast.Call | ast.Name | ast.Attribute]:
    """Every call, and every decorator that is a bare name (``@record``)."""
    uses: list[ast.Call | ast.Name | ast.Attribute] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            uses.append(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            uses.extend(d for d in node.decorator_list if isinstance(d, ast.Name | ast.Attribute))
    return uses


def _layout(call: ast.Call, where: str) -> Layout:
    """The call's literal layout arguments; with ``*args``/``**kwargs`` or positional ones, none is judged."""
    if call.args or any(k.arg is None for k in call.keywords):
        return Layout(where=where, devices=None, num_nodes=None, strategy=None, accelerator=None)
    given = {k.arg: _literal(k.value) for k in call.keywords if k.arg in LAYOUT_ARGS}
    values: dict[str, Any] = {}
    if "devices" in given:
        values["devices"] = _devices(given["devices"])
    if "num_nodes" in given:
        nodes = given["num_nodes"]
        values["num_nodes"] = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0 else None
    for key in ("strategy", "accelerator"):
        if key in given:
            values[key] = given[key] if isinstance(given[key], str) else None
    return Layout(where=where, **values)


def _devices(value: object) -> int | str | None:
    """``devices=``: a count, ``auto`` (also -1 and "-1": every device), or None (not judged)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if text in ("auto", "-1"):
            return "auto"
        if text.isdigit():
            return int(text)
        parts = [p for p in text.split(",") if p.strip()]
        return len(parts) if parts and all(p.strip().isdigit() for p in parts) else None
    if isinstance(value, int):
        return "auto" if value == -1 else value if value > 0 else None
    if isinstance(value, list | tuple) and value and all(isinstance(v, int) for v in value):
        return len(value)  # GPU indices
    return None


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


_NOT_LITERAL = object()

