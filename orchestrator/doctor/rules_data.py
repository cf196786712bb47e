"""DDP003 (a DataLoader that does not shard) and DDP004 (a shuffling DistributedSampler without set_epoch)."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeGuard

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.catalog import Severity
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.loaderhooks import framework_loader_hook
from orchestrator.doctor.metric_values import framework_prepared, in_framework_call
from orchestrator.doctor.reshuffle import iterated_once, reshuffled_each_epoch
from orchestrator.doctor.rules_streams import STREAM, data_sets_epoch
from orchestrator.source.analysis import INIT, WRAPPERS
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.flow import Site
from orchestrator.source.kwargs import keyword
from orchestrator.source.walk import walk

_PLAIN_SAMPLERS = frozenset({"RandomSampler", "SequentialSampler", "WeightedRandomSampler", "SubsetRandomSampler"})
_SELF_SHARDING = ("use_ddp", "distributed")
_SHARD_WORDS = ("shard", "world_size", "num_replicas", "split_dataset_by_node", "num_shards", "nprocs")



def _is_true(expr: ast.expr | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def check_loaders(a: Analysis) -> Iterator[Finding]:
    """DDP003: a training DataLoader in a data-parallel script, with no DistributedSampler and no other
    sharding in sight (a rank-dependent subset, an IterableDataset, a custom sampler)."""
    if not a.data_parallel or a.sites_ending("DistributedSampler") or any(
            q.endswith("DistributedSampler") or any(w in q.lower() for w in _SHARD_WORDS) for q in a.helper_quals):
        return
    prepared = framework_prepared(a)
    for site in a.sites_ending("DataLoader"):
        call = site.call
        if _custom_sampler(a, call) or _shards_itself(call) or a.flow.guarded(site) or _handed_to_framework(
                a, call, prepared):
            continue
        dataset = call.args[0] if call.args else keyword(call, "dataset")
        if dataset is None or _sharded(a, dataset, 0):
            continue
        if not (_is_true(keyword(call, "shuffle")) or _iterated_in_training(a, site)):
            continue
        detail = f"{ast.unparse(call.func)}({ast.unparse(dataset)}, ...) has no sampler"
        if a.unread:
            detail += f"; a warning: {a.unread} could not be read (it may shard the data)"
        yield a.finding("DDP003", call, detail, severity=_loader_severity(a, site, dataset))


def _handed_to_framework(a: Analysis, call: ast.Call, prepared: frozenset[str]) -> bool:
    """The loader goes through a framework's sharding call (``train_dl = DataLoader(...)`` then
    ``accelerator.prepare(..., train_dl)``, or built inside it): the framework splits it across the ranks, also in
    a script that starts a process group of its own."""
    if in_framework_call(a, call):
        return True
    statement = a.module.parents.get(call)
    return isinstance(statement, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id in prepared for t in statement.targets)


def _loader_severity(a: Analysis, site: Site, dataset: ast.expr) -> Severity:
    """An error only when the script shows it all: no flag-dependent branch around the loader, a data set
    not built by a helper of the project, no helper that could not be read, DDP set up in the script."""
    if a.unread or not (a.sites(WRAPPERS) or a.sites(INIT)):
        return "warning"
    current = a.module.parents.get(site.call)
    while current is not None:
        if isinstance(current, ast.If | ast.IfExp | ast.Try):
            return "warning"
        current = a.module.parents.get(current)
    for node in walk(dataset):
        if isinstance(node, ast.Name):
            _, value = a.module.resolve(node.id, node)
            if isinstance(value, ast.Call) and _built_elsewhere(a, value):
                return "warning"
    return "error"


def _built_elsewhere(a: Analysis, call: ast.Call) -> bool:
    """The data set comes from a helper of the project or an unknown library (it may shard itself)."""
    if a.module.local_function(call) is not None:
        return False
    q = a.module.qualname(call.func) or ""
    return a.project is not None and a.project.reach(q) is not None


def _shards_itself(call: ast.Call) -> bool:
    """A loader asked to shard by rank itself (DGL's ``DataLoader(..., use_ddp=True)``, FFCV's
    ``Loader(..., distributed=True)``): anything but a literal false counts."""
    for name in _SELF_SHARDING:
        value = keyword(call, name)
        if value is not None and not (isinstance(value, ast.Constant) and not value.value):
            return True
    return False


def _custom_sampler(a: Analysis, call: ast.Call) -> bool:
    for name in ("sampler", "batch_sampler"):
        value = keyword(call, name)
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            continue
        if isinstance(value, ast.Name):
            _, resolved = a.module.resolve(value.id, value)
            value = resolved if resolved is not None else value
        if isinstance(value, ast.Call) and last_name(value.func) in _PLAIN_SAMPLERS:
            continue
        return True
    return False


def _sharded(a: Analysis, expr: ast.expr, depth: int) -> bool:
    """The data set is split by rank, or may split itself (an IterableDataset of this file)."""
    if depth > 6:
        return False
    if a.ranks.dependent(expr):
        return True
    for node in walk(expr):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is None:
            continue
        if any(word in name.lower() for word in _SHARD_WORDS):
            return True
        if isinstance(node, ast.Name):
            klass = next((c for c in a.module.nodes if isinstance(c, ast.ClassDef) and c.name == node.id),
                         None)
            if klass is not None and any("Iterable" in (dotted(b) or "") for b in klass.bases):
                return True
            _, value = a.module.resolve(node.id, node)
            if value is not None and value is not expr and _sharded(a, value, depth + 1):
                return True
    return False


def _iterated_in_training(a: Analysis, site: Site) -> bool:
    parent = a.module.parents.get(site.call)
    if not isinstance(parent, ast.Assign) or len(parent.targets) != 1:
        return False
    name = dotted(parent.targets[0])
    if name is None:
        return False
    scope = a.module.scope_of(site.call).node
    for node in walk(scope):
        if isinstance(node, ast.For | ast.AsyncFor) and any(
                dotted(n) == name for n in walk(node.iter) if isinstance(n, ast.Name | ast.Attribute)
        ) and a.trains(node):
            return True
    return False


def _passed_true(a: Analysis, site: Site, param: str) -> bool:
    """``def data_sampler(dataset, shuffle, ...): return DistributedSampler(dataset, shuffle=shuffle)`` and a
    call of it (in this file or the script) with ``shuffle=True``: the sampler built there shuffles."""
    function = site.function
    if function is None or param not in {arg.arg for arg in function.args.args + function.args.kwonlyargs}:
        return False
    params = [arg.arg for arg in function.args.args]
    index = params.index(param) - (1 if params[:1] == ["self"] else 0) if param in params else -1
    for x in (a, a.outer):
        for call in (n for n in (x.module.nodes if x is not None else ()) if isinstance(n, ast.Call)):
            if last_name(call.func) != function.name or x is None:
                continue
            value = keyword(call, param) or (call.args[index] if 0 <= index < len(call.args) else None)
            if _is_true(value) or (isinstance(value, ast.Name) and any(
                    _is_true(v) for _, v in x.module.scope_of(value).assigned.get(value.id, ()))):
                return True  # shuffle=True, or a name the caller sets to True (``if is_train: shuffle = True``)
    return False


def check_set_epoch(a: Analysis) -> Iterator[Finding]:
    """DDP004: a DistributedSampler that shuffles (the default) and no set_epoch call anywhere (a call in a lambda
    counts: ignite's ``add_event_handler(Events.EPOCH_STARTED, lambda e: sampler.set_epoch(e.state.epoch))``), or
    set_epoch called only on the rank-0 side of a rank test (the other ranks keep the first epoch's order)."""
    samplers = a.sites_ending("DistributedSampler")
    if not samplers or any(q.endswith("set_epoch") for q in a.helper_quals) or _set_epoch_in_lambda(a):
        return
    calls = [s for s in a.flow.sites if _set_epoch(s.call)]
    if calls and all(_on_rank_zero_only(a, s) for s in calls) and not _class_sets_epoch(a) and any(
            _shuffles(s.call, a.module.tree) and not _for_evaluation(a, s) for s in samplers):
        branch = calls[0].branch
        assert branch is not None
        yield a.finding("DDP004", calls[0].call, f"set_epoch runs only where `{ast.unparse(branch.node.test)[:50]}` "
                        f"holds (line {branch.node.lineno}): the ranks that skip it keep the first epoch's order, so "
                        "from the second epoch on their shards overlap the others' and miss samples; call it on "
                        "every rank", title="DistributedSampler.set_epoch() called on some ranks only: their orders "
                        "differ from the second epoch on")
        return
    if calls or _class_sets_epoch(a) or _epoch_assigned(a):
        return  # (the project's classes are read only for a file that makes a DistributedSampler)
    for site in samplers:
        if _for_evaluation(a, site) or reshuffled_each_epoch(a, site) or framework_loader_hook(a, site) or \
                iterated_once(a, site):
            continue  # a new order each epoch stands in for it (or one pass has no next epoch); Lightning calls it
        shuffle = keyword(site.call, "shuffle", a.module.tree)
        if _shuffles(site.call, a.module.tree):
            yield a.finding("DDP004", site.call, "the sampler shuffles and nothing calls set_epoch")
        elif isinstance(shuffle, ast.Name) and _passed_true(a, site, shuffle.id):
            yield a.finding("DDP004", site.call, f"the sampler shuffles (a caller passes {shuffle.id}=True) and "
                                                 "nothing calls set_epoch")


def set_epoch_elsewhere(findings: set[Finding], modules: Sequence[tuple[str, ast.Module]],
                        packages: Callable[[], Sequence[Path]] = tuple) -> set[Finding]:
    """DDP004 is judged one file at a time; where another file of the project read calls ``set_epoch`` (a trainer
    class's ``self.loaders["train"].sampler.set_epoch(epoch)`` for a sampler a data module built), or a module of a
    package the project imports does (``models/model.py``'s ``fit`` behind ``from models.transducer import
    Transducer``, a module the reader may not reach), the reader cannot tie that call to the sampler: the finding is
    only possible, and says where the call is (for a streamed data set's, ``rules_streams``, a sampler's call does not
    count)."""
    if not any(f.code == "DDP004" for f in findings):
        return findings  # nothing to judge: the project's files are not walked again
    # (file, line, whether a stream's set_epoch may be it: not a sampler's, data_sets_epoch; a package's text: may)
    calls = [(file, node.lineno, data_sets_epoch(ast.unparse(node.func)))
             for file, tree in modules for node in walk(tree) if _set_epoch(node)]
    read = {str(Path(file).resolve()) for file, _ in modules}
    calls += [(str(path), line, True) for path, line in _set_epoch_in_packages(packages()) if str(path) not in read]
    out = set()
    for f in findings:
        stream = STREAM in f.marks
        elsewhere = [(file, line) for file, line, data in calls if file != f.file and (data or not stream)]
        if f.code != "DDP004" or not elsewhere:
            out.add(f)
            continue
        file, line = elsewhere[0]
        out.add(replace(f, confidence="possible",
                        evidence=f"{f.evidence}; set_epoch is called at {Path(file).name}:{line}, on a sampler the "
                                 "reader cannot tie to this one"))
    return out


_SET_EPOCH_CALL = re.compile(rb"\.set_epoch\s*\(")
_PACKAGE_FILES = 200  # the .py files looked at in the packages a script's project imports
_PACKAGE_ENTRIES = 5_000  # the names listed there at most (a data folder of a million images is not walked)
_PACKAGE_FILE_BYTES = 400_000


def _package_files(packages: Sequence[Path]) -> list[Path]:
    """The ``.py`` files under ``packages``, folder by folder in name order, within both bounds."""
    files: list[Path] = []
    listed = 0
    for folder in packages:
        for top, dirs, names in os.walk(folder):
            dirs.sort()
            listed += len(dirs) + len(names)
            files += [Path(top, n).resolve() for n in sorted(names) if n.endswith(".py")]
            if listed >= _PACKAGE_ENTRIES or len(files) >= _PACKAGE_FILES:
                return list(dict.fromkeys(files))[:_PACKAGE_FILES]
    return list(dict.fromkeys(files))


def _set_epoch_in_packages(packages: Sequence[Path]) -> Iterator[tuple[Path, int]]:
    """``(file, line)`` of the first ``.set_epoch(`` of each ``.py`` file under ``packages`` (bounded: at most
    ``_PACKAGE_FILES`` files among the first ``_PACKAGE_ENTRIES`` names, each under ``_PACKAGE_FILE_BYTES``); text,
    not parsed."""
    for path in _package_files(packages):
        try:
            if path.stat().st_size > _PACKAGE_FILE_BYTES:
                continue
            text = path.read_bytes()
        except OSError:
            continue
        match = _SET_EPOCH_CALL.search(text)
        if match is not None:
            yield path, text.count(b"\n", 0, match.start()) + 1


def _shuffles(sampler: ast.Call, tree: ast.AST) -> bool:
    """The sampler shuffles: ``shuffle`` left to its default or given True (in the call or a ``**spread`` of the
    module's)."""
    shuffle = keyword(sampler, "shuffle", tree)
    return shuffle is None or _is_true(shuffle)


def _on_rank_zero_only(a: Analysis, site: Site) -> bool:
    """``site`` runs on rank 0 alone: in the rank-0 side of a rank test whose other side does not call set_epoch."""
    branch = site.branch
    return branch is not None and branch.taken_at_rank_zero(a.ranks) is True and not any(
        _set_epoch(n) for stmt in branch.other() for n in walk(stmt))


def _epoch_assigned(a: Analysis) -> bool:
    """The file sets a sampler's ``epoch`` attribute itself, which is all ``set_epoch`` does (seismic-deeplearning's
    ignite handler ``data_loader.sampler.epoch = engine.state.epoch``)."""
    return any(isinstance(node, ast.Assign | ast.AugAssign) and any(
        isinstance(t, ast.Attribute) and t.attr == "epoch" and "sampler" in (last_name(t.value) or "").lower()
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])) for node in a.module.nodes)


def _set_epoch(node: ast.AST) -> TypeGuard[ast.Call]:
    """``<anything>.set_epoch(...)``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set_epoch"


def _class_sets_epoch(a: Analysis) -> bool:
    """The file makes a project class that calls ``set_epoch`` itself (maskrcnn-benchmark's
    ``IterationBasedBatchSampler``: ``self.batch_sampler.sampler.set_epoch(iteration)`` in its ``__iter__``)."""
    project = a.script_project
    if project is None:
        return False
    for qual in {site.qual for site in a.flow.sites if site.qual}:
        for _ in range(2):  # the class, or a package's re-export of it (``from .x import Sampler``)
            where = project.split(qual) or _beside(a, qual)
            module = project.read(where[0]) if where is not None else None
            if module is None or where is None:
                break
            cls = next((n for n in module.tree.body if isinstance(n, ast.ClassDef) and n.name == where[1]), None)
            if cls is not None:
                if any(_set_epoch(n) for n in walk(cls)):
                    return True
                break
            qual = module.qualname(ast.Name(id=where[1])) or ""
    return False


def _beside(a: Analysis, qual: str) -> tuple[Path, str] | None:
    """A helper's relative import (``from . import samplers``: ``samplers.Sampler``): the module next to its file."""
    parts = qual.split(".")
    if len(parts) < 2 or not all(parts):
        return None
    folder = Path(a.filename).parent.joinpath(*parts[:-1])
    found = next((f for f in (folder / "__init__.py", folder.with_suffix(".py")) if f.is_file()), None)
    return (found, parts[-1]) if found is not None else None


def _set_epoch_in_lambda(a: Analysis) -> bool:
    """A ``set_epoch`` call inside a lambda (an event handler a training engine calls each epoch)."""
    return any(_set_epoch(node) and any(isinstance(up, ast.Lambda) for up in _ancestors(a, node))
               for node in a.module.nodes)


def _ancestors(a: Analysis, node: ast.AST) -> Iterator[ast.AST]:
    current = a.module.parents.get(node)
    while current is not None:
        yield current
        current = a.module.parents.get(current)


_EVAL_WORDS = re.compile(r"(^|_)(val|eval|test|infer)", re.IGNORECASE)
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad"})


def _evaluation_name(name: str) -> bool:
    """``valset``, ``test_dataset``, ``validate``; not ``train_val`` nor ``train_and_evaluate``."""
    return bool(_EVAL_WORDS.search(name)) and "train" not in name.lower()


def _for_evaluation(a: Analysis, site: Site) -> bool:
    """A sampler over a validation/test set (its data set's name, a ``validate()`` function around it, or
    ``with torch.no_grad():``): the order of an evaluation pass does not matter, set_epoch or not."""
    data = site.call.args[0] if site.call.args else keyword(site.call, "dataset")
    if data is not None and _evaluation_name(last_name(data) or ""):
        return True
    if site.function is not None and _evaluation_name(site.function.name):
        return True
    current = a.module.parents.get(site.call)
    while current is not None:
        if isinstance(current, ast.With) and any(
                isinstance(item.context_expr, ast.Call) and a.module.qualname(item.context_expr.func) in _NO_GRAD
                for item in current.items):
            return True
        current = a.module.parents.get(current)
    return False
