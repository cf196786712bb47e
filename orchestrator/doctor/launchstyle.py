"""The doctor's side of a launch style (``orchestrator.launchstyles`` decides the style from the script's facts):
the style answers its finding (the script runs as written: DDP014 is not shown for a ``per-node`` script, DDP015
for a ``local-rank-arg`` one), and adds three refusals: a ``per-node`` script that sets ``MASTER_ADDR``/``MASTER_PORT``
to a constant cannot meet the other nodes at orch's address (an error, with the fix); on more than one node, one
whose spawned processes pass their spawn index as the global rank (``launchstyles/spawnrank.py``) is DDP016: every
node's processes claim ranks 0..n-1 (``feasibility.across_nodes`` makes it the error, with the fix); on more than
one node, in any style, a loopback ``init_method`` the script forces (``launchstyles/loopback.py``) is a DDP008 error,
as is ``os.environ["MASTER_ADDR"] = "localhost"`` over a launcher's address (a style whose launcher sets it), and a
rank read from an MPI launcher's variables alone (``OMPI_COMM_WORLD_RANK``) is DDP016. A ``per-node`` script
that multiplies torchrun's ``WORLD_SIZE`` or ``RANK`` as its node count or index (``launchstyles/nodevars.py``) is
a DDP008 error across nodes (the group waits for more processes than run; on one node a certain warning: one GPU
works) or DDP016 (every node takes the same ranks: the error across nodes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

from orchestrator.doctor.feasibility import ACROSS_MARK
from orchestrator.doctor.findings import Finding, make_finding
from orchestrator.doctor.rules_rendezvous_computed import LOOPBACK_MASTER
from orchestrator.doctor.rules_spawn import INDEX_RANK_FIX, INDEX_RANK_TITLE
from orchestrator.env.taskenv import is_loopback
from orchestrator.launchstyles.facts import Facts, entry_tree, master_lines, read
from orchestrator.launchstyles.nodevars import NODE_MEANINGS
from orchestrator.spec.launch import Launch

# style -> the finding that says a script is written for it (and that running it that way answers)
ANSWERS: dict[str, str] = {"per-node": "DDP014", "local-rank-arg": "DDP015"}


def answered(launch: Launch, findings: Iterable[Finding], nodes: int = 1, entry: Path | None = None) -> list[Finding]:
    """The findings left once the script runs in its style on ``nodes`` nodes: the one the style answers is
    dropped; under ``per-node``, ``os.environ["MASTER_ADDR"] = <constant>`` (a DDP008 line; on one node a flag's
    value is not one) is an error unless it is this machine's loopback on one node (a single-node script: a warning),
    a constant MASTER_PORT an error across nodes, and across nodes the script at ``entry`` (when given) has DDP016
    where its spawned processes take their spawn index as the rank; across nodes, in any style, a loopback
    ``init_method`` the script forces is a DDP008 error."""
    findings = list(findings)
    per_node = launch.style == "per-node"
    # across nodes (or per node on any count): what the script forces
    facts = read(entry) if (nodes > 1 or per_node) and entry is not None else None
    if facts is not None and per_node:
        findings += _node_reads(facts, findings, nodes) + (_index_ranks(facts, findings) if nodes > 1 else [])
    if facts is not None and nodes > 1:
        findings = _loopback(facts, findings, nodes) + _mpi_only(facts)
    gone = ANSWERS.get(launch.style)
    out: list[Finding] = []
    masters: dict[str, dict[int, tuple[str, str]]] = {}
    for finding in findings:
        if finding.code == gone:
            continue
        if finding.code == "DDP008" and not per_node and nodes > 1:
            finding = _loopback_master(finding, nodes)
        elif finding.code == "DDP008" and per_node:
            if finding.file not in masters:
                masters[finding.file] = master_lines(entry_tree(Path(finding.file)))
            hit = masters[finding.file].get(finding.line)
            if hit is not None and not (nodes == 1 and _setting(hit[1])) and _blocks(*hit, nodes):
                finding = replace(finding, severity="error", message=(
                    f"{finding.message}: a per-node script that sets {hit[0]} to a constant cannot meet "
                    f"{'the other nodes' if nodes > 1 else 'its processes'} at the address orch gives every node"),
                    fix="delete the line: orch exports MASTER_ADDR and MASTER_PORT to every node (a fixed address "
                        "is one machine's, a fixed port may be taken)")
        out.append(finding)
    return out


def _loopback_master(finding: Finding, nodes: int) -> Finding:
    """Across ``nodes`` nodes, in a style whose launcher sets MASTER_ADDR (torchrun's, ``--local_rank``'s, Slurm's),
    the DDP008 at ``os.environ["MASTER_ADDR"] = "localhost"`` is an error: every node's ranks look for rank 0 on their
    own machine (the constant written, or handed to the helper that writes it: the rule's ``LOOPBACK_MASTER`` mark).
    A value from a flag or from elsewhere stays what it was."""
    if LOOPBACK_MASTER not in finding.marks or finding.confidence == "possible":
        return finding
    return replace(finding, severity="error", marks=finding.marks | {ACROSS_MARK}, message=(
        f"{finding.message}: {ACROSS_MARK} {nodes} nodes, every node's ranks look for rank 0 at their own machine's "
        "loopback address and the nodes never meet"),
        fix="delete the line: the launcher exports MASTER_ADDR to every rank (orch gives every node the first "
            "node's address); or run on one node (--nodes 1)")


def _setting(value: str) -> bool:
    """``args.master_addr``, ``cfg.dist.master_port``: a flag's or a config's value, which the user passes (BabyAI's
    ``--master_addr`` with the default ``localhost``): on one node not a constant the script forces (the warning
    stays); across nodes orch's per-node address cannot be handed in as a flag, so it blocks as a constant does."""
    return _ATTRIBUTE_CHAIN.fullmatch(value) is not None


_ATTRIBUTE_CHAIN = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def _blocks(name: str, value: str, nodes: int) -> bool:
    """Whether ``os.environ[name] = value`` keeps a per-node job of ``nodes`` nodes from meeting."""
    if nodes > 1:
        return True
    host = urlsplit(value).hostname or "" if "://" in value else value  # 'tcp://localhost' (SuPar's) is a host too
    return name == "MASTER_ADDR" and not is_loopback(host)  # one node: its own loopback still meets


def _index_ranks(facts: Facts, findings: list[Finding]) -> list[Finding]:
    """DDP016 at each ``init_process_group`` that takes a spawn index as the rank, where the doctor's own warning
    (``rules_spawn.check_index_as_rank``) is not already there (a helper it could not reach)."""
    have = {(str(Path(f.file).resolve()), f.line) for f in findings if f.code == "DDP016"}
    out = []
    for file, line, code in facts.index_ranks:
        if (str(Path(file).resolve()), line) in have:
            continue
        out.append(replace(make_finding(
            "DDP016", file, line, f"{code}: the rank is the spawn index, the node-local rank", title=INDEX_RANK_TITLE,
            confidence="certain"), fix=INDEX_RANK_FIX))
    return out


# variable -> (code, what orch's per-node task sets, fix); the code's severity: WORLD_SIZE's product waits for
# processes that never come on any node count (an error); RANK's clashes from the second node on (feasibility.py)
_NODE_READS: dict[str, tuple[str, str, str]] = {
    "WORLD_SIZE": ("DDP008", "a per-node task's WORLD_SIZE is every node's processes together (NNODES x "
                   "NPROC_PER_NODE), so the group waits for WORLD_SIZE x GPUs processes that never come",
                   "read the node count from NNODES, which orch's per-node task sets: int(os.environ.get('NNODES', "
                   "1)) (or take the world size as it is: int(os.environ['WORLD_SIZE']))"),
    "RANK": ("DDP016", "a per-node task has no RANK (NODE_RANK is its node's index), so every node's processes take "
             "ranks 0..GPUs-1", "read the node's index from NODE_RANK, which orch's per-node task sets: "
                                "int(os.environ.get('NODE_RANK', 0)) * gpus + local_rank"),
}


def _node_reads(facts: Facts, findings: list[Finding], nodes: int) -> list[Finding]:
    """For a ``per-node`` script, a certain finding at each product of ``WORLD_SIZE`` or ``RANK`` read as a node's
    (``launchstyles/nodevars.py``) where the doctor has none of that code on the line: WORLD_SIZE's an error across
    nodes (the group never fills; on one node too when it has more than one GPU, which is not known here: one node
    of one GPU works), RANK's made the error across nodes by ``feasibility.across_nodes``."""
    have = {(f.code, str(Path(f.file).resolve()), f.line) for f in findings}
    out = []
    for hit in facts.node_reads:
        code, why, fix = _NODE_READS[hit.variable]
        if (code, str(Path(hit.file).resolve()), hit.line) in have:
            continue
        out.append(replace(make_finding(
            code, hit.file, hit.line, f"{hit.code}: {hit.variable} taken for {NODE_MEANINGS[hit.variable][0]}: {why}",
            severity="error" if hit.variable == "WORLD_SIZE" and nodes > 1 else None, confidence="certain",
            title=f"{hit.variable} read as a node's value in a script started once per node"), fix=fix))
    return out


def _mpi_only(facts: Facts) -> list[Finding]:
    """DDP016 where the project reads its rank (or its node's index, its world size) from an MPI launcher's
    variables alone (``facts.mpi_only``): orch's launcher and torchrun set none of them, so every node takes the
    same ranks, or the script stops on the missing variable (``feasibility.across_nodes`` makes it the error)."""
    if facts.mpi_only is None:
        return []
    file, line, code = facts.mpi_only
    return [replace(make_finding(
        "DDP016", file, line, f"{code}: orch's launcher and torchrun never set it", confidence="certain",
        title="a rank read only from an MPI launcher's variables (mpirun's OMPI_COMM_WORLD_RANK, PMI_RANK, "
              "MV2_COMM_WORLD_RANK)"),
        fix="read the launcher's variables first: int(os.environ.get('RANK', os.environ.get('OMPI_COMM_WORLD_RANK', "
            "0))), NODE_RANK for a node's index, WORLD_SIZE for the world size (orch sets them on every node); or run "
            "on one node (--nodes 1)")]


def _loopback(facts: Facts, findings: list[Finding], nodes: int) -> list[Finding]:
    """Across ``nodes`` nodes, a DDP008 error at each loopback ``init_method`` the script forces
    (``launchstyles/loopback.py``), in any style: the nodes never meet (the warning already there made the error)."""
    lines = {(file, line): code for file, line, code in facts.loopback}
    if not lines:
        return findings
    out = [f for f in findings if not (f.code == "DDP008" and (str(Path(f.file).resolve()), f.line) in
                                       {(str(Path(file).resolve()), line) for file, line in lines})]
    for (file, line), code in lines.items():
        out.append(replace(make_finding(
            "DDP008", file, line, f"{code}: the rendezvous is this machine's loopback address, set by the script: "
            f"{ACROSS_MARK} {nodes} nodes, each node waits at its own address and the nodes never meet",
            confidence="certain", marks=frozenset({ACROSS_MARK})), severity="error",
            fix="let the launcher's address through (init_method='env://': orch exports MASTER_ADDR and MASTER_PORT "
                "to every node), or run on one node (--nodes 1)"))
    return out
