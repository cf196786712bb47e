"""DDP013: a validation/test metric summed over the rank's own shard (a loader with a DistributedSampler)
and printed or logged under a rank-0 guard with no all_reduce / all_gather / reduce of it: the number
shown is rank 0's shard only (1/world of the data), not the model's.

Under Fabric or Accelerate the loaders handed to ``fabric.setup_dataloaders`` / ``accelerator.prepare`` are
sharded too (and a HF Trainer's ``get_eval_dataloader``), and ``fabric.print``, ``accelerator.print``, their
``log``/``log_dict`` and a Trainer's ``log`` write on rank 0.

What counts as a reduction: a torch.distributed reduction of the value (or of a name it is computed
from), or a call whose name says it reduces or gathers (``all_reduce``, ``reduce_tensor``, ``gather``,
``synchronize_between_processes``, ``sync``), the script's or a helper's: in the evaluating function, when the
value is summed in a function of the file; in the function that sums and prints it, one handed that value (or
nothing the reader can follow), as ``metric_sums.covers`` says.

A training summary (marked :data:`~orchestrator.doctor.confidence.TRAINING_SUMMARY`): the epoch's or the run's
training loss or accuracy, summed over the rank's own batches in the training loop and shown by rank 0 after that loop
(``epoch_loss += loss.item()``, then under ``if rank == 0:`` ``print("train loss", epoch_loss / len(loader))``) is
one rank's share of the epoch presented as the epoch's. A value shown inside the batch loop (a step's, a window's: a
progress line) is not one (tests/doctor/real/JUDGING.md, the metric policy).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.confidence import TRAINING_SUMMARY
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.loglevels import main_rank_only, quieted_loggers
from orchestrator.doctor.metric_sums import (
    accumulations,
    assigned_before,
    assignment_before,
    collected,
    covers,
    derived,
    loop_holding,
    names_in,
    refs,
)
from orchestrator.doctor.own_methods import REDUCING as _REDUCING
from orchestrator.doctor.own_methods import body_reduces, own_method, unchained
from orchestrator.doctor.rules_prints import BAR_TEXT, METRIC, is_log, is_reduced, reduced_names
from orchestrator.doctor.shard_loaders import SHARDING, sharded
from orchestrator.source.exprnames import FunctionNode, dotted, last_name, parameter_names
from orchestrator.source.flow import Site
from orchestrator.source.walk import walk

_MAX_DEPTH = 3
# an evaluation's figure by name, for a value that comes from a loop over the rank's shard: the loss and accuracy
# names of any print (``METRIC``), and the scores of segmentation, restoration, detection and text tasks
_EVALUATED = re.compile(METRIC.pattern + r"|score|dice|psnr|ssim|bleu|rouge|(^|_)m?(iou|auc|mae|mse|rmse)($|_)",
                        re.IGNORECASE)
# the frameworks' prints and logs, which write on rank 0 only
_RANK_ZERO_OUTPUT = frozenset(f"{owner}.{method}" for owner in ("lightning.fabric.Fabric", "accelerate.Accelerator")
                              for method in ("print", "log", "log_dict"))


def check_unreduced_metrics(a: Analysis) -> Iterator[Finding]:
    """DDP013 at a print/log of a metric outside the training loop's body, on rank 0 only (a rank
    condition, or a helper like ``print0``) or on every rank after training (DDP005 owns prints inside
    the training loop on every rank)."""
    if not (a.data_parallel or a.framework_parallel or _trainer_shards(a)):
        return
    _LOOPS.clear()
    _SUMS.clear()
    _HELPER_LOOPS.clear()
    reduced = reduced_names(a)
    quieted: set[str] | None = None  # the loggers quieted off rank 0, read once and only for a training summary
    for site in a.flow.sites:
        rank_zero = _rank_zero_output(a, site)
        # a print in the training loop on every rank is DDP005's, unless what it shows is an evaluation's over the
        # rank's shard (``eval_metrics = accumulator.reduce()`` after a loop over the evaluation loader): then here
        if not (is_log(site, a.module) or rank_zero or _prints_on_rank_zero(a, site)):
            continue
        parts = [*site.call.args, *[k.value for k in site.call.keywords]]
        last = last_batch(a, site, parts)
        if last is not None:
            yield last
            continue
        metrics = [n for part in parts for n in _shown(a, site, part) if _EVALUATED.search(n.id)]
        unreduced = [name for name in metrics if not is_reduced(a, [name], reduced)]
        for name in unreduced:
            loop = _shard_loop(a, name, site.function, site.call.lineno, 0)
            if loop is not None:
                yield a.finding("DDP013", site.call, f"{name.id} comes from the loop at {_where(loop)} over "
                                                     "the rank's own shard")
                break
        else:
            if unreduced:
                quieted = quieted_loggers(a) if quieted is None else quieted
                if (rank_zero or a.flow.guarded(site) or _prints_on_rank_zero(a, site)
                        or main_rank_only(a, site, quieted)):
                    yield from _training_summary(a, site, unreduced)


def _where(loop: ast.For) -> str:
    """``line 88``, or ``evaluate_multigpus.py:18`` for a helper module's loop."""
    helper = _HELPER_LOOPS.get(id(loop))
    return f"{helper[1]}:{loop.lineno}" if helper is not None and helper[0] is loop else f"line {loop.lineno}"


def _training_summary(a: Analysis, site: Site, metrics: list[ast.Name]) -> Iterator[Finding]:
    """DDP013 at rank 0's print of a training summary: the first of ``metrics`` summed over the rank's own batches in
    a training loop that ends before the print."""
    if isinstance(site.call.func, ast.Attribute) and site.call.func.attr in BAR_TEXT:
        return  # a progress bar's text: progress, whatever it sums
    for name in metrics:
        loop = _shard_loop(a, name, site.function, site.call.lineno, 0, training=True)
        if loop is not None:
            yield a.finding("DDP013", site.call, f"{name.id} sums this rank's own batches in the training loop at line "
                                                 f"{loop.lineno}: one rank's share, shown as the whole epoch's",
                            marks=frozenset({TRAINING_SUMMARY}))
            return


def last_batch(a: Analysis, site: Site, parts: list[ast.expr]) -> Finding | None:
    """``print(psnr)`` after ``total_psnr += psnr`` over the shard was reduced: the value shown is the rank's last
    batch's, not the reduced total."""
    scope: ast.AST = site.function or a.module.tree
    shown = names_in(parts)
    for loop in _loops(scope):
        end = loop.end_lineno or loop.lineno
        if end >= site.call.lineno or loop.lineno < getattr(scope, "lineno", 0) or a.trains(loop):
            continue
        for total, added in _sums(loop).items():
            batch = sorted((shown & names_in(added)) - {total} - _sums(loop).keys())
            if total in shown or not batch or not _reduces(a, scope, (end, site.call.lineno), {total}):
                continue
            name = batch[0]
            if assigned_before(loop, name, end + 1) is None or _assigned_between(scope, name, end, site.call.lineno):
                continue
            if _loop_sharded(a, loop):
                return a.finding("DDP013", site.call, f"{name} is this rank's last batch's value from the loop at "
                                                      f"line {loop.lineno}; the reduced total is {total}")
    return None


def _replaced_between(scope: ast.AST, name: str, start: int, end: int) -> bool:
    """``name`` is given a value between the lines that does not read it (``total = total / n`` keeps the sum)."""
    return any(isinstance(n, ast.Assign) and name not in names_in([n.value])
               for n in _assigned_between(scope, name, start, end))


def _assigned_between(scope: ast.AST, name: str, start: int, end: int) -> list[ast.Assign | ast.AugAssign]:
    """The assignments to ``name`` (``=``, ``+=``) strictly between the lines."""
    return [n for n in walk(scope) if isinstance(n, ast.Assign | ast.AugAssign) and start < n.lineno < end
            and name in names_in(n.targets if isinstance(n, ast.Assign) else [n.target])]


def _shown(a: Analysis, site: Site, part: ast.expr) -> list[ast.Name]:
    """The names ``part`` shows: its own, and those in the values of a dict it names (``results = {"loss":
    total / n}``, then ``trainer.log(results)``)."""
    shown = [n for n in walk(part) if isinstance(n, ast.Name)]
    if isinstance(part, ast.Name) and not METRIC.search(part.id):
        value = assigned_before(site.function or a.module.tree, part.id, site.call.lineno)
        if isinstance(value, ast.Dict):
            shown += [n for v in value.values for n in walk(v) if isinstance(n, ast.Name)]
    return shown


def _rank_zero_output(a: Analysis, site: Site) -> bool:
    """``fabric.print``, ``accelerator.log``, a HF Trainer's ``trainer.log(metrics)``: written on rank 0 only."""
    return site.qual in _RANK_ZERO_OUTPUT or ((site.qual or "").endswith(".log") and _of_trainer(a, site.call))


def _of_trainer(a: Analysis, call: ast.Call) -> bool:
    """``trainer.<method>(...)`` where ``trainer`` is a HF ``Trainer``/``Seq2SeqTrainer`` the file builds."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if not isinstance(receiver, ast.Name):
        return False
    _, made = a.module.resolve(receiver.id, receiver)
    return isinstance(made, ast.Call) and (last_name(made.func) or "").endswith("Trainer")


def _trainer_shards(a: Analysis) -> bool:
    """The file reads a HF Trainer's evaluation loader (``trainer.get_eval_dataloader(ds)``): the Trainer runs
    data-parallel under a launcher and shards it."""
    return any(SHARDING.match(last_name(s.call.func) or "") and _of_trainer(a, s.call) for s in a.flow.sites)


def _prints_on_rank_zero(a: Analysis, site: Site) -> bool:
    """``print0(...)``: a function of this file whose prints all sit under a rank condition."""
    target = a.module.local_function(site.call)
    if target is None:
        return False
    logs = [s for s in a.flow.sites_in(target) if is_log(s)]
    return bool(logs) and all(s.branch is not None or a.flow.leaves_one(s) for s in logs)


def _shard_loop(a: Analysis, name: ast.Name, function: FunctionNode | None, before: int,
                depth: int, *, training: bool = False) -> ast.For | None:
    """The non-training loop (``training``: a training loop too) over a sharded loader that accumulates ``name`` (or
    what it is computed from), in ``function`` or in the local functions whose result it is; None when there is none
    or the evaluating function reduces."""
    if depth > _MAX_DEPTH:
        return None
    scope: ast.AST = function if function is not None else a.module.tree
    for loop in _loops(scope):
        added = _sums(loop).get(name.id)
        end = loop.end_lineno or loop.lineno
        if end < before and added is not None and (training or not a.trains(loop)) and _loop_sharded(a, loop) and (
                not _replaced_between(scope, name.id, end, before)):  # a print after the loop (inside it: a running
            # value, a progress line), of what the loop summed (not a new value of the name: ``parts = []`` again)
            if collected(loop, name.id) and _read_by_method(a, name):
                return None  # ``metric.update(...)`` then ``metric.compute()``: the metric object's own reading
            names = derived(loop, {name.id} | refs(added, a.module.aliases), a.module.aliases)
            return None if _reduces(a, scope, (loop.lineno, before), names) else loop
    assignment = assignment_before(scope, name.id, before)
    value = assignment.value if assignment is not None else None
    last = loop_holding(_loops(scope), assignment, before) if assignment is not None else None
    if not training and assignment is not None and last is not None and not a.trains(last) and (
            _loop_sharded(a, last)):
        # ``for batch in val_loader: val_loss = model(batch).loss.item()``, shown after it: the last batch's value
        names = derived(last, {name.id} | names_in([assignment.value]), a.module.aliases)
        return None if _reduces(a, scope, (last.lineno, before), names) else last
    if isinstance(value, ast.Call):
        receiver = value.func.value if isinstance(value.func, ast.Attribute) else None
        if isinstance(receiver, ast.Name) and receiver.id not in a.module.aliases and assignment is not None:
            # ``val_loss = losses.mean()``, ``val_loss = val_loss.item()``: the value the method reads
            return _shard_loop(a, receiver, function, assignment.lineno, depth + 1, training=training)
        return _call_shard_loop(a, value, sharded_args=_any_sharded(a, value), depth=depth + 1, training=training)
    if value is not None:
        for inner in walk(value):
            if isinstance(inner, ast.Name) and inner.id != name.id:
                found = _shard_loop(a, inner, function, before, depth + 1, training=training)
                if found is not None:
                    return found
    return None


def _call_shard_loop(a: Analysis, call: ast.Call, *, sharded_args: bool, depth: int,
                     training: bool = False) -> ast.For | None:
    """In the local function ``call`` calls (and those it calls), an accumulating non-training loop that reads a
    sharded loader (its own, or one the caller passed); ``training``: a training loop too, whose sum is returned."""
    target = a.module.local_function(call)
    if target is None and depth <= _MAX_DEPTH and not training and _any_sharded(a, call):
        return _helper_shard_loop(a, call)  # handed the shard itself (not a helper of a function that was)
    if target is None or depth > _MAX_DEPTH or _reduces(a, target):
        return None
    returned = _returned_names(target)
    for loop in _loops(target):
        summed = any(isinstance(n, ast.AugAssign) for n in walk(loop))
        kept = not returned.isdisjoint(_sums(loop))  # a training loop's own sum is returned (not ``step += 1``)
        if not ((training and kept) if a.trains(loop) else (summed or kept)):
            continue
        if _loop_sharded(a, loop) or (sharded_args and _iterates_parameter(loop, target)):
            return loop
    for inner in a.module.calls_in(target):
        found = _call_shard_loop(a, inner, sharded_args=sharded_args or _any_sharded(a, inner), depth=depth + 1,
                                 training=training)
        if found is not None:
            return found
    return None


def _helper_shard_loop(a: Analysis, call: ast.Call) -> ast.For | None:
    """In a project module's function handed the rank's shard (snl_unet's ``evaluate(model, net, val_loader, device)``
    of evaluate_multigpus.py), an evaluation loop over that parameter that sums, where the function reduces nothing."""
    qual = a.module.qualname(call.func)
    found = a.project.definition(qual) if a.project is not None and qual else None
    if found is None or not isinstance(function := found[2], FunctionNode):
        return None
    path, module = found[0], found[1]
    calls = [n for n in walk(function) if isinstance(n, ast.Call)]
    if any(_REDUCING.search(last_name(c.func) or "") and module.qualname(c.func) not in _DEVICE_SYNC for c in calls):
        return None
    returned = _returned_names(function)
    for loop in (n for n in walk(function) if isinstance(n, ast.For)):
        trains = any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward"
                     for c in walk(loop) if isinstance(c, ast.Call))
        summed = any(isinstance(n, ast.AugAssign) for n in walk(loop)) or not returned.isdisjoint(accumulations(loop))
        if not trains and summed and _iterates_parameter(loop, function):
            _HELPER_LOOPS[id(loop)] = (loop, path.name)
            return loop
    return None


def _iterates_parameter(loop: ast.For, function: FunctionNode) -> bool:
    params = set(parameter_names(function))
    return any(isinstance(n, ast.Name) and n.id in params for n in walk(loop.iter)) or any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
        and n.func.value.id in params for n in walk(loop))


def _any_sharded(a: Analysis, call: ast.Call) -> bool:
    return any(sharded(a, x, 0) for x in [*call.args, *[k.value for k in call.keywords]]
               if isinstance(x, ast.Name | ast.Attribute))


def _loop_sharded(a: Analysis, loop: ast.For) -> bool:
    """The loop iterates over a sharded loader, or pulls batches from one (``val_loader.next_batch()``)."""
    if sharded(a, loop.iter, 0):
        return True
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and "batch" in n.func.attr
               and sharded(a, n.func.value, 0) for n in walk(loop))


def _returned_names(function: FunctionNode) -> set[str]:
    """The names ``function`` returns, and those their last values are computed from (``out = losses.mean();
    return out``)."""
    names = names_in([r.value for r in walk(function) if isinstance(r, ast.Return) and r.value is not None])
    values = [v for n in names if (v := assigned_before(function, n, function.end_lineno or 0)) is not None]
    return names | names_in(values)


def _read_by_method(a: Analysis, name: ast.Name) -> bool:
    """``metric.compute()``: ``name`` read through a method call of its own (a metric object that may sync its state;
    not one of a class of this file whose method reads only this process's sums)."""
    attribute = a.module.parents.get(name)
    if not (isinstance(attribute, ast.Attribute) and isinstance(call := a.module.parents.get(attribute), ast.Call)
            and call.func is attribute):
        return False
    own = own_method(a, call)
    return own is None or body_reduces(own)


_DEVICE_SYNC = frozenset(f"torch.{device}.synchronize" for device in ("cuda", "xpu", "mps", "npu", "cpu"))
_LOOPS: dict[int, tuple[ast.AST, list[ast.For]]] = {}
_HELPER_LOOPS: dict[int, tuple[ast.For, str]] = {}  # a helper module's evaluation loop: its file's name
_SUMS: dict[int, tuple[ast.For, dict[str, list[ast.expr]]]] = {}


def _loops(scope: ast.AST) -> list[ast.For]:
    """The for-loops in ``scope`` (cached per scope for the run of this rule)."""
    cached = _LOOPS.get(id(scope))
    if cached is None or cached[0] is not scope:
        cached = (scope, [n for n in walk(scope) if isinstance(n, ast.For)])
        _LOOPS[id(scope)] = cached
    return cached[1]


def _sums(loop: ast.For) -> dict[str, list[ast.expr]]:
    """What ``loop`` accumulates (``metric_sums.accumulations``), cached per loop for the run of this rule."""
    cached = _SUMS.get(id(loop))
    if cached is None or cached[0] is not loop:
        cached = (loop, accumulations(loop))
        _SUMS[id(loop)] = cached
    return cached[1]


def _reduces(a: Analysis, scope: ast.AST, lines: tuple[int, int] | None = None, names: set[str] | None = None) -> bool:
    """``scope`` (between ``lines``, when given) calls something that reduces or gathers (one of ``names``, when
    given: ``metric_sums.covers``)."""
    for call in a.module.calls_in(scope):
        if lines is not None and not lines[0] <= call.lineno <= lines[1]:
            continue
        own = own_method(a, call)
        reducing = (_REDUCING.search(last_name(call.func) or "") is not None if own is None
                    else body_reduces(own)) or _synced_compute(a, call)
        if not reducing:
            q = a.module.qualname(call.func)
            reach = a.project.reach(q) if a.project is not None and q else None
            reducing = reach is not None and any(_REDUCING.search(x.rsplit(".", 1)[-1]) for x in reach.quals)
        if reducing and (names is None or covers(call, scope, names, a.module.aliases)):
            return True
    return False


def _synced_compute(a: Analysis, call: ast.Call) -> bool:
    """``metric.compute()`` of a TorchMetrics metric (``metric = torchmetrics.Accuracy(...)``): it syncs its state
    across the processes before computing (``sync_on_compute`` is on by default)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "compute"
            and isinstance(func.value, ast.Name | ast.Attribute)):
        return False
    receiver = func.value
    key = dotted(receiver)
    made = [v for v in (a.module.values_anywhere(key) if key is not None else []) if isinstance(v, ast.Call)]
    if isinstance(receiver, ast.Name):
        _, value = a.module.resolve(receiver.id, receiver)
        made += [value] if isinstance(value, ast.Call) else []
    made = [unchained(m) for m in made]  # ``torchmetrics.Accuracy(...).to(device)``: the metric made
    return any((a.module.qualname(m.func) or "").startswith("torchmetrics.")
               and not any(k.arg == "sync_on_compute" and isinstance(k.value, ast.Constant) and k.value.value is False
                           for k in m.keywords) for m in made)
