"""Code only a run without Slurm's variables takes: the side of ``if "SLURM_PROCID" in os.environ:`` (any ``SLURM_``
variable; ``not in``, ``os.environ.get(...) is None`` turned round) that Slurm's tasks never reach. ``orch submit``
runs every task under ``srun``, with those variables, so a finding whose cause lies only there cannot fail a run
across nodes (``feasibility.across_nodes`` leaves it a warning, by :data:`OFF_SLURM`); ``orch run`` on one machine
takes it, where it is the warning it says (cslr2's ``elif "LOCAL_RANK" in os.environ: cfg.rank =
int(os.environ["LOCAL_RANK"])`` after its Slurm branch)."""

from __future__ import annotations

import ast

from orchestrator.source.branches import enclosing_ifs
from orchestrator.source.names import Module

OFF_SLURM = "only where Slurm's variables are absent"  # the mark feasibility reads


def off_slurm(module: Module, node: ast.AST) -> bool:
    """``node`` sits on the side of an ``if`` (in its function) that runs only where a ``SLURM_`` variable is absent."""
    return any(_slurm_present(module, statement.test) is (not in_body)
               for statement, in_body in enclosing_ifs(module.parents, node))


def _slurm_present(module: Module, test: ast.expr) -> bool | None:
    """True for ``"SLURM_X" in os.environ`` (``os.environ.get("SLURM_X") is not None``), False for its negation, None
    for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.In | ast.NotIn) and _slurm_name(left) and module.qualname(right) == "os.environ":
        return isinstance(op, ast.In)
    if isinstance(op, ast.Is | ast.IsNot) and isinstance(right, ast.Constant) and right.value is None and (
            isinstance(left, ast.Call) and module.qualname(left.func) in ("os.environ.get", "os.getenv")
            and left.args and _slurm_name(left.args[0])):
        return isinstance(op, ast.IsNot)
    return None


def _slurm_name(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("SLURM_")
