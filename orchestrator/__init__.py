"""orch: from train.py to a correct multi-node, multi-GPU PyTorch run on Slurm.

The public names, one import path each (all of them ``from orchestrator import NAME``):

=========================================  ==========================================================
job files (module level, no torch)         ``JobSpec``, ``Resources``, ``TrainParams``
inside a job's ``build()`` (imports torch)  ``TrainTask``, ``BuildContext``, ``TensorData``
the Python API                             ``submit``, ``run``, ``sweep``, ``JobHandle``
=========================================  ==========================================================

Importing this package is cheap: it never imports torch, pydantic or any other module of orch. Each
name is looked up in :data:`PUBLIC` and its module imported on first use (PEP 562). No module inside
the package imports this one for anything but ``__version__``, so the layer contracts
(``pyproject.toml``, import-linter) see the layers alone. ``orchestrator.job`` is the documented
alias that job files written before this layout use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

# public name -> the module that defines it (the one owner; this table is the only re-export)
PUBLIC: dict[str, str] = {
    "JobSpec": "orchestrator.spec.job",
    "Resources": "orchestrator.spec.job",
    "TrainParams": "orchestrator.spec.job",
    "TrainTask": "orchestrator.runtime.task",
    "BuildContext": "orchestrator.runtime.task",
    "TensorData": "orchestrator.runtime.data",
    "submit": "orchestrator.api",
    "run": "orchestrator.api",
    "sweep": "orchestrator.api",
    "JobHandle": "orchestrator.api",
}

__all__ = ["PUBLIC", "BuildContext", "JobHandle", "JobSpec", "Resources", "TensorData", "TrainParams", "TrainTask",
           "__version__", "run", "submit", "sweep"]

if TYPE_CHECKING:
    from orchestrator.api import JobHandle, run, submit, sweep
    from orchestrator.runtime.data import TensorData
    from orchestrator.runtime.task import BuildContext, TrainTask
    from orchestrator.spec.job import JobSpec, Resources, TrainParams


def __getattr__(name: str) -> Any:
    module = PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *PUBLIC])
