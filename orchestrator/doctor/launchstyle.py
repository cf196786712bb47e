"""Which launch style a script is written for (``orchestrator.spec.launch``), read from its source.

The doctor's findings decide most of it: a spawn of training processes no launcher check keeps from
running (DDP014) is a ``per-node`` script; a project that takes the local rank only from the legacy
``--local_rank`` flag (DDP015) is ``local-rank-arg``. A script that reads ``SLURM_PROCID`` /
``SLURM_LOCALID`` from the environment and none of torchrun's rank variables is ``slurm`` (the script with
the project modules it reaches, ``projectfiles.py``: a spawn or Slurm's variables in a helper decide too, and
``why`` names that file and line). Anything else is
``env`` (torchrun's). The style answers its finding (the script runs as written: DDP014/DDP015 are not
shown), and adds one refusal: a ``per-node`` script that sets ``MASTER_ADDR``/``MASTER_PORT`` to a
constant cannot meet the other nodes at orch's address (an error, with the fix).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.projectfiles import project_files, shown
from orchestrator.doctor.rules_spawn import STRATEGY_MARK
from orchestrator.env.taskenv import is_loopback
from orchestrator.spec.launch import AUTO, LOCAL_RANK_FLAGS, Launch
from orchestrator.spec.pysource import UnreadableSource, parse_source, quote_line

# style -> the finding that says a script is written for it (and that running it that way answers)
ANSWERS: dict[str, str] = {"per-node": "DDP014", "local-rank-arg": "DDP015"}
SLURM_RANK_VARS = frozenset({"SLURM_PROCID", "SLURM_LOCALID"})
TORCHRUN_RANK_VARS = frozenset({"RANK", "LOCAL_RANK"})
MASTER_VARS = ("MASTER_ADDR", "MASTER_PORT")


def _line(path: str, line: int, entry: Path | None = None) -> str:
    """``train.py:46: mp.spawn(train, nprocs=args.gpus)`` (the code of that line, shortened; a project module
    of ``entry`` by its path from the entry's folder: ``helpers/spawn.py:12: ...``)."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    return quote_line(shown(entry, path) if entry is not None else Path(path).name, lines, line)


def _tree(path: Path) -> ast.Module | None:
    try:
        return parse_source(path.read_text(encoding="utf-8", errors="replace"), str(path))
    except (OSError, UnreadableSource, RecursionError, MemoryError):
        return None


def _strings(tree: ast.Module) -> dict[str, int]:
    """Every string constant of the file and the first line it is on."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 40:
            found.setdefault(node.value, getattr(node, "lineno", 0))
    return found


def declared_flag(tree: ast.Module | None) -> str | None:
    """The first spelling of ``--local_rank``/``--local-rank`` an ``add_argument`` declares."""
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            for arg in node.args:
                if isinstance(arg, ast.Constant) and arg.value in LOCAL_RANK_FLAGS:
                    return str(arg.value)
    return None


def detect(path: Path, findings: Sequence[Finding]) -> Launch:
    """The style the script at ``path`` is written for (``findings``: the doctor's, unfiltered, the project
    modules' included: a spawn in a helper module decides as one in the script). The Slurm variables are read
    in the script and the project modules it reaches (``projectfiles.py``)."""
    tree = _tree(path)
    for style, code in ANSWERS.items():  # per-node first: a spawning script may also declare --local_rank
        hit = next((f for f in findings if f.code == code and not spawn_strategy(f)), None)
        if hit is not None:
            flag = declared_flag(tree) or LOCAL_RANK_FLAGS[1]
            return Launch(style=style, how="detected", why=_line(hit.file, hit.line, path),  # type: ignore[arg-type]
                          flag=flag if style == "local-rank-arg" else LOCAL_RANK_FLAGS[1])
    files = project_files(path) if tree is not None else []
    strings = [(source, _strings(source.tree)) for source in files]
    slurm = next(((source, min(line for name, line in found.items() if name in SLURM_RANK_VARS))
                  for source, found in strings if SLURM_RANK_VARS & found.keys()), None)
    if slurm is not None and not any(TORCHRUN_RANK_VARS & found.keys() for _, found in strings):
        return Launch(style="slurm", how="detected", why=slurm[0].quote(slurm[1]))
    return Launch()


def spawn_strategy(finding: Finding) -> bool:
    """A DDP014 about a framework's spawning strategy (``Trainer(strategy="ddp_spawn")``): the framework, not the
    script, spawns, and starting the script per node would not make it right (it is refused at submit)."""
    return finding.code == "DDP014" and STRATEGY_MARK in finding.message


def choose(asked: str, path: Path | None, findings: Sequence[Finding]) -> Launch:
    """``--launch``'s style (``auto``: read the script; a module not found here: ``env``)."""
    if asked != AUTO:
        flag = declared_flag(_tree(path)) if path is not None else None
        return Launch(style=asked, how="asked", why=f"--launch {asked}",  # type: ignore[arg-type]
                      flag=flag or LOCAL_RANK_FLAGS[1])
    return detect(path, findings) if path is not None else Launch()


def answered(launch: Launch, findings: Iterable[Finding], nodes: int = 1) -> list[Finding]:
    """The findings left once the script runs in its style on ``nodes`` nodes: the one the style answers is
    dropped; under ``per-node``, ``os.environ["MASTER_ADDR"] = <constant>`` (a DDP008 line) is an error
    unless it is this machine's loopback on one node (a single-node script: a warning), and a constant
    MASTER_PORT an error across nodes."""
    gone = ANSWERS.get(launch.style)
    out: list[Finding] = []
    masters: dict[str, dict[int, tuple[str, str]]] = {}
    for finding in findings:
        if finding.code == gone:
            continue
        if launch.style == "per-node" and finding.code == "DDP008":
            if finding.file not in masters:
                masters[finding.file] = master_lines(_tree(Path(finding.file)))
            hit = masters[finding.file].get(finding.line)
            if hit is not None and _blocks(*hit, nodes):
                finding = replace(finding, severity="error", message=(
                    f"{finding.message}: a per-node script that sets {hit[0]} to a constant cannot meet "
                    f"{'the other nodes' if nodes > 1 else 'its processes'} at the address orch gives every node"),
                    fix="delete the line: orch exports MASTER_ADDR and MASTER_PORT to every node (a fixed address "
                        "is one machine's, a fixed port may be taken)")
        out.append(finding)
    return out


def _blocks(name: str, value: str, nodes: int) -> bool:
    """Whether ``os.environ[name] = value`` keeps a per-node job of ``nodes`` nodes from meeting."""
    if nodes > 1:
        return True
    return name == "MASTER_ADDR" and not is_loopback(value)  # one node: its own loopback still meets


def master_lines(tree: ast.Module | None) -> dict[int, tuple[str, str]]:
    """``{line: (name, value)}`` of ``os.environ["MASTER_ADDR" | "MASTER_PORT"] = value`` (the value's source
    when it is not a constant string)."""
    if tree is None:
        return {}
    lines: dict[int, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                        and target.slice.value in MASTER_VARS and ast.unparse(target.value) == "os.environ"):
                    value = node.value.value if isinstance(node.value, ast.Constant) else ast.unparse(node.value)
                    lines[node.lineno] = (str(target.slice.value), str(value))
    return lines
