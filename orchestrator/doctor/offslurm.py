"""Code only a run without Slurm's variables takes: the side of ``if "SLURM_PROCID" in os.environ:`` (any ``SLURM_``
variable; ``not in``, ``os.environ.get(...) is None`` turned round) that Slurm's tasks never reach. ``orch submit``
runs every task under ``srun``, with those variables, so a finding whose cause lies only there cannot fail a run
across nodes (``feasibility.across_nodes`` leaves it a warning, by :data:`OFF_SLURM`); ``orch run`` on one machine
takes it, where it is the warning it says (cslr2's ``elif "LOCAL_RANK" in os.environ: cfg.rank =
int(os.environ["LOCAL_RANK"])`` after its Slurm branch)."""

from __future__ import annotations

import ast

from orchestrator.source.branches import enclosing_ifs, env_presence
from orchestrator.source.names import Module

OFF_SLURM = "only where Slurm's variables are absent"  # the mark feasibility reads


def off_slurm(module: Module, node: ast.AST) -> bool:
    """``node`` sits on the side of an ``if`` (in its function) that runs only where a ``SLURM_`` variable is absent."""
    return any(_slurm_present(module, statement.test) is (not in_body)
               for statement, in_body in enclosing_ifs(module.parents, node))


def _slurm_present(module: Module, test: ast.expr) -> bool | None:
    """True for ``"SLURM_X" in os.environ`` (``os.environ.get("SLURM_X") is not None``), False for its negation, None
    for any other test."""
    found = env_presence(module.qualname, test)
    return found[1] if found is not None and found[0].startswith("SLURM_") else None
