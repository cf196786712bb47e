"""A data set reshuffled each epoch inside the epoch loop, which stands in for ``sampler.set_epoch(epoch)``.

``for epoch in ...:`` that builds a new ``DistributedSampler(ds, seed=epoch)``, or reorders the data with the epoch
as seed (``np.random.RandomState(epoch).permutation(n)``, ``random.seed(epoch)`` then ``random.shuffle(ids)``,
``torch.randperm(n, generator=g)`` after ``g.manual_seed(seed + epoch)``, a data set made with ``seed=epoch`` or
``epoch=epoch``) and builds the sampler over it there:
every epoch reads a new order, so DDP004 has nothing to say. A sampler made once, before the loop, is not helped
by a reshuffle of a copy it never sees; a new sampler with the default seed and unchanged data is the same order
each epoch (still DDP004).
"""

from __future__ import annotations

import ast
import weakref

from orchestrator.doctor.analysis import Analysis
from orchestrator.source.branches import inside
from orchestrator.source.exprnames import last_name
from orchestrator.source.flow import Site
from orchestrator.source.walk import walk

# Calls that draw a new order, and calls that seed the ones after them: reseeded per epoch, their arguments (or
# their receiver's: ``np.random.RandomState(epoch).permutation(n)``) carry the epoch.
_ORDERS = frozenset({"permutation", "randperm", "shuffle", "sample", "choice"})
_SEEDS = frozenset({"seed", "manual_seed"})
_MAX_DEPTH = 4
# per file read: every training loop is one pass over a loader (iterated_once), worked out once for all its samplers
_ONE_PASS: weakref.WeakKeyDictionary[Analysis, bool] = weakref.WeakKeyDictionary()


def reshuffled_each_epoch(a: Analysis, site: Site) -> bool:
    """Whether the sampler built at ``site`` is made inside a loop whose every pass orders the data anew from
    the loop's variable (the epoch): its own ``seed=``, or a seeded reorder earlier in the same pass."""
    for loop in reversed(site.loops):
        if not isinstance(loop, ast.For | ast.AsyncFor):
            continue
        epoch = {n.id for n in walk(loop.target) if isinstance(n, ast.Name)}
        seed = next((k.value for k in site.call.keywords if k.arg == "seed"), None)
        if (seed is not None and _carries(a, seed, epoch, loop, 0)) or _rebuilt_with_epoch(a, site, epoch, loop):
            return True
        calls = sorted((n for n in walk(loop) if isinstance(n, ast.Call) and n.lineno <= site.call.lineno),
                       key=lambda n: n.lineno)
        seeded: int | None = None  # the line of the first per-epoch seed call of the pass
        for call in calls:
            name = last_name(call.func)
            if name in _SEEDS and seeded is None and _carries(a, call, epoch, loop, 0):
                seeded = call.lineno
            if name in _ORDERS and (seeded is not None or _carries(a, call, epoch, loop, 0)):
                return True
    return False


def _rebuilt_with_epoch(a: Analysis, site: Site, epoch: set[str], loop: ast.AST) -> bool:
    """The sampler's data set is made in this pass with the epoch as its seed or epoch (``ShardedSet(files,
    seed=base + epoch)``, ``build_dataset(args, epoch=epoch)``): a data set rebuilt and reshuffled each epoch."""
    data = site.call.args[0] if site.call.args else next((k.value for k in site.call.keywords if k.arg == "dataset"),
                                                        None)
    if isinstance(data, ast.Name):
        _, data = a.module.resolve(data.id, data)
    if not isinstance(data, ast.Call) or not inside(a.module.parents, data, loop):
        return False
    return any(k.arg is not None and ("seed" in k.arg or "epoch" in k.arg) and _carries(a, k.value, epoch, loop, 0)
               for k in data.keywords)


def _carries(a: Analysis, expr: ast.AST, epoch: set[str], loop: ast.AST, depth: int) -> bool:
    """``expr`` reads the loop's variable, itself or through names assigned inside the loop (``seed = base +
    epoch``) or the object it is called on (``rng.shuffle(ids)`` with ``rng = default_rng(epoch)``)."""
    if depth > _MAX_DEPTH:
        return False
    for node in walk(expr):
        if not isinstance(node, ast.Name):
            continue
        if node.id in epoch:
            return True
        _, value = a.module.resolve(node.id, node)
        if value is not None and value is not expr and inside(a.module.parents, value, loop) and _carries(
                a, value, epoch, loop, depth + 1):
            return True
    return False


def iterated_once(a: Analysis, site: Site) -> bool:
    """Every training loop of the file is one pass over a loader, in no other loop, in a function called only outside
    loops (PySOT's ``for idx, data in enumerate(train_loader):`` trains the whole run, the epoch taken from the index
    and the data set sized for all epochs), and the sampler at ``site`` goes to the loader as it is (not inside a batch
    sampler that may repeat it per epoch): its order is drawn once, so there is no next epoch to reseed."""
    parent = a.module.parents.get(site.call)
    if not (isinstance(parent, ast.Assign) or (isinstance(parent, ast.keyword) and parent.arg == "sampler")):
        return False
    if a not in _ONE_PASS:
        loops = [n for n in a.module.nodes if isinstance(n, ast.For | ast.AsyncFor) and a.trains(n)]
        # or a loader's iterator drawn from with next() in a loop over steps (DANNet's ``trainloader_iter =
        # enumerate(trainloader)``, its data set sized for every step), where no iterator of a loader is made again
        # in a loop (``except StopIteration: it = iter(loader)`` starts a second epoch)
        looped = {id(n) for f in a.module.nodes if isinstance(f, ast.For | ast.AsyncFor) for n in walk(f.iter)}
        made = [n for n in a.module.nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and id(n) not in
                looped and n.func.id in ("iter", "enumerate") and n.args and _loader(n.args[0])]
        steps = [loop for loop in loops if not _loader(loop.iter)]
        _ONE_PASS[a] = bool(loops) and bool(made or not steps) and all(_runs_once(a, n, 0) for n in made) and all(
            _runs_once(a, loop, 0) for loop in loops if loop not in steps) and all(
            any(isinstance(n, ast.Call) and last_name(n.func) == "range" for n in walk(loop.iter)) for loop in steps)
    return _ONE_PASS[a]


def _loader(expr: ast.expr) -> bool:
    """``expr`` names a loader (``train_loader``, ``self.loaders["train"]``)."""
    return any("loader" in (n.id if isinstance(n, ast.Name) else n.attr).lower()
               for n in walk(expr) if isinstance(n, ast.Name | ast.Attribute))


def _runs_once(a: Analysis, node: ast.AST, depth: int) -> bool:
    """``node`` is in no loop of its function, and that function (if any) is called in this file, never in a loop."""
    parent = a.module.parents.get(node)
    while parent is not None and not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
        if isinstance(parent, ast.For | ast.AsyncFor | ast.While):
            return False
        parent = a.module.parents.get(parent)
    if not isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
        return True
    if depth > 3:
        return False
    calls = [n for n in a.module.nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == parent.name]
    return bool(calls) and all(_runs_once(a, call, depth + 1) for call in calls)
