"""orch: from train.py to a correct multi-node, multi-GPU PyTorch run on Slurm.

Importing this package is cheap: it never imports torch or torchvision. The Python
API (``orchestrator.submit``) is loaded lazily on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "submit"]


def __getattr__(name: str) -> Any:
    if name == "submit":
        from orchestrator.api import submit

        return submit
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
