"""The guard a save gets in a script a framework runs on every rank (DDP006's fix): the framework's own test of the
process that saves, and its own barrier, written with the name the script already has for it. Under Accelerate,
Fabric, a transformers or a Lightning Trainer, ``torch.distributed.get_rank()`` fails where the script runs as one
process (no process group): the framework's test does not.

A handle is found where the save can see it: a ``TrainerCallback`` method's ``state`` parameter (the Trainer calls
it on every process; ``state.is_world_process_zero`` is the one that saves), else a name the save's function (then
the module) assigns from the framework's constructor (``accelerator = Accelerator()``, ``fabric = L.Fabric(...)``,
``trainer = Trainer(...)``), else a parameter of the save's function named for one (``accelerator``, ``fabric``)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from orchestrator.doctor.fix.cst import Source, callee, code_of

# framework -> (the test of the process that saves, the barrier: None where the framework's caller waits itself)
GUARDS: dict[str, tuple[str, str | None]] = {
    "accelerate": ("{name}.is_main_process", "{name}.wait_for_everyone()"),
    "fabric": ("{name}.global_rank == 0", "{name}.barrier()"),
    "hf-trainer": ("{name}.is_world_process_zero()", "{name}.accelerator.wait_for_everyone()"),
    "lightning": ("{name}.is_global_zero", "{name}.strategy.barrier()"),
    "hf-callback": ("{name}.is_world_process_zero", None),  # the Trainer calls the callback on every rank
}
_CONSTRUCTORS = {"Accelerator": "accelerate", "Fabric": "fabric"}
_PARAMETERS = {"accelerator": "accelerate", "fabric": "fabric"}
_LIGHTNING_MODULES = ("lightning", "pytorch_lightning")
_CALLBACK_BASES = frozenset({"TrainerCallback"})


@dataclass(frozen=True)
class Guard:
    test: str  # the condition: ``accelerator.is_main_process``
    barrier: str | None  # the statement after the guarded save: ``accelerator.wait_for_everyone()``


def framework_guard(src: Source, node: cst.CSTNode) -> Guard | None:
    """The framework's guard for a save at ``node``, or None where no framework handle is in sight."""
    function = src.scope(node)
    if function is not None:
        found = _callback_state(src, function) or _assigned(src, function.body, node) or _parameter(function)
        if found is not None:
            return _guard(*found)
    found = _assigned(src, src.module, node)
    return _guard(*found) if found is not None else None


def _guard(framework: str, name: str) -> Guard:
    test, barrier = GUARDS[framework]
    return Guard(test.format(name=name), barrier.format(name=name) if barrier is not None else None)


def _callback_state(src: Source, function: cst.FunctionDef) -> tuple[str, str] | None:
    """A ``TrainerCallback`` method with a ``state`` parameter: ``state.is_world_process_zero``."""
    cls = next((a for a in src.ancestors(function) if isinstance(a, cst.ClassDef)), None)
    if cls is None or not any(_last(code_of(src.module, base.value)) in _CALLBACK_BASES for base in cls.bases):
        return None
    names = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    return ("hf-callback", "state") if "state" in names else None


def _assigned(src: Source, body: cst.CSTNode, before: cst.CSTNode) -> tuple[str, str] | None:
    """The last ``NAME = <framework constructor>(...)`` in ``body`` (not in nested functions or classes) above
    ``before``."""
    found: tuple[str, str] | None = None
    line = src.line(before)
    for assign in _assignments(body):
        if src.line(assign) >= line or len(assign.targets) != 1:
            continue
        target, value = assign.targets[0].target, assign.value
        if isinstance(target, cst.Name) and isinstance(value, cst.Call):
            framework = _framework_of(src, value)
            if framework is not None:
                found = (framework, target.value)
    return found


def _assignments(body: cst.CSTNode) -> list[cst.Assign]:
    out: list[cst.Assign] = []

    class Collect(cst.CSTVisitor):  # ``body`` is a block: every function met inside it is a nested one
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Assign(self, node: cst.Assign) -> None:
            out.append(node)

    body.visit(Collect())
    return out


def _framework_of(src: Source, call: cst.Call) -> str | None:
    """``Accelerator()`` -> accelerate, ``L.Fabric()`` -> fabric, ``pl.Trainer()`` or a ``Trainer`` imported from
    Lightning -> lightning, any other ``...Trainer(...)`` (transformers', TRL's, a subclass) -> hf-trainer."""
    name = callee(call)
    if name in _CONSTRUCTORS:
        return _CONSTRUCTORS[name]
    if not name.endswith("Trainer"):
        return None
    func = call.func
    if isinstance(func, cst.Attribute):
        owner = code_of(src.module, func.value)
        return "lightning" if owner in ("L", "pl") or owner.split(".")[0] in _LIGHTNING_MODULES else "hf-trainer"
    return "lightning" if _imported_from_lightning(src.module, name) else "hf-trainer"


def _imported_from_lightning(module: cst.Module, name: str) -> bool:
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (isinstance(small, cst.ImportFrom) and small.module is not None
                    and code_of(module, small.module).split(".")[0] in _LIGHTNING_MODULES
                    and not isinstance(small.names, cst.ImportStar)
                    and any(_bound(module, alias) == name for alias in small.names)):
                return True
    return False


def _bound(module: cst.Module, alias: cst.ImportAlias) -> str:
    return code_of(module, alias.asname.name) if alias.asname is not None else code_of(module, alias.name)


def _parameter(function: cst.FunctionDef) -> tuple[str, str] | None:
    for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
        if param.name.value in _PARAMETERS:
            return _PARAMETERS[param.name.value], param.name.value
    return None


def _last(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1]
