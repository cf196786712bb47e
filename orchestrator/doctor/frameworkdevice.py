"""A device a framework binds: Accelerate (``Accelerator()``, ``accelerator.prepare``, ``accelerator.device``),
Lightning (``Trainer``, a ``LightningModule``) and Fabric (``Fabric()``, ``fabric.setup``, ``fabric.device``) set
each process's CUDA device themselves, from the launcher's ``LOCAL_RANK``, before the model runs. A script written
for one has no ``torch.cuda.set_device`` of its own, and a ``.cuda()`` or ``"cuda"`` in it is the bound device:
not a device-binding finding (DDP001)."""

from __future__ import annotations

import ast

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.frameworknames import QUALIFIED
from orchestrator.source.analysis import FRAMEWORK_SETUP
from orchestrator.source.exprnames import last_name

_BINDERS = frozenset(q for q, framework in QUALIFIED.items() if framework in ("lightning", "fabric", "accelerate"))
_DEVICES = frozenset({"accelerate.Accelerator.device", "lightning.fabric.Fabric.device"})


def framework_binder(a: Analysis) -> str | None:
    """What binds the device in ``a``'s file (or, for a helper module, its script): ``Accelerator()`` and the
    like, a framework's setup call, its ``.device``, or a ``LightningModule``; None when nothing does."""
    for analysis in (a, a.outer):
        if analysis is None:
            continue
        for site in analysis.flow.sites:
            if site.qual in _BINDERS or site.qual in FRAMEWORK_SETUP:
                return f"{site.qual} at line {site.call.lineno}"
        for node in analysis.module.nodes:
            if isinstance(node, ast.Attribute) and node.attr == "device" and analysis.module.qualname(node) in _DEVICES:
                return f"{analysis.module.qualname(node)} at line {node.lineno}"
            if isinstance(node, ast.ClassDef) and any((last_name(b) or "").endswith("LightningModule")
                                                      for b in node.bases):
                return f"the LightningModule {node.name} at line {node.lineno}"
    hit = next((q for q in a.helper_quals if q in _BINDERS or q in FRAMEWORK_SETUP), None)
    return f"{hit} in a helper" if hit is not None else None
