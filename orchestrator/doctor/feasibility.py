"""Whether a script can work on the layout asked (``--nodes``/``--gpus``), before anything is queued.

On one node these findings stay warnings: the script works there. On more than one node each certainly
fails, so the gate (``gate.check_script``) makes it an error (``--ignore CODE`` overrules it; a finding whose
evidence is only possible stays a warning; the refusal's HINT starts with :func:`layout_hint`):

- DDP010, a device numbered by the global rank: the ranks of the second node ask for ``cuda:N``, N past the
  node's GPUs (not when the rank is taken modulo a count: ``rank % 8`` is the local rank on 8-GPU nodes);
- DDP016, the node-local rank used as the global rank (also a global rank built from a node-index flag no
  launcher passes): from the second node on two processes claim each rank;
- DDP021, a ``file://`` rendezvous in a temporary or local folder: the other nodes never see the file; or a file one
  rank writes there and every rank reads (its mark ``HANDOFF_MARK``): the other nodes' ranks find none;
- DDP022, a check that the run is on one node (``assert world_size == torch.cuda.device_count()``);
- DDP008, a loopback ``tcp://`` rendezvous read from the config file the script loads (``rules_rendezvous_computed``;
  the one the script forces in its code is ``launchstyle.py``'s): each node waits at its own address; and a spawner's
  world of one node's processes (``rules_spawnworld``): the other nodes' ranks are past it;
- DDP023, a framework layout whose node count is certain (written in, or left out: 1) and not the one asked:
  Lightning/Fabric stop at start-up (a flag's default is the gate's flag warning, ``layoutflags.py``); where the
  script's arguments give the count (``argsconfig.py``: a LightningCLI's ``--trainer.num_nodes`` or ``--config``, else
  1; the config file a script's ``--config`` names, its override ``trainer.num_nodes=2``), the arguments' count.

(A per-node script's constant ``MASTER_ADDR``/``MASTER_PORT`` is ``launchstyle.answered``'s. A finding whose cause lies
only where Slurm's variables are absent, ``offslurm.OFF_SLURM``, stays a warning: ``orch submit``'s tasks have them.)
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from orchestrator.doctor.argsconfig import node_count
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.offslurm import OFF_SLURM
from orchestrator.doctor.rules_layout import CONFIG_DEFAULT
from orchestrator.doctor.rules_nodes import HANDOFF_MARK
from orchestrator.doctor.rules_rendezvous_computed import CONFIG_LOOPBACK
from orchestrator.doctor.rules_spawnworld import ONE_NODE_WORLD
from orchestrator.source.walk import walk
from orchestrator.spec.pysource import UnreadableSource, parse_source

ACROSS_MARK = "cannot work on"  # in the message of a finding this module made an error, and its mark
# code -> why it fails across nodes ({nodes}, {where}: the layout)
ACROSS_NODES: dict[str, str] = {
    "DDP010": "the ranks of the second node ask for a GPU index past {where}",
    "DDP016": "from the second node on two processes claim each rank (or read another rank's data)",
    "DDP021": "the ranks on the other {others} never see that file, and the rendezvous hangs",
    "DDP022": "the check fails on {nodes} nodes",
    "DDP023": "the framework checks devices x num_nodes against the world size and stops at start-up",
}

# a finding whose mark says why it fails across nodes (before its code's row): mark -> (code, why)
_MARKED_WHY: dict[str, tuple[str, str]] = {
    CONFIG_LOOPBACK: ("DDP008", "each node waits at its own loopback address and the nodes never meet"),
    ONE_NODE_WORLD: ("DDP008", "the ranks of the other {others} are past a world of one node's processes (or form "
                               "worlds of their own)"),
    HANDOFF_MARK: ("DDP021", "the ranks on the other {others} find no such file there (or an old run's) and stop"),
}


def across_nodes(findings: Iterable[Finding], nodes: int, gpus: int | None = None,
                 args: Sequence[str] | None = None) -> list[Finding]:
    """``findings`` for a run on ``nodes`` nodes of ``gpus`` GPUs each (None: not known here): on more than one,
    the codes of ``ACROSS_NODES`` are errors that say why and how to run it. ``args``: the script's arguments, when
    known (with none, a Trainer's node count from the config file the script then loads is certain too)."""
    out: list[Finding] = []
    for finding in findings:
        why = next((text for mark, (code, text) in _MARKED_WHY.items() if finding.code == code
                    and mark in finding.marks), None) or ACROSS_NODES.get(finding.code)
        passed = node_count(finding.args_config, args, Path(finding.file)) if (  # the count the arguments give
            nodes > 1 and finding.args_config is not None and args is not None) else None
        sure = finding.confidence != "possible" or passed is not None
        if nodes > 1 and why is not None and sure and OFF_SLURM not in finding.marks and (
                not (finding.code == "DDP010" and _modulo(finding))) and not (
                finding.code == "DDP023" and not _other_node_count(finding, nodes, args, passed)):
            why = f"{why} ({passed[1]})" if passed is not None else why
            where = f"the node's {gpus} GPU{'s' * (gpus != 1)} (cuda:0..{gpus - 1})" if gpus else "the node's GPUs"
            others = f"{nodes - 1} node{'s' * (nodes != 2)}"
            finding = replace(finding, severity="error",
                              confidence="certain" if passed is not None else finding.confidence,  # the file read
                              message=f"{finding.message}: {ACROSS_MARK} {nodes} nodes, "
                                      f"{why.format(nodes=nodes, where=where, others=others)}",
                              marks=finding.marks | {ACROSS_MARK},
                              fix=finding.fix if "--nodes 1" in finding.fix else f"{finding.fix}; or run on one "
                                                                                     "node (--nodes 1)")
        out.append(finding)
    return out


def layout_hint(findings: Iterable[Finding]) -> str:
    """The start of the refusal's HINT when the layout is what fails (``DDP022 cannot work across nodes: ...``)."""
    codes = sorted({f.code for f in findings if f.severity == "error" and ACROSS_MARK in f.marks})
    if not codes:
        return ""
    many = len(codes) > 1
    return (f"{', '.join(codes)} cannot work across nodes: change the code as the finding{'s say' if many else ' says'}"
            ", or run on one node (--nodes 1); otherwise ")


def _other_node_count(finding: Finding, nodes: int, args: Sequence[str] | None,
                      passed: tuple[int | None, str] | None) -> bool:
    """A DDP023 finding whose node count is certain (written in, or left out; the one the script's arguments give,
    ``passed``: a config file they name, an override; or the config's the script loads when it is given no argument,
    ``args == []``) and not ``nodes``."""
    if passed is not None:
        return passed[0] is not None and passed[0] != nodes
    sure = finding.confidence == "certain" or (CONFIG_DEFAULT in finding.marks and args is not None and not args)
    return sure and finding.nodes is not None and finding.nodes != nodes


def _modulo(finding: Finding) -> bool:
    """The finding's statement takes the rank modulo a count (``rank % 8``): right where the count is the node's
    GPUs, so not certain to fail."""
    try:
        tree = parse_source(Path(finding.file).read_text(encoding="utf-8", errors="replace"), finding.file)
    except (OSError, UnreadableSource, RecursionError, MemoryError):
        return True  # unread: not certain
    return any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and not isinstance(node.left, ast.Constant)
               and finding.line <= getattr(node, "lineno", 0) <= finding.end_line for node in walk(tree))
