"""DDP006 in framework code: which framework runs a file's code on every rank, which methods a framework calls on
every rank (a ``TrainerCallback``'s events, a Trainer's checkpoint step, a Lightning hook) or only where the run
saves, and the frameworks' own "this process saves" flags.

The Hugging Face Trainer, Lightning, Fabric and Accelerate run the whole script on every rank: a ``torch.save`` or
``save_pretrained`` with no rank condition, before or after ``trainer.train()``, writes the same file once per rank.
The Trainer calls every callback's ``on_save``/``on_train_end``/... on every process (``state.is_world_process_zero``
tells the one that saves); ``args.local_rank`` of ``TrainingArguments`` is the node's local rank.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Literal

from orchestrator.doctor.frameworknames import QUALIFIED
from orchestrator.source.analysis import Analysis
from orchestrator.source.branches import statements_before
from orchestrator.source.exprnames import FunctionNode, dotted, last_name
from orchestrator.source.flow import Site
from orchestrator.source.names import Module
from orchestrator.source.walk import walk

# The frameworks whose launch runs the script's own code on every rank, as the findings name them.
EVERY_RANK: dict[str, str] = {"hf-trainer": "the transformers Trainer", "lightning": "Lightning", "fabric": "Fabric",
                              "accelerate": "Accelerate"}
# Writers of a checkpoint file besides torch.save (its object first, the file second).
WRITERS = frozenset({"torch.save", "safetensors.torch.save_file", "safetensors.torch.save_model",
                     "safetensors.numpy.save_file"})

Caller = Literal["every", "saver"]
_HF_CALLBACKS = frozenset({"transformers.TrainerCallback", "transformers.trainer_callback.TrainerCallback"})
_LIGHTNING_HOOKED = ("Callback", "LightningModule", "LightningDataModule")  # class names, under lightning's modules
# A transformers.Trainer subclass's methods that the Trainer calls on every process (each writes or must be called
# everywhere), and the one it calls only where ``args.should_save`` holds (``save_model`` -> ``_save``).
_TRAINER_EVERY = frozenset({"_save_checkpoint", "save_model", "train", "training_step", "compute_loss", "evaluate",
                            "_maybe_log_save_evaluate"})
_TRAINER_SAVER = frozenset({"_save"})
_LIGHTNING_STEPS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
# Lightning calls prepare_data on one process (each node's local rank 0, or rank 0): its download is not every rank's.
_LIGHTNING_ONE = frozenset({"prepare_data"})
# Decorators that run a function on the main process only (Lightning's, Accelerate's).
MAIN_ONLY = frozenset({"rank_zero_only", "on_main_process", "main_process_only"})


def framework_runs(a: Analysis, depth: int = 0) -> str | None:
    """The framework (``EVERY_RANK``'s name for it) that runs this file's code on every rank: one the file (or, for a
    helper module, its script) makes (``Trainer(...)``, ``Accelerator()``, TRL's trainers), a project class built on
    one that the file makes (``class MyTrainer(transformers.Trainer)`` in a helper), a framework setup call (Fabric's,
    Accelerate's), or a ``TrainerCallback`` the file defines (the Trainer calls it on every process)."""
    if a.outer is not None and depth < 3:
        found = framework_runs(a.outer, depth + 1)
        if found is not None:
            return found
    for site in a.flow.sites:
        framework = QUALIFIED.get(site.qual or "") or _project_class_framework(a, site.qual)
        if framework in EVERY_RANK:
            return EVERY_RANK[framework]
    for qual in a.helper_quals:
        if QUALIFIED.get(qual) in EVERY_RANK:
            return EVERY_RANK[QUALIFIED[qual]]
    for node in a.module.nodes:
        if isinstance(node, ast.ClassDef) and _class_kind(a.module, node) == "hf-callback":
            return EVERY_RANK["hf-trainer"]
    if a.framework_parallel:
        return "the framework (Accelerate, Fabric)"
    return None


def _project_class_framework(a: Analysis, qual: str | None) -> str | None:
    """``LLaVATrainer(...)`` of ``class LLaVATrainer(Trainer)`` in a project module, or in the file itself
    (``class RewardTrainer(Trainer)`` above ``RewardTrainer(...)``): the base class's framework."""
    if qual is None:
        return None
    where = a.project.split(qual) if a.project is not None and "." in qual else None
    module = a.module if "." not in qual else a.project.read(where[0]) if a.project and where else None
    name = where[1] if where is not None else qual
    if module is None:
        return None
    node = next((n for n in module.tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if node is None:
        return None
    return next((f for b in node.bases if (f := QUALIFIED.get(module.qualname(b) or "")) is not None), None)


# what a transformers Trainer runs each training step, on every rank, handing it the wrapped model
TRAINER_STEPS = ("training_step", "compute_loss")


def hf_trainer_class(module: Module, node: ast.ClassDef) -> bool:
    """A class of ``module`` built on a transformers (or TRL) Trainer."""
    return any(hf_trainer_base(module.qualname(base) or "") for base in node.bases)


def hf_trainer_base(qual: str) -> bool:
    """A base class qualified as a transformers (or TRL) Trainer: ``transformers.Trainer``, ``trl.SFTTrainer``."""
    return QUALIFIED.get(qual) == "hf-trainer" or (
        qual.startswith(("transformers.", "trl.")) and qual.endswith("Trainer"))


def _class_kind(module: Module, node: ast.ClassDef) -> str | None:
    """``hf-callback``, ``hf-trainer`` or ``lightning``: the framework class ``node`` is built on, if any."""
    for base in node.bases:
        qual = module.qualname(base) or ""
        if qual in _HF_CALLBACKS:
            return "hf-callback"
        if hf_trainer_base(qual):
            return "hf-trainer"
        if qual.startswith(("lightning.", "pytorch_lightning.")) and qual.endswith(_LIGHTNING_HOOKED):
            return "lightning"
    return None


def framework_caller(module: Module, function: FunctionNode) -> Caller | None:
    """Whether a framework calls the method ``function`` on every rank (a callback's ``on_save``, a Trainer's
    ``_save_checkpoint``, a Lightning hook) or only where the run saves (the Trainer's ``_save``); None for
    anything else (a function the script calls itself)."""
    owner = module.parents.get(function)
    if not isinstance(owner, ast.ClassDef):
        return None
    kind = _class_kind(module, owner)
    name = function.name
    if kind == "hf-callback" and name.startswith("on_"):
        return "every"
    if kind == "hf-trainer":
        return "every" if name in _TRAINER_EVERY else "saver" if name in _TRAINER_SAVER else None
    if kind == "lightning":
        return "every" if name.startswith("on_") or name in _LIGHTNING_STEPS else "saver" if name in _LIGHTNING_ONE \
            else None
    return None


def called_by_framework(a: Analysis, function: FunctionNode | None, depth: int = 0) -> bool:
    """``function`` runs on every rank because a framework calls it, itself or through the methods of its class that
    call it (``on_save`` calling ``self.save_model``), with no rank condition on the way."""
    if function is None or depth > 3:
        return False
    if framework_caller(a.module, function) == "every":
        return True
    return any(not a.flow.guarded(s) and called_by_framework(a, s.function, depth + 1)
               for s in a.flow.sites if s.function is not function and a.module.local_function(s.call) is function)


def saver_only(a: Analysis, site: Site) -> bool:
    """``site`` runs only where the run saves: in a method the framework calls only there (``_save``), under
    ``if args.should_save:`` (``TrainingArguments.should_save``: the world's process zero), or in a function
    decorated to run on the main process (``@rank_zero_only``)."""
    function = site.function
    if function is not None and (framework_caller(a.module, function) == "saver" or any(
            last_name(d.func if isinstance(d, ast.Call) else d) in MAIN_ONLY for d in function.decorator_list)):
        return True
    return _under(a, site.call, _should_save)


def _should_save(a: Analysis, test: ast.expr) -> bool:
    """``args.should_save`` (``training_args``, ``self.args``): the TrainingArguments' flag, set by the Trainer, not
    by the file (``control.should_save`` is a callback's "save now", not a rank)."""
    for node in walk(test):
        if isinstance(node, ast.Attribute) and node.attr == "should_save" and (
                last_name(node.value) or "").endswith("args"):
            key = dotted(node) or ""
            scripts = [a, *([a.outer] if a.outer is not None else [])]
            if not any(where.module.values_anywhere(key) for where in scripts):
                return True
    return False


def _under(a: Analysis, node: ast.AST, test: Callable[[Analysis, ast.expr], bool]) -> bool:
    """An ``if`` around ``node`` in its function, or an ``if ...: return`` before it in an enclosing block, whose
    test satisfies ``test``."""
    child: ast.AST = node
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.ClassDef | ast.Module):
        if isinstance(current, ast.If) and child is not current.test and test(a, current.test):
            return True
        if any(isinstance(s, ast.If) and s.body and isinstance(s.body[-1], _EXITS) and test(a, s.test)
               for s in statements_before(current, child)):
            return True
        if isinstance(current, FunctionNode):
            return False
        child, current = current, a.module.parents.get(current)
    return False


_EXITS = (ast.Return, ast.Raise, ast.Continue)


def script_arguments(a: Analysis, name: ast.Name) -> list[ast.expr]:
    """In a helper module, what the script passes for the parameter ``name`` of the helper's function
    (``generate_init_weight(model, f"{args.proj_dir}/init.pth")`` for ``init_weight_name``)."""
    function = a.module.function_of(name)
    found, value = a.module.resolve(name.id, name)
    if a.outer is None or function is None or value is not None or not found:
        return []
    params = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
    if name.id not in params:
        return []
    index = params.index(name.id) - (1 if params[:1] == ["self"] else 0)
    out: list[ast.expr] = []
    for site in a.outer.flow.sites:
        if last_name(site.call.func) == function.name:
            if 0 <= index < len(site.call.args):
                out.append(site.call.args[index])
            out += [k.value for k in site.call.keywords if k.arg == name.id]
    return out
