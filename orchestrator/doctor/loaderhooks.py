"""A sampler a framework's loop sets the epoch of: made in a loader hook of a class the framework calls.

- Lightning: a ``*_dataloader`` hook of a LightningModule or LightningDataModule (or a method it calls, or one that
  keeps the sampler for it): the Trainer's loops call ``set_epoch`` on the sampler of every loader they run.
- transformers: the sampler a ``Trainer`` subclass returns from ``_get_train_sampler`` (or builds in
  ``get_train_dataloader``): the Trainer sets its epoch at the start of every epoch (INSTRUCTOR's trainer).
"""

from __future__ import annotations

import ast

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.frameworknames import QUALIFIED
from orchestrator.source.exprnames import dotted
from orchestrator.source.flow import Site
from orchestrator.source.walk import walk

# the transformers Trainer's methods that make the training sampler or loader, which its loop sets the epoch of
_HF_SAMPLER_HOOKS = frozenset({"_get_train_sampler", "get_train_dataloader"})


def framework_loader_hook(a: Analysis, site: Site) -> bool:
    """The sampler at ``site`` is made where a framework's loop sets its epoch (this module's docstring)."""
    return _lightning_loader_hook(a, site) or _trainer_sampler_hook(a, site)


def _trainer_sampler_hook(a: Analysis, site: Site) -> bool:
    """``class MyTrainer(Seq2SeqTrainer): def _get_train_sampler(self): return DistributedSampler(...)``."""
    function = site.function
    owner = a.module.parents.get(function) if function is not None else None
    if function is None or function.name not in _HF_SAMPLER_HOOKS or not isinstance(owner, ast.ClassDef):
        return False
    return any(QUALIFIED.get(a.module.qualname(base) or "") == "hf-trainer" for base in owner.bases)


_LIGHTNING_DATA_CLASSES = ("LightningModule", "LightningDataModule")


def _lightning_loader_hook(a: Analysis, site: Site) -> bool:
    """A sampler built in a ``*_dataloader`` hook of a LightningModule or LightningDataModule, or kept by another of
    its methods (``setup``: ``self.train_sampler = DistributedSampler(...)``) for a hook that reads it: the Trainer's
    loops call ``set_epoch`` on the sampler of every loader they run, with ``use_distributed_sampler=False`` too."""
    function = site.function
    owner = a.module.parents.get(function) if function is not None else None
    if function is None or not isinstance(owner, ast.ClassDef) or not (
            function.name.endswith("_dataloader") or _kept_for_a_hook(a, site, owner)
            or _called_by_a_hook(function.name, owner)):
        return False
    return any((q := a.module.qualname(base) or "").startswith(("lightning.", "pytorch_lightning."))
               and q.endswith(_LIGHTNING_DATA_CLASSES) for base in owner.bases)


def _called_by_a_hook(name: str, owner: ast.ClassDef) -> bool:
    """``self._get_loader(path, True)`` in a ``*_dataloader`` method of the same class: the hook's loader."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == name
               and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
               for hook in owner.body if isinstance(hook, ast.FunctionDef | ast.AsyncFunctionDef)
               and hook.name.endswith("_dataloader") for n in walk(hook))


def _kept_for_a_hook(a: Analysis, site: Site, owner: ast.ClassDef) -> bool:
    """``self.X = DistributedSampler(...)`` and a ``*_dataloader`` method of the same class reads ``self.X``."""
    parent = a.module.parents.get(site.call)
    kept = {dotted(t) for t in parent.targets} if isinstance(parent, ast.Assign) else set()
    kept = {k for k in kept if k is not None and k.startswith("self.")}
    hooks = [f for f in owner.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
             and f.name.endswith("_dataloader")]
    return bool(kept) and any(dotted(n) in kept for hook in hooks for n in walk(hook)
                              if isinstance(n, ast.Attribute))
