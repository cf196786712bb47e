"""DDP013 in a LightningModule: a validation hook (``validation_step``, ``validation_epoch_end``,
``on_validation_epoch_end``) logs with ``self.log``/``self.log_dict`` and no ``sync_dist=True``. Lightning shards the
validation loaders across the ranks (its DistributedSampler) and, without ``sync_dist``, the epoch value rank 0's
logger records (and a ``ModelCheckpoint`` or ``EarlyStopping`` on rank 0 monitors) is the mean over rank 0's shard
only; Lightning's own docs ask for ``sync_dist=True`` when logging on epoch level in a distributed run.

Not reported: a torchmetrics object logged (``self.log("val_acc", self.val_acc)``, a ``MetricCollection``) or what its
``compute()`` returns (they synchronise themselves); a hook that gathers or reduces itself (``self.all_gather``,
``all_reduce``, the strategy's ``reduce``), or that calls a method of the class that does and does not log itself
(``self.gather_outputs(outputs)`` around a project's ``all_gather``), and the methods it hands what it gathered;
``sync_dist`` given as anything but ``False`` (but for ``rank_zero_only=True``, which turns Lightning's sync off);
a log on the side of a helper's ``if step_type == "train":`` that the
hook's constant argument (``self._step(batch, batch_idx, "val")``) does not take; Lightning's own reducing utilities
(``all_gather_ddp_if_available``, ``sync_ddp_if_available``); a module whose every ``fit`` in the file hands Lightning
no validation data (no ``val_dataloaders``, a DataModule of the file whose ``val_dataloader`` returns nothing: no
validation runs); a file that keeps Lightning from sharding the loaders (``use_distributed_sampler=False``,
``replace_sampler_ddp=False``); a ``self.log`` of a class that defines ``log`` itself (mdgen's ``def log(self, key,
data)``, which gathers before it writes: not Lightning's). The class is one whose bases (in the file) end in
``LightningModule``.

A training summary too (marked :data:`~orchestrator.doctor.confidence.TRAINING_SUMMARY`): a loss or accuracy logged on
epoch level by a training hook (``training_step`` with ``on_epoch=True``, ``on_train_epoch_end``) with no
``sync_dist=True`` is rank 0's mean over its own batches, written as the epoch's (tests/doctor/real/JUDGING.md's
metric policy); a step's value (``training_step``'s default, ``on_epoch`` off) is progress and not reported."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TypeGuard

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.confidence import LIGHTNING_LOG, TRAINING_SUMMARY
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.own_methods import reached_methods
from orchestrator.doctor.rules_prints import METRIC
from orchestrator.source.assignments import assignment_before
from orchestrator.source.branches import enclosing_ifs
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.walk import walk

# the validation hooks (the test ones often run on one device, Lightning's advice for a test: not judged)
_HOOKS = frozenset({"validation_step", "validation_step_end", "validation_epoch_end", "on_validation_epoch_end"})
# the training hooks, each with whether its self.log is on epoch level by default (Lightning's on_epoch)
_TRAINING_HOOKS = {"training_step": False, "training_step_end": False, "training_epoch_end": True,
                   "on_train_epoch_end": True}
_LOGS = frozenset({"log", "log_dict"})
_REDUCING = frozenset({"all_gather", "all_reduce", "reduce", "gather", "all_gather_object", "sync",
                       # Lightning's own utilities (pytorch_lightning.utilities.distributed)
                       "all_gather_ddp_if_available", "sync_ddp_if_available", "sync_ddp", "gather_all_tensors"})
_NOT_SYNCED = {False: "no sync_dist=True", True: "rank_zero_only=True (Lightning then skips sync_dist)"}
_UNSHARDED = frozenset({"use_distributed_sampler", "replace_sampler_ddp"})


def check_unsynced_logs(a: Analysis) -> Iterator[Finding]:
    """DDP013 at each ``self.log``/``self.log_dict`` of a LightningModule's validation hook with no
    ``sync_dist=True``, also in the class's methods the hook calls (``self.log_metrics(loss, y_hat, y, "val")``,
    ProteinWorkshop's, through ``_do_step``), each call once; and at a training hook's log of a loss or accuracy on
    epoch level (a training summary)."""
    if _unsharded(a.module.tree):
        return
    classes = {node.name: node for node in a.module.tree.body if isinstance(node, ast.ClassDef)}
    said: set[int] = set()
    for cls in _lightning_modules(classes):
        methods = _methods(cls, classes, 0)
        validates = "val_dataloader" in methods or not _no_validation_data(a, classes)  # else no validation runs
        for name in sorted(_HOOKS & methods.keys()) if validates else []:
            for call in _unsynced_calls(a, methods, methods[name], said):
                yield a.finding("DDP013", call, f"{ast.unparse(call)[:60]} in {cls.name}.{name} with "
                                f"{_NOT_SYNCED[_rank_zero_only(call)]}: the epoch value is the mean over rank 0's "
                                "shard of the validation set, which Lightning splits across the ranks",
                                confidence="likely", marks=frozenset({LIGHTNING_LOG}))
        for name in sorted(_TRAINING_HOOKS.keys() & methods.keys()):
            for call in _unsynced_calls(a, methods, methods[name], said):
                if _on_epoch(call, _TRAINING_HOOKS[name]) and _of_a_metric(call):
                    yield a.finding("DDP013", call, f"{ast.unparse(call)[:60]} in {cls.name}.{name} on epoch level "
                                    f"with {_NOT_SYNCED[_rank_zero_only(call)]}: the epoch's training value is the "
                                    "mean over rank 0's own batches, logged as the epoch's", confidence="likely",
                                    marks=frozenset({TRAINING_SUMMARY, LIGHTNING_LOG}))


def _unsynced_calls(a: Analysis, methods: dict[str, _Function], hook: _Function, said: set[int]) -> Iterator[ast.Call]:
    """The hook's ``self.log`` calls with no sync (also in the class's methods it calls), each call once (``said``);
    none where what it hands its helpers, or what they give back, is gathered."""
    reached = reached_methods(hook, methods, 3)  # ProteinWorkshop's log is three calls down
    if _reduces(hook) or any(_reduces(f) for f in reached if f is not hook and not _logs(f)):
        return  # what it hands its helpers is gathered (ZeroFlow's metric.gather(self.all_gather)), or
        # what its helper gives it back (AdaFace's self.gather_outputs(outputs) -> utils.all_gather)
    for function in reached:
        if _reduces(function):
            continue
        given = _constants_given(hook, function)
        for call in walk(function):
            if id(call) in said or not _unsynced(call, a) or last_name(call.func) in methods or _branch_not_taken(
                    a, call, given) or _of_own_data(a, call, methods):
                continue  # (a ``log`` the class defines itself is its own, not Lightning's: mdgen's gathers)
            said.add(id(call))
            yield call


def _of_own_data(a: Analysis, call: ast.Call, methods: dict[str, _Function]) -> bool:
    """The logged value comes from a method of the class that fetches its own loaders (point2vec's ``svm_train_acc,
    svm_val_acc = self.svm_validation(datamodule)``, which iterates ``datamodule.train_dataloader()`` and fits an SVM):
    Lightning shards only the loaders it asks for, so the value is the whole set's on every rank."""
    logs_one = isinstance(call.func, ast.Attribute) and call.func.attr == "log"
    value = call.args[1] if logs_one and len(call.args) > 1 else None
    if not isinstance(value, ast.Name):
        return False
    statement = assignment_before(value.id, call, a.module.parents)
    if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)):
        return False
    func = statement.value.func
    helper = methods.get(func.attr) if isinstance(func, ast.Attribute) and dotted(func.value) == "self" else None
    return helper is not None and any(isinstance(n, ast.Call) and last_name(n.func) in _OWN_LOADERS
                                      for n in walk(helper))


_OWN_LOADERS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "DataLoader"})


def _of_a_metric(call: ast.Call) -> bool:
    """The log's names say a loss or an accuracy (``self.log("train_loss", ...)``, a ``log_dict`` of such keys); where
    a name is not written in, the value's text does."""
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in ("name", "dictionary")),
                                                None)
    if isinstance(given, ast.Dict) and given.keys and all(isinstance(k, ast.Constant) for k in given.keys):
        return any(METRIC.search(str(k.value)) for k in given.keys if isinstance(k, ast.Constant))
    if isinstance(given, ast.Constant):
        return METRIC.search(str(given.value)) is not None
    return METRIC.search(ast.unparse(call)) is not None


def _on_epoch(call: ast.Call, default: bool) -> bool:
    """The log is on epoch level: ``on_epoch=True`` written in, or the hook's default where it is not given."""
    given = next((k.value for k in call.keywords if k.arg == "on_epoch"), None)
    if given is None:
        return default
    return isinstance(given, ast.Constant) and given.value is True


_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _methods(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], depth: int) -> dict[str, _Function]:
    """The class's methods by name, its bases' of the file included (the class's own win)."""
    found: dict[str, _Function] = {}
    for base in cls.bases:
        name = last_name(base) or ""
        if depth < 4 and name in classes and classes[name] is not cls:
            found.update(_methods(classes[name], classes, depth + 1))
    found.update({node.name: node for node in cls.body if isinstance(node, _Function)})
    return found


def _lightning_modules(classes: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    """The file's classes (``classes``, by name) built on ``LightningModule``, directly or through another of them."""

    def based(cls: ast.ClassDef, depth: int) -> bool:
        for base in cls.bases:
            name = last_name(base) or ""
            if name.endswith("LightningModule"):
                return True
            if depth < 4 and name in classes and classes[name] is not cls and based(classes[name], depth + 1):
                return True
        return False

    return [cls for cls in classes.values() if based(cls, 0)]


def _unsynced(node: ast.AST, a: Analysis) -> TypeGuard[ast.Call]:
    """``self.log(name, value)`` / ``self.log_dict(values)`` with no ``sync_dist`` but ``False``, of a value that
    does not synchronise itself (also through the name it is held in: ``value = metric.compute()``); not one handed a
    ``**kwargs`` spread that may carry ``sync_dist`` (``_spread_may_sync``)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _LOGS
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
        return False
    if any(k.arg is None for k in node.keywords) and _spread_may_sync(node, a):
        return False
    sync = next((k.value for k in node.keywords if k.arg == "sync_dist"), None)
    if sync is not None and not (isinstance(sync, ast.Constant) and sync.value is False) and not _rank_zero_only(node):
        return False
    value_at = 1 if node.func.attr == "log" else 0
    value = next((k.value for k in node.keywords if k.arg in ("value", "dictionary")),
                 node.args[value_at] if len(node.args) > value_at else None)
    if isinstance(value, ast.Name):
        _, held = a.module.resolve(value.id, value)
        value = held if held is not None else value
    return value is not None and not _synchronises(value)


def _spread_may_sync(node: ast.Call, a: Analysis) -> bool:
    """The log's ``**`` spread may carry ``sync_dist``: it is not the method's own ``**kwargs``, or a call of the method
    passes ``sync_dist`` (context_general_bci's ``self.common_log(metrics, ..., sync_dist=True)``) or a spread of its
    own, or no call of it is in sight. Where every call is seen and none passes it (GR-MG's ``self._log_output(output,
    phase="val", on_epoch=True, on_step=False)``), the log is not synced."""
    function = a.module.function_of(node)
    kwarg = function.args.kwarg.arg if function is not None and function.args.kwarg is not None else None
    spreads = [k.value for k in node.keywords if k.arg is None]
    if kwarg is None or not all(isinstance(v, ast.Name) and v.id == kwarg for v in spreads):
        return True
    assert function is not None
    calls = [n for n in a.module.nodes if isinstance(n, ast.Call) and last_name(n.func) == function.name]
    return not calls or any(k.arg in (None, "sync_dist") for call in calls for k in call.keywords)


def _rank_zero_only(node: ast.Call) -> bool:
    """``rank_zero_only=True`` written in: Lightning's sync function is then its no-op (``_Sync``), ``sync_dist`` or
    not, and rank 0 logs its own shard's value."""
    return any(k.arg == "rank_zero_only" and isinstance(k.value, ast.Constant) and k.value.value is True
               for k in node.keywords)


def _synchronises(value: ast.expr) -> bool:
    """A torchmetrics object (``self.val_acc``), what its ``compute()`` returns, or a dict of those."""
    if isinstance(value, ast.Dict):
        return bool(value.values) and all(_synchronises(v) for v in value.values)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return True
    return isinstance(value, ast.Call) and last_name(value.func) == "compute"


def _reduces(hook: _Function) -> bool:
    """A call of a reducing name, or Lightning's ``self.all_gather`` handed on (``metric.gather(self.all_gather)``)."""
    return any((isinstance(n, ast.Call) and (last_name(n.func) or "") in _REDUCING)
               or (isinstance(n, ast.Attribute) and n.attr == "all_gather") for n in walk(hook))


def _constants_given(hook: _Function, helper: _Function) -> dict[str, object]:
    """The constants the hook hands its method ``helper`` (``self._step(batch, batch_idx, step_type="val")`` for ``def
    _step(self, batch, batch_idx, step_type)``): parameter -> value, where every call of it in the hook agrees."""
    params = [p.arg for p in (*helper.args.posonlyargs, *helper.args.args)][1:]
    calls = [n for n in walk(hook) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == helper.name and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"]
    given: dict[str, object] = {}
    for index, call in enumerate(calls):
        passed = {**dict(zip(params, call.args, strict=False)), **{k.arg: k.value for k in call.keywords if k.arg}}
        values: dict[str, object] = {name: v.value for name, v in passed.items() if isinstance(v, ast.Constant)}
        given = values if index == 0 else {k: v for k, v in given.items() if values.get(k, object()) == v}
    return given


def _branch_not_taken(a: Analysis, node: ast.AST, given: dict[str, object]) -> bool:
    """``node`` sits on the side of an ``if step_type == "train":`` (``!=``, ``in (...)``) that the constant the hook
    passes for ``step_type`` does not take: the validation hook never runs it."""
    return bool(given) and any((verdict := _test_value(statement.test, given)) is not None and verdict is not in_body
                               for statement, in_body in enclosing_ifs(a.module.parents, node))


def _test_value(test: ast.expr, given: dict[str, object]) -> bool | None:
    """What ``param == CONST`` (``!=``, ``in``/``not in`` a tuple or list of constants) is, with ``given``'s value."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id in given):
        return None
    value, op, right = given[test.left.id], test.ops[0], test.comparators[0]
    if isinstance(op, ast.Eq | ast.NotEq) and isinstance(right, ast.Constant):
        return (value == right.value) == isinstance(op, ast.Eq)
    if isinstance(op, ast.In | ast.NotIn) and isinstance(right, ast.Tuple | ast.List | ast.Set) and all(
            isinstance(e, ast.Constant) for e in right.elts):
        return (value in [e.value for e in right.elts if isinstance(e, ast.Constant)]) == isinstance(op, ast.In)
    return None


def _logs(function: _Function) -> bool:
    """The method logs itself (``self.log``/``self.log_dict``): one that reduces and logs is judged on its own."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _LOGS
               and isinstance(n.func.value, ast.Name) and n.func.value.id == "self" for n in walk(function))


def _unsharded(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.keyword) and n.arg in _UNSHARDED and isinstance(n.value, ast.Constant)
               and n.value.value is False for n in walk(tree))


def _no_validation_data(a: Analysis, classes: dict[str, ast.ClassDef]) -> bool:
    """Every ``.fit(...)`` of the file hands Lightning no validation data (MolFormer's ``trainer.fit(model,
    train_loader)``, ``train_loader`` a DataModule of the file whose ``val_dataloader`` returns nothing): no
    ``val_dataloaders``, and each DataModule given is one of the file's whose ``val_dataloader`` is missing or returns
    no value. False where there is no ``fit`` call, or a data argument cannot be read."""
    fits = [n for n in a.module.nodes
            if isinstance(n, ast.Call) and last_name(n.func) == "fit" and _may_be_lightnings(a, n)]
    for fit in fits:
        given = {k.arg: k.value for k in fit.keywords}
        if len(fit.args) > 2 or not _none(given.get("val_dataloaders")) or None in given:
            return False  # a validation loader, or **kwargs
        data = [*fit.args[1:2], *(v for k, v in given.items() if k in ("train_dataloaders", "datamodule"))]
        for value in data:
            made = a.module.resolve(value.id, value)[1] if isinstance(value, ast.Name) else value
            cls = classes.get(last_name(made.func) or "") if isinstance(made, ast.Call) else None
            if cls is None and value is given.get("datamodule"):
                return False
            if cls is not None and not _returns_nothing(_methods(cls, classes, 0).get("val_dataloader")):
                return False
    return bool(fits)


def _may_be_lightnings(a: Analysis, fit: ast.Call) -> bool:
    """A ``.fit`` that may be a Lightning Trainer's: not one of an object the file makes from a library whose models
    have a ``fit`` of their own (point2vec's ``svm = SVC(...); svm.fit(x_train, y_train)`` in its validation hook)."""
    receiver = fit.func.value if isinstance(fit.func, ast.Attribute) else None
    made = a.module.resolve(receiver.id, receiver)[1] if isinstance(receiver, ast.Name) else None
    qualified = a.module.qualname(made.func) if isinstance(made, ast.Call) else None
    return (qualified or "").split(".")[0] not in _OTHER_FITS


# libraries whose estimators have a fit method (never Lightning's)
_OTHER_FITS = frozenset({"sklearn", "xgboost", "lightgbm", "catboost", "umap", "hdbscan", "cuml", "statsmodels",
                         "keras", "tensorflow", "faiss"})


def _none(value: ast.expr | None) -> bool:
    return value is None or (isinstance(value, ast.Constant) and value.value is None)


def _returns_nothing(method: _Function | None) -> bool:
    """A ``val_dataloader`` that is missing, ``pass``, or returns only ``None``."""
    if method is None:
        return True
    nodes = walk(method)
    return all(_none(n.value) for n in nodes if isinstance(n, ast.Return)) and not any(
        isinstance(n, ast.Yield | ast.YieldFrom) for n in nodes)

