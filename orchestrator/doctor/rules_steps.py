"""DDP017 (a forward through the DDP wrapper's ``.module`` in a training step) and DDP018 (a training step's
backward skipped on one rank by a data-dependent ``continue``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.source.analysis import COLLECTIVES, REDUCTIONS, WRAPPERS
from orchestrator.source.flow import Site
from orchestrator.source.names import last_name

# Methods of a module that run no forward (bookkeeping, I/O, sampling noise or generating without gradients).
_NOT_FORWARD = ("state_dict", "load_state_dict", "parameters", "named_parameters", "buffers", "named_buffers",
                "modules", "named_modules", "children", "named_children", "train", "eval", "to", "cuda", "cpu",
                "half", "float", "bfloat16", "zero_grad", "apply", "requires_grad_", "save_pretrained",
                "register_buffer", "register_forward_hook", "get_", "set_", "sample", "generate", "print_",
                "reset", "load_", "save", "init_", "gradient_checkpointing")
# a function named for an evaluation: its forwards make no gradient step
_EVALUATION = re.compile(r"(?i)valid|eval|test|infer|predict|visuali[sz]")
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.set_grad_enabled"})


def _ddp_in_file(a: Analysis) -> bool:
    ddp = {q for q in WRAPPERS if "Distributed" in q}
    return bool(a.sites(frozenset(ddp))) or not a.helper_quals.isdisjoint(ddp)


def _module_call(call: ast.Call) -> str | None:
    """``x.module(...)`` -> ``forward``; ``x.module.predict(...)`` -> ``predict``; anything else: None."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "module":
        return "forward"
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and func.value.attr == "module":
        return func.attr
    return None


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


def check_module_forward(a: Analysis) -> Iterator[Finding]:
    """DDP017 at ``model.module(x)`` / ``model.module.predict(x)`` in a training step of a file that wraps a
    model in DistributedDataParallel, outside ``torch.no_grad()``: DDP's forward is bypassed, its reducer is
    not prepared, and that module's gradients are never averaged across ranks."""
    if not _ddp_in_file(a):
        return
    for site in a.flow.sites:
        method = _module_call(site.call)
        if method is None or method.startswith(_NOT_FORWARD) or _under_no_grad(a, site.call):
            continue
        if _in_training_step(a, site):
            yield a.finding("DDP017", site.call, f"{ast.unparse(site.call.func)[:60]}(...) in a training step")


_NONFINITE = ("isfinite", "isnan", "isinf")


def _per_rank_test(a: Analysis, test: ast.expr) -> bool:
    """A condition each rank decides on its own data: a non-finite or zero loss (``not torch.isfinite(loss)``,
    ``loss == 0``), an empty batch (``len(batch) == 0``, ``x.numel() == 0``); never a rank condition (DDP002)."""
    if a.ranks.is_condition(test):
        return False
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and (last_name(node.func) or "") in _NONFINITE:
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
    if not _ddp_in_file(a):
        return
    seen: set[int] = set()
    for loop in (n for n in a.module.nodes if isinstance(n, ast.For | ast.While)):
        backward = _backward_line(a, loop)
        if backward is None:
            continue
        for node in ast.walk(loop):
            if getattr(node, "lineno", backward) >= backward and not isinstance(node, ast.Try):
                continue
            if isinstance(node, ast.If) and _skips(node.body) and _per_rank_test(a, node.test):
                if node.lineno not in seen and not _agreed(a, loop, node.lineno):
                    seen.add(node.lineno)
                    yield a.finding("DDP018", node, f"{ast.unparse(node.test)[:50]}: continue before backward() "
                                                    f"at line {backward}")
            elif isinstance(node, ast.Try) and node.lineno < backward <= max(
                    getattr(s, "end_lineno", 0) or 0 for s in node.body):
                for handler in node.handlers:
                    if _skips(handler.body) and handler.body[-1].lineno not in seen:
                        seen.add(handler.body[-1].lineno)
                        yield a.finding("DDP018", handler.body[-1], "an exception in the step is swallowed "
                                                                    f"(continue) around backward() at line {backward}")
