"""DDP017 (a forward through the DDP wrapper's ``.module`` in a training step) and DDP018 (a training step's
backward skipped on one rank by a data-dependent ``continue``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.framework_saves import TRAINER_STEPS, hf_trainer_class
from orchestrator.source.analysis import COLLECTIVES, REDUCTIONS, WRAPPERS
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.exprnames import last_name
from orchestrator.source.flow import Site
from orchestrator.source.walk import walk

# Methods of a module that run no forward (bookkeeping, I/O, sampling noise or generating without gradients).
_NOT_FORWARD = ("state_dict", "load_state_dict", "parameters", "named_parameters", "buffers", "named_buffers",
                "modules", "named_modules", "children", "named_children", "train", "eval", "to", "cuda", "cpu",
                "half", "float", "bfloat16", "zero_grad", "apply", "requires_grad_", "save_pretrained",
                "register_buffer", "register_forward_hook", "get_", "set_", "sample", "generate", "print_",
                "reset", "load_", "save", "init_", "initialize", "gradient_checkpointing",
                # a teacher's or an EMA copy's weights moved (simple-ijepa's update_params(gamma), copy_params())
                "update_", "copy_", "ema_", "momentum_update", "_momentum_update",
                # a hook of the training's lifecycle (sslsv's model.module.on_train_epoch_start(epoch, max_epochs))
                "on_")
# a getter that computes what the step trains on is a forward (ILQL's ``get_loss(items)``)
_COMPUTES = re.compile(r"loss|logits|forward")
# a function named for an evaluation: its forwards make no gradient step
_EVALUATION = re.compile(r"(?i)valid|eval|test|infer|predict|visuali[sz]")
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.set_grad_enabled"})


def ddp_in_file(a: Reading) -> bool:
    """The file (or, for a helper, the script) wraps a model in DistributedDataParallel, itself or through
    Accelerate's ``prepare`` (DDP on more than one process) or Fabric's ``setup``."""
    ddp = {q for q in WRAPPERS if "Distributed" in q}
    return bool(a.sites(frozenset(ddp))) or not a.helper_quals.isdisjoint(ddp) or a.framework_parallel or (
        a.outer is not None and ddp_in_file(a.outer))  # a helper: the script wraps the model it is handed


def _unwrapped(value: ast.expr) -> bool:
    """``model.module``, or ``accelerator.unwrap_model(model)`` (the module inside the wrapper)."""
    return (isinstance(value, ast.Attribute) and value.attr == "module") or (
        isinstance(value, ast.Call) and last_name(value.func) == "unwrap_model" and bool(value.args))


def _module_call(call: ast.Call) -> str | None:
    """``x.module(...)`` -> ``forward``; ``x.module.predict(...)`` -> ``predict``, also through Accelerate's
    ``accelerator.unwrap_model(x)``; anything else: None."""
    func = call.func
    if _unwrapped(func):
        return "forward"
    if isinstance(func, ast.Attribute) and _unwrapped(func.value):
        return func.attr
    return None


def _wrapper_runs_too(site: Site) -> bool:
    """The same function also runs the wrapper's own forward (wespeaker's ``outputs = model(features)``, then
    ``model.module.projection(embeds, targets)``): that forward prepares DDP's reducer for the step, and the
    submodule's parameters, the wrapper's too, get their gradients averaged by its hooks in the same backward."""
    func = site.call.func
    unwrapped = func if isinstance(func, ast.Attribute) and func.attr == "module" else (
        func.value if isinstance(func, ast.Attribute) else None)
    if site.function is None or not (isinstance(unwrapped, ast.Attribute) and unwrapped.attr == "module"):
        return False
    wrapper = ast.unparse(unwrapped.value)
    return any(isinstance(node, ast.Call) and (ast.unparse(node.func) in (wrapper, f"{wrapper}.forward"))
               for node in walk(site.function))


def _under_no_grad(a: Analysis, node: ast.AST) -> bool:
    current = a.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.With) and any(
                isinstance(item.context_expr, ast.Call) and a.module.qualname(item.context_expr.func) in _NO_GRAD
                for item in current.items):
            return True
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
            return any(a.module.qualname(d.func if isinstance(d, ast.Call) else d) in _NO_GRAD
                       for d in current.decorator_list)
        current = a.module.parents.get(current)
    return False


def _in_training_step(a: Analysis, site: Site) -> bool:
    """The call runs in a loop that calls backward, or in a function of this file called from one (not an
    evaluation's: ``compute_validation_loss`` called from the training loop makes no training step)."""
    if a.in_training_loop(site):
        return True
    if site.function is None or _EVALUATION.search(site.function.name):
        return False
    name = site.function.name
    return any(last_name(other.call.func) == name and a.in_training_loop(other) for other in a.flow.sites)


def _unwrapped_names(a: Analysis, site: Site) -> dict[str, int]:
    """The names the call's function binds to the wrapper's ``.module`` (``sam = self.model.module``, also in one
    branch: ``sam = model.module if ddp else model``; ``m = accelerator.unwrap_model(model)``), each with the line of
    its first such binding."""
    found: dict[str, int] = {}
    for node in walk(site.function) if site.function is not None else ():
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            values = [v for v, side in ((value.body, True), (value.orelse, False))
                      if not _evaluation_side(value.test, side)] if isinstance(value, ast.IfExp) else [value]
            if any(_unwrapped(v) for v in values):
                name = node.targets[0].id
                found[name] = min(found.get(name, node.lineno), node.lineno)
    return found


_TRAINING_FLAGS = frozenset({"train", "training", "is_train", "is_training"})


def _evaluation_side(test: ast.expr, body: bool) -> bool:
    """The side of ``X if test else Y`` runs only while not training: the body where a conjunct of ``test`` is
    ``not train`` (NeuralForceField's ``self._model.module if parallel and not train else self._model``), the other
    side where ``test`` is ``train`` itself or a disjunct of an ``or``."""
    if body:
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        return any(isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.Not) and _training_flag(p.operand)
                   for p in parts)
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    return any(_training_flag(p) for p in parts)


def _training_flag(node: ast.expr) -> bool:
    return (last_name(node) or "") in _TRAINING_FLAGS


def _alias_call(a: Analysis, site: Site, unwrapped: dict[int, dict[str, int]]) -> str | None:
    """``sam(x)`` -> ``forward``; ``sam.image_encoder(x)`` -> ``image_encoder``, with ``sam`` bound to ``X.module``
    before the call (``unwrapped``: each function's names of the wrapper's ``.module``, read once per function; not
    ``unet = accelerator.unwrap_model(unet)`` after the training loop, for the save)."""
    func = site.call.func
    holder = func if isinstance(func, ast.Name) else func.value if isinstance(func, ast.Attribute) else None
    if not isinstance(holder, ast.Name):
        return None
    key = id(site.function)
    if key not in unwrapped:
        unwrapped[key] = _unwrapped_names(a, site)
    if unwrapped[key].get(holder.id, site.call.lineno) >= site.call.lineno:
        return None
    return "forward" if holder is func else func.attr if isinstance(func, ast.Attribute) else None


def _wrapper_name(call: ast.Call) -> str | None:
    """``model`` of ``model.module.get_loss(...)`` and of ``accelerator.unwrap_model(model).get_loss(...)``."""
    inner = call.func.value if isinstance(call.func, ast.Attribute) else None
    if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name):
        return inner.value.id
    if isinstance(inner, ast.Call) and inner.args and isinstance(inner.args[0], ast.Name):
        return inner.args[0].id
    return None


def _on_outputs(site: Site) -> bool:
    """The getter is handed what the wrapper's own forward returned (``ret = base_model(points)``, then
    ``base_model.module.get_loss_acc(ret, label)``: a loss computed from outputs DDP made, no forward of its own)."""
    wrapper = _wrapper_name(site.call)
    if wrapper is None or site.function is None:
        return False
    made = {target.id for node in walk(site.function)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == wrapper
            for target in node.targets if isinstance(target, ast.Name)}
    return any(isinstance(arg, ast.Name) and arg.id in made for arg in site.call.args)


def check_module_forward(a: Analysis) -> Iterator[Finding]:
    """DDP017 at ``model.module(x)`` / ``model.module.predict(x)`` (also through a name bound to ``model.module``, and
    ``accelerator.unwrap_model(model).get_loss(x)``) in a training step of a file that wraps a model in
    DistributedDataParallel (or lets Accelerate or Fabric wrap it), outside ``torch.no_grad()``: DDP's
    forward is bypassed, its reducer is not prepared, and that module's gradients are never averaged across ranks.
    Also a transformers Trainer subclass whose ``compute_loss``/``training_step`` runs ``self.model`` (the model
    before the Trainer wraps it) instead of the ``model`` it is handed."""
    yield from _trainer_self_model(a)
    if not ddp_in_file(a):
        return
    unwrapped: dict[int, dict[str, int]] = {}
    for site in a.flow.sites:
        method = _module_call(site.call) or _alias_call(a, site, unwrapped)
        if method is None or (method.startswith(_NOT_FORWARD) and not (
                _COMPUTES.search(method) and not _on_outputs(site))) or _under_no_grad(a, site.call):
            continue
        if not (site.call.args or site.call.keywords):  # no input, no forward (VISTA-3D's model.module.clear_cache())
            continue
        if _wrapper_runs_too(site):
            continue
        if _in_training_step(a, site):
            yield a.finding("DDP017", site.call, f"{ast.unparse(site.call.func)[:60]}(...) in a training step")


def _trainer_self_model(a: Analysis) -> Iterator[Finding]:
    """DDP017 at ``self.model(x)`` in a Trainer subclass's ``compute_loss(self, model, inputs)``: the Trainer passes
    the DDP-wrapped model as ``model`` and keeps the bare one in ``self.model``; a forward through it never prepares
    DDP's all-reduce."""
    for cls in (n for n in a.module.nodes if isinstance(n, ast.ClassDef) and hf_trainer_class(a.module, n)):
        for method in cls.body:
            if not (isinstance(method, ast.FunctionDef) and method.name in TRAINER_STEPS
                    and "model" in {p.arg for p in method.args.args}):
                continue
            for node in walk(method):
                func = node.func if isinstance(node, ast.Call) else None
                if isinstance(func, ast.Attribute) and func.attr == "forward":
                    func = func.value
                if (isinstance(func, ast.Attribute) and func.attr == "model" and isinstance(func.value, ast.Name)
                        and func.value.id == "self" and not _under_no_grad(a, node)):
                    yield a.finding("DDP017", node, f"{ast.unparse(node)[:50]} in {method.name}, which the Trainer "
                                                    "hands the wrapped `model`")
                    break


_NONFINITE = ("isfinite", "isnan", "isinf")
# a project's own check of the loss (UniRec's ``self._check_nan(loss)``, ``has_inf_or_nan(loss)``, PySOT's
# ``is_valid_number(loss.data.item())``)
_NONFINITE_NAMED = re.compile(r"(^|_)(is_?)?(nan|inf|finite|non_?finite|valid_number)(_|$)", re.IGNORECASE)


def _per_rank_test(a: Analysis, test: ast.expr, depth: int = 0) -> bool:
    """A condition each rank decides on its own data: a non-finite or zero loss (``not torch.isfinite(loss)``,
    ``loss == 0``, a project's check named for it, also through a name: ``loss_is_nan = self._check_nan(loss)``),
    an empty batch (``len(batch) == 0``, ``x.numel() == 0``); never a rank condition (DDP002)."""
    if a.ranks.is_condition(test):
        return False
    for node in walk(test):
        if isinstance(node, ast.Call) and ((last_name(node.func) or "") in _NONFINITE or (
                node.args and _NONFINITE_NAMED.search(last_name(node.func) or ""))):
            return True
        if isinstance(node, ast.Name) and depth < 2:
            _, value = a.module.resolve(node.id, node)
            if isinstance(value, ast.Call) and _per_rank_test(a, value, depth + 1):
                return True
        if isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant) and c.value == 0 and
                                                 not isinstance(c.value, bool) for c in node.comparators):
            left = node.left
            if isinstance(left, ast.Call) and last_name(left.func) in ("len", "numel", "size"):
                return True
            if "loss" in (last_name(left) or "").lower():
                return True
    return False


def _skips(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], ast.Continue)


def _skips_reduce(a: Analysis, node: ast.If, backward: int) -> bool:
    """``node``'s body holds the loop's ``backward()`` and, after it, a call of the project's that all-reduces the
    gradients (PySOT's ``reduce_gradients(model)``): a rank that fails the test skips that collective."""
    inside = {id(c) for s in node.body for c in walk(s) if isinstance(c, ast.Call)}
    return _holds_line(node.body, backward) and any(id(site.call) in inside and site.call.lineno > backward and (
        site.qual in REDUCTIONS or a.helper_reaches(site, REDUCTIONS) or _local_reduces(a, site))
        for site in a.flow.sites)


def _holds_line(body: list[ast.stmt], line: int) -> bool:
    """A node of ``body`` is on ``line`` (the loop's ``backward()``)."""
    return any(getattr(n, "lineno", 0) == line for s in body for n in walk(s))


def _local_reduces(a: Analysis, site: Site) -> bool:
    function = a.module.local_function(site.call)
    return function is not None and a.flow.reaches(function, REDUCTIONS) is not None


def _backward_line(a: Analysis, loop: ast.For | ast.While) -> int | None:
    lines = [call.lineno for call in a.module.calls_in(loop)
             if isinstance(call.func, ast.Attribute) and call.func.attr == "backward"]
    return min(lines) if lines else None


def _agreed(a: Analysis, loop: ast.For | ast.While, before: int) -> bool:
    """A collective before the skip: the ranks may have agreed on it (an all_reduce of a flag)."""
    return any(call.lineno < before and a.module.qualname(call.func) in (COLLECTIVES | REDUCTIONS)
               for call in a.module.calls_in(loop))


def check_skipped_backward(a: Analysis) -> Iterator[Finding]:
    """DDP018 at ``if not torch.isfinite(loss): continue`` (or an ``except`` that ends in ``continue``)
    before ``backward()`` in a DDP training loop: that rank skips the gradient all-reduce the others enter."""
    ddp = ddp_in_file(a)  # without DDP: only where the step skips the project's own all-reduce (PySOT's DistModule)
    seen: set[int] = set()
    for loop in (n for n in a.module.nodes if isinstance(n, ast.For | ast.While)):
        backward = _backward_line(a, loop)
        if backward is None:
            continue
        for node in walk(loop):
            if getattr(node, "lineno", backward) >= backward and not isinstance(node, ast.Try):
                continue
            if isinstance(node, ast.If) and (
                    _skips(node.body) or (_skips(node.orelse) and _holds_line(node.body, backward))) and (
                    _per_rank_test(a, node.test)):  # `if ok: backward() ... else: continue` too
                if node.lineno not in seen and not _agreed(a, loop, node.lineno) and ddp:
                    seen.add(node.lineno)
                    said = (f"{ast.unparse(node.test)[:50]}: continue before backward() at line {backward}"
                            if _skips(node.body) else
                            f"backward() at line {backward} only if {ast.unparse(node.test)[:50]}, else continue")
                    yield a.finding("DDP018", node, said)
            elif isinstance(node, ast.If) and not node.orelse and _per_rank_test(a, node.test) and (
                    node.lineno not in seen) and not _agreed(a, loop, node.lineno) and _skips_reduce(a, node, backward):
                seen.add(node.lineno)
                yield a.finding("DDP018", node, f"backward() at line {backward} and the gradient all-reduce only if "
                                                f"{ast.unparse(node.test)[:50]}, with no else")
            elif ddp and isinstance(node, ast.Try) and node.lineno < backward <= max(
                    getattr(s, "end_lineno", 0) or 0 for s in node.body):
                for handler in node.handlers:
                    if _skips(handler.body) and handler.body[-1].lineno not in seen:
                        seen.add(handler.body[-1].lineno)
                        yield a.finding("DDP018", handler.body[-1], "an exception in the step is swallowed "
                                                                    f"(continue) around backward() at line {backward}")
