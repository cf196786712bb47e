"""Which training frameworks a script is written with (``orchestrator.spec.framework``), read from its source.

The script is never imported: its imports give each name its module (``import lightning as L`` makes
``L.Trainer`` ``lightning.Trainer``), and a call or decorator of one of the names of
``frameworknames.QUALIFIED`` shows the framework (a Hydra app's configs: ``hydratargets.py``). For Lightning's
``Trainer(...)`` and ``Fabric(...)`` the literal layout arguments are kept (``devices``, ``num_nodes``,
``strategy``, ``accelerator``; left out: the framework's default); an argument that is not a literal, and any
call with ``*args``/``**kwargs``, is not judged.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.doctor.frameworknames import (
    FRAMEWORK_ROOTS,
    LIGHTNING_CLI,
    QUALIFIED,
    import_aliases,
    qualified_name,
    star_aliases,
)
from orchestrator.doctor.hydratargets import (
    config_folders,
    hydra_targets,
    instantiates,
    project_classes,
    read_configs,
    structured_targets,
)
from orchestrator.source.walk import walk
from orchestrator.spec.framework import Framework, Layout
from orchestrator.spec.pysource import quote_line

if TYPE_CHECKING:
    from orchestrator.spec.script import ScriptTarget

LAYOUT_ARGS = ("devices", "num_nodes", "strategy", "accelerator")


def read_frameworks(path: Path) -> list[Framework]:
    """The frameworks of the script at ``path`` and of the project modules it reaches (a Fabric loop in
    ``loop.py``: ``projectfiles.py``), in the order they first show, each with the file and line that showed it
    (none when the script cannot be read)."""
    from orchestrator.source.projectfiles import project_files  # the doctor's reading, only when asked

    found: dict[str, Framework] = {}
    sources = project_files(path)
    own = project_subclasses([source.tree for source in sources])
    trees = {source.path.resolve(): source.tree for source in sources}
    for source in sources:
        starred = star_aliases(source.tree, trees, source.path)
        for framework in frameworks_of(source.tree, source.lines, source.shown, own, starred):
            seen = found.get(framework.name)
            found[framework.name] = framework if seen is None else seen.model_copy(
                update={"layouts": [*seen.layouts, *framework.layouts]})
    if any(instantiates(source.tree) for source in sources):
        read = {source.path.resolve() for source in sources}
        for folder in config_folders(path, [(source.path, source.tree) for source in sources]):
            configs = read_configs(folder)
            for framework in hydra_targets(configs, shown_from=path.parent, own=own):
                found.setdefault(framework.name, framework)
            for module, tree, lines, shown in project_classes(configs, path.parent, path.parent):
                if module.resolve() not in read:  # the workspace class the config builds: its loop's framework
                    for framework in frameworks_of(tree, lines, shown, own):
                        found.setdefault(framework.name, framework)
        for framework in structured_targets(sources):
            found.setdefault(framework.name, framework)
    if "hf-trainer" in found and "accelerate" in found and not any(_drives(source.tree, own) for source in sources):
        del found["accelerate"]  # an Accelerator beside a Trainer that only reads its state: the Trainer's own
    return list(found.values())


def frameworks_of(tree: ast.Module, lines: list[str], name: str, own: dict[str, str] | None = None,
                  starred: dict[str, str] | None = None) -> list[Framework]:
    """:func:`read_frameworks` of a parsed source (``lines``: its text, ``name``: the file's name; ``own``: the
    project's classes built on a framework's, by class name, as :func:`project_subclasses` finds them; ``starred``:
    the names its star imports of project modules bring, ``frameworknames.star_aliases``)."""
    aliases = {**(starred or {}), **import_aliases(tree)}
    known = {**QUALIFIED, **_subclasses(tree, aliases)}
    held = _held_classes(tree, aliases)
    found: dict[str, tuple[str, list[Layout]]] = {}
    for node in sorted(_uses(tree), key=lambda n: (n.lineno, n.col_offset)):
        target = node.func if isinstance(node, ast.Call) else node
        if isinstance(target, ast.Attribute) and target.attr in _CONSTRUCTORS:
            target = target.value  # Trainer.from_argparse_args(args): a Trainer made by its class method
        qualified = qualified_name(target, aliases) or (target.id if isinstance(target, ast.Name) else "")
        candidates = held.get(qualified, []) if isinstance(target, ast.Name) and target.id not in aliases else []
        framework = next((f for q in [qualified, *candidates] if (f := known.get(q) or _own_class(q, own or {}))),
                         None)
        if framework is None:
            continue
        where = quote_line(name, lines, node.lineno)
        _, layouts = found.setdefault(framework, (where, []))
        if framework in ("lightning", "fabric") and isinstance(node, ast.Call) and not _cli(qualified):
            layouts.append(_layout(node, where))
    usage = _accelerate_usage(tree, aliases)
    if usage is not None and "accelerate" not in found:
        found["accelerate"] = (quote_line(name, lines, usage.lineno), [])
    return [Framework(name=fw, why=why, layouts=layouts) for fw, (why, layouts) in found.items()]  # type: ignore[arg-type]


def _held_classes(tree: ast.Module, aliases: dict[str, str]) -> dict[str, list[str]]:
    """Names that hold a class to call later, by the classes' qualified names (``trainer_cls = GCTrainer if
    args.grad_cache else Trainer``; ``trainer = trainer_cls(...)``): the call makes one of them."""
    held: dict[str, list[str]] = {}
    for node in walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value, options = node.value, []
        while isinstance(value, ast.IfExp):
            options.append(value.body)
            value = value.orelse
        for option in [*options, value]:
            if isinstance(option, ast.Name | ast.Attribute):
                name = qualified_name(option, aliases) or (option.id if isinstance(option, ast.Name) else "")
                held.setdefault(node.targets[0].id, []).append(name)
    return held


def _cli(qualified: str) -> bool:
    """``LightningCLI(...)`` or the project's subclass of it (``MyLightningCLI``): the Trainer's layout comes from
    the config and the flags, not from the call."""
    return qualified in LIGHTNING_CLI or qualified.rsplit(".", 1)[-1].endswith("CLI")


_CONSTRUCTORS = frozenset({"from_argparse_args"})  # class methods that make the framework's object


def _subclasses(tree: ast.Module, aliases: dict[str, str]) -> dict[str, str]:
    """The file's own classes built on a framework's (``class MyTrainer(transformers.Trainer):``): calling one
    shows the framework as the base class would."""
    out: dict[str, str] = {}
    for node in walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [QUALIFIED.get(qualified_name(b, aliases) or "") for b in node.bases]
            framework = next((b for b in bases if b), None)
            if framework is not None:
                aliases.setdefault(node.name, node.name)
                out[node.name] = framework
    return out


def project_subclasses(trees: list[ast.Module]) -> dict[str, str]:
    """The classes the project's files build on a framework's, by name (``class LLaVATrainer(Trainer)`` in
    ``llava_trainer.py``, and a class built on that one in another file): calling one where it is imported shows
    the framework."""
    own: dict[str, str] = {}
    classes = [(node, import_aliases(tree)) for tree in trees for node in walk(tree) if isinstance(node, ast.ClassDef)]
    for node, aliases in classes:
        framework = _copied(node, aliases)
        if framework is not None:
            own[node.name] = framework
    grew = True
    while grew:
        grew = False
        for node, aliases in classes:
            if node.name in own:
                continue
            for base in node.bases:
                qualified = qualified_name(base, aliases) or (base.id if isinstance(base, ast.Name) else "")
                framework = QUALIFIED.get(qualified) or _own_class(qualified, own)
                if framework is not None:
                    own[node.name], grew = framework, True
                    break
    return own


# a framework's class a project may carry a copy of -> (the framework, that class's own modules a copy imports)
_COPIES: dict[str, tuple[str, frozenset[str]]] = {
    "Trainer": ("hf-trainer", frozenset({"transformers.trainer_callback", "transformers.trainer_pt_utils",
                                         "transformers.trainer_utils", "transformers.training_args"})),
}


def _copied(node: ast.ClassDef, aliases: dict[str, str]) -> str | None:
    """The framework of a copy of its class in the project (ChatGLM's ``ptuning/trainer.py``: ``class Trainer:``, a
    copy of transformers' own, importing ``TrainerState`` and ``TrainingArguments`` from transformers' trainer
    modules): the class's name and at least two of those modules, not a training loop that merely uses a model."""
    framework, modules = _COPIES.get(node.name, ("", frozenset()))
    used = {qualified.rsplit(".", 1)[0] for qualified in aliases.values()}
    return framework if framework and len(modules & used) >= 2 else None


def _own_class(qualified: str, own: dict[str, str]) -> str | None:
    """The framework of the project's class ``qualified`` names (``llava.train.llava_trainer.LLaVATrainer``), not
    of a framework's own class that has the same name."""
    if not qualified or qualified.split(".")[0] in FRAMEWORK_ROOTS:
        return None
    return own.get(qualified.rsplit(".", 1)[-1])


_TRAINING_METHODS = frozenset({"prepare", "backward", "accumulate"})


def _drives(tree: ast.Module, own: dict[str, str]) -> bool:
    """Some object's ``prepare``/``accumulate``/``backward(loss)`` is called: an Accelerator that trains, not one
    asked for its ``process_index`` beside a Trainer, nor the Trainer's own (``self.accelerator.prepare(loader)`` in
    a method of a Trainer subclass: ``own``, the project's classes built on a framework's)."""
    aliases = import_aliases(tree)
    trainers = {**own, **_subclasses(tree, dict(aliases))}
    theirs = {id(inner) for node in walk(tree) if isinstance(node, ast.ClassDef)
              and trainers.get(node.name) == "hf-trainer" for inner in walk(node)
              if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
              and ast.unparse(inner.func.value) == "self.accelerator"}
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and id(node) not in theirs
               and node.func.attr in _TRAINING_METHODS and (node.func.attr != "backward" or bool(node.args))
               for node in walk(tree))


_ACCELERATOR_ONLY = frozenset({"wait_for_everyone", "unwrap_model", "gather_for_metrics"})


def _accelerate_usage(tree: ast.Module, aliases: dict[str, str]) -> ast.Call | None:
    """Accelerate's object used where a project helper made it (``accelerator = train_util.prepare_accelerator(args)``,
    a helper not read): the script imports from ``accelerate`` and calls on one name the methods only an
    ``Accelerator`` has together (``wait_for_everyone``/``unwrap_model``/``gather_for_metrics``, or ``prepare``
    and ``backward(loss)``)."""
    if not any(module.split(".")[0] == "accelerate" for module in aliases.values()):
        return None
    calls: dict[str, dict[str, ast.Call]] = {}
    for node in walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id not in aliases
                and (node.func.attr != "backward" or node.args)):  # loss.backward() is anyone's
            calls.setdefault(node.func.value.id, {}).setdefault(node.func.attr, node)
    for methods in calls.values():
        only = [methods[m] for m in sorted(_ACCELERATOR_ONLY) if m in methods]
        if only or ("prepare" in methods and "backward" in methods):
            return min([*only, *(methods[m] for m in ("prepare", "backward") if m in methods)],
                       key=lambda c: c.lineno)
    return None


def script_frameworks(target: ScriptTarget) -> list[Framework]:
    """What ``orch submit``/``orch run`` were given, read (a module not found here: none)."""
    from orchestrator.spec.script import find_module

    path = Path(target.target) if target.kind == "script" else find_module(target.target, [Path(target.cwd)])
    return read_frameworks(path) if path is not None else []


def _uses(tree: ast.Module) -> list[ast.Call | ast.Name | ast.Attribute]:
    """Every call, and every decorator that is a bare name (``@record``)."""
    uses: list[ast.Call | ast.Name | ast.Attribute] = []
    for node in walk(tree):
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
        values["devices"] = devices_of(given["devices"])
    if "num_nodes" in given:
        nodes = given["num_nodes"]
        values["num_nodes"] = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0 else None
    for key in ("strategy", "accelerator"):
        if key in given:
            values[key] = given[key] if isinstance(given[key], str) else None
    return Layout(where=where, **values)


def devices_of(value: object) -> int | str | None:
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

