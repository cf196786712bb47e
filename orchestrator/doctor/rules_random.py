"""DDP011: a data split or shuffle with no seeded generator, feeding distributed data.

``random_split(ds, [n, m])`` with no ``generator=`` draws from each rank's own random state: unless every
rank seeded it alike before (``torch.manual_seed(SEED)``, not ``SEED + rank``), each rank trains and
validates on a different split (validation samples leak into other ranks' training data). The same for
indices from ``torch.randperm`` / ``np.random.permutation`` / ``random.shuffle`` that pick a ``Subset``,
a sampler's indices or a loader's data.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.findings import Finding
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.flow import Site
from orchestrator.source.walk import walk

_SPLITS = frozenset({"torch.utils.data.random_split", "torch.utils.data.dataset.random_split", "random_split"})
_DRAWS = {"torch.randperm": "torch", "numpy.random.permutation": "numpy", "np.random.permutation": "numpy",
          "random.shuffle": "random", "numpy.random.shuffle": "numpy", "np.random.shuffle": "numpy",
          "random.sample": "random"}
# seeding calls, by the random state they seed ("*": all of them, as the frameworks' helpers do)
# per file read: the states it seeds alike (``seeded_states``)
_SEEDED: weakref.WeakKeyDictionary[Analysis, frozenset[str]] = weakref.WeakKeyDictionary()
_SEEDS = {"torch.manual_seed": "torch", "torch.random.manual_seed": "torch", "torch.cuda.manual_seed_all": "",
          "numpy.random.seed": "numpy", "np.random.seed": "numpy", "random.seed": "random"}
_SEED_HELPERS = ("seed_everything", "set_seed", "fix_random_seeds", "set_random_seed", "seed_all", "init_seeds",
                 "setup_seed", "fix_seed", "random_seed", "set_seeds")
_CONSUMERS = ("Subset", "Sampler", "DataLoader", "random_split", "Dataset", "select")


def check_splits(a: Analysis) -> Iterator[Finding]:
    if not a.data_parallel:
        return
    seeded = seeded_states(a)
    for site in a.flow.sites:
        if site.qual in _SPLITS or (site.qual or "").endswith(".random_split"):
            if any(k.arg == "generator" for k in site.call.keywords) or len(site.call.args) >= 3 or "torch" in seeded:
                continue
            yield a.finding("DDP011", site.call, f"{ast.unparse(site.call)[:60]} has no generator=")
            continue
        if _dataset_shuffle(a, site) and "numpy" not in seeded:
            yield a.finding("DDP011", site.call, f"{ast.unparse(site.call)[:60]} shuffles with no seed= on each "
                                                 "rank's own random state")
            continue
        state = _DRAWS.get(site.qual or "")
        if state is None or state in seeded or any(k.arg == "generator" for k in site.call.keywords):
            continue
        if a.in_training_loop(site) is not None or not _feeds_data(a, site):
            continue
        yield a.finding("DDP011", site.call, f"{ast.unparse(site.call)[:60]} picks the data on each rank's own "
                                             "random state")


def _dataset_shuffle(a: Analysis, site: Site) -> bool:
    """``data["train"].shuffle()`` (a Hugging Face data set's method, no ``seed=``): a different order, and
    with a split after it a different split, on each rank; its default seed comes from numpy's state."""
    func = site.call.func
    return (isinstance(func, ast.Attribute) and func.attr == "shuffle" and not site.call.args
            and not site.call.keywords and site.qual not in _DRAWS and a.in_training_loop(site) is None
            and any(word in ast.unparse(func.value).lower() for word in ("data", "train", "ds", "set", "split")))


def seeded_states(a: Analysis) -> frozenset[str]:
    """The random states the script seeds alike on every rank (a seed that depends on the rank does not
    count), itself or through a helper of the project ("*": a seeding helper, taken to seed them all); worked out once
    per file read (each save's path asks: ``save_paths.per_process``)."""
    if a not in _SEEDED:
        _SEEDED[a] = frozenset(_seeded_states(a))
    return _SEEDED[a]


def _seeded_states(a: Analysis) -> set[str]:
    seeded: set[str] = set()
    for site in a.flow.sites:
        q = site.qual or ""
        args = [*site.call.args, *[k.value for k in site.call.keywords]]
        if any(a.ranks.dependent(arg) for arg in args):
            continue
        if _SEEDS.get(q):
            seeded.add(_SEEDS[q])
        elif (last_name(site.call.func) or "") in _SEED_HELPERS:
            seeded.update(("torch", "numpy", "random"))
        else:
            reach = a.helper(site)
            if reach is not None:
                seeded.update(_SEEDS[x] for x in reach.quals if _SEEDS.get(x))
    return seeded


def _feeds_data(a: Analysis, site: Site) -> bool:
    """The drawn indices (or the shuffled list) reach a Subset, a sampler, a loader or a data set."""
    parent = a.module.parents.get(site.call)
    tainted: set[str] = set()
    if isinstance(parent, ast.Assign):
        tainted.update(k for t in parent.targets for k in _keys(t))
    elif isinstance(parent, ast.Expr) and site.call.args:  # random.shuffle(indices)
        tainted.update(_keys(site.call.args[0]))
    if not tainted:
        return False
    scope = a.module.scope_of(site.call).node
    for _ in range(3):  # names derived from them: train_idx = perm[:n]
        for node in walk(scope):
            if isinstance(node, ast.Assign) and node.lineno > site.call.lineno and _mentions(node.value, tainted):
                tainted.update(k for t in node.targets for k in _keys(t))
    for node in walk(scope):
        if isinstance(node, ast.Call) and node.lineno >= site.call.lineno and node is not site.call:
            name = last_name(node.func) or ""
            if any(c in name for c in _CONSUMERS) and any(_mentions(x, tainted) for x in
                                                         [*node.args, *[k.value for k in node.keywords]]):
                return True
    return False


def _keys(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Tuple | ast.List):
        return [k for e in target.elts for k in _keys(e)]
    key = dotted(target)
    return [key] if key else []


def _mentions(expr: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name | ast.Attribute) and dotted(n) in names for n in walk(expr))
