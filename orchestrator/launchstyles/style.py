"""Which launch style a script is written for (``orchestrator.spec.launch``), decided from its facts (``facts.py``):
a spawn of training processes that no launcher check keeps from running is a ``per-node`` script; a project that
takes the local rank only from the legacy ``--local_rank`` flag is ``local-rank-arg``. A script that reads
``SLURM_PROCID`` / ``SLURM_LOCALID`` (or sizes its layout from ``SLURM_NTASKS_PER_NODE``) from the environment and
none of torchrun's rank variables is ``slurm``.
Anything else is ``env`` (torchrun's). The facts cover the script and the project modules it reaches (a spawn or
Slurm's variables in a helper decide too), and ``why`` names the file and line that decided.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.launchstyles.facts import Facts, entry_tree, read
from orchestrator.launchstyles.localrank import declared_flag
from orchestrator.source.projectfiles import shown
from orchestrator.spec.launch import AUTO, LOCAL_RANK_FLAGS, Launch
from orchestrator.spec.pysource import quote_line


def _line(path: str, line: int, entry: Path) -> str:
    """``train.py:46: mp.spawn(train, nprocs=args.gpus)`` (the code of that line, shortened; a project module
    of ``entry`` by its path from the entry's folder: ``helpers/spawn.py:12: ...``)."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    return quote_line(shown(entry, path), lines, line)


def detect(facts: Facts) -> Launch:
    """The style the script of ``facts`` is written for; per-node first (a spawning script may also declare
    ``--local_rank``)."""
    spawn = next((s for s in facts.spawns if s.strategy is None), None)  # a framework's strategy spawns, not the script
    if spawn is not None:
        return Launch(style="per-node", how="detected", why=_line(spawn.file, spawn.line, facts.entry),
                      flag=LOCAL_RANK_FLAGS[1])
    if facts.local_rank:
        hit = facts.local_rank[0]
        return Launch(style="local-rank-arg", how="detected", why=_line(hit.file, hit.line, facts.entry),
                      flag=facts.flag or LOCAL_RANK_FLAGS[1])
    if facts.slurm is not None and not facts.torchrun_vars:
        return Launch(style="slurm", how="detected", why=facts.slurm)
    return Launch()


def choose(asked: str, path: Path | None, facts: Facts | None = None) -> Launch:
    """``--launch``'s style (``auto``: read the script, or use its ``facts`` when read already; a module not found
    here: ``env``)."""
    if asked != AUTO:
        flag = (facts.flag if facts is not None else declared_flag(entry_tree(path))) if path is not None else None
        return Launch(style=asked, how="asked", why=f"--launch {asked}",  # type: ignore[arg-type]
                      flag=flag or LOCAL_RANK_FLAGS[1])
    if path is None:
        return Launch()
    return detect(facts if facts is not None else read(path))
