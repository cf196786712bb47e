"""The cluster files orch can use (``orch clusters``): ``./cluster.yaml`` and every ``NAME.yaml`` in
``$XDG_CONFIG_HOME/orch/clusters`` (``~/.config/orch/clusters``), whether each is reachable (for a cluster on this
machine: Slurm's commands are installed and its controller answers ``scontrol ping`` within :data:`PING_TIMEOUT` s,
asked once for every file, and its partitions are the ones sinfo lists), and writing a named cluster file from
what sinfo says of the cluster this machine is on (``orch clusters init NAME``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from orchestrator.errors import OrchError

PING_TIMEOUT = 5.0


def cluster_files(environ: dict[str, str] | os._Environ[str], cwd: Path) -> list[tuple[str, Path, str]]:
    """(what picks it, file, source) of every cluster file: ./cluster.yaml, then the named ones."""
    from orchestrator.spec.clusterfiles import DEFAULT_CLUSTER_FILE, named_cluster_files

    found = []
    local = cwd / DEFAULT_CLUSTER_FILE
    if local.is_file():
        found.append((f"./{DEFAULT_CLUSTER_FILE}", local, "current directory"))
    found += [(name, path, "named") for name, path in named_cluster_files(environ).items()]
    return found


def slurm_reachable() -> tuple[bool, str]:
    """(reachable, why) of this machine's Slurm: its commands present, its controller answering."""
    import shutil

    from orchestrator.slurm.client import run_command

    missing = [tool for tool in ("sbatch", "squeue", "scontrol") if shutil.which(tool) is None]
    if missing:
        return False, f"Slurm's commands are not installed here ({', '.join(missing)} not on PATH)"
    try:
        proc = run_command(["scontrol", "ping"], PING_TIMEOUT)
    except OrchError as exc:
        return False, exc.message
    text = (proc.stdout + proc.stderr).strip()
    if "is UP" in text:
        return True, text.splitlines()[0] if text else "up"
    return False, (text.splitlines()[0] if text else f"scontrol ping exited {proc.returncode}")[:200]


def describe(environ: dict[str, str] | os._Environ[str], cwd: Path) -> list[dict[str, Any]]:
    from orchestrator.records.cache import load_cluster
    from orchestrator.spec.clusterfiles import find_cluster_file

    try:
        default: Path | None = find_cluster_file(None, environ, cwd)
    except OrchError:
        default = None
    rows: list[dict[str, Any]] = []
    reach: tuple[bool, str] | None = None
    known: set[str] | None = None
    for label, path, source in cluster_files(environ, cwd):
        row: dict[str, Any] = {"pick": label, "file": str(path), "source": source, "default": path == default,
                               "name": None, "partitions": [], "reachable": False, "reason": None}
        try:
            cluster = load_cluster(path)
        except OrchError as exc:
            row["reason"] = f"invalid: {exc.message.splitlines()[0]}"
            rows.append(row)
            continue
        row["name"] = cluster.name
        row["partitions"] = [p.name for p in cluster.partitions]
        reach = reach or slurm_reachable()
        row["reachable"], row["reason"] = reach
        if reach[0]:  # the controller answers: for this file only if its partitions are that cluster's
            known = known if known is not None else _partitions_here()
            missing = [p for p in row["partitions"] if known is not None and p not in known]
            if missing:
                row["reachable"] = False
                row["reason"] = (f"Slurm answers here, but partition(s) {', '.join(missing)} of {path.name} are not "
                                 f"this cluster's (sinfo: {', '.join(sorted(known or [])) or 'none'})")
        rows.append(row)
    return rows


def _partitions_here() -> set[str] | None:
    """The partitions this machine's Slurm has (None: sinfo could not say)."""
    from orchestrator.slurm.client import sinfo
    from orchestrator.slurm.discover import parse_sinfo

    try:
        return {p.name for p in parse_sinfo(sinfo())}
    except OrchError:
        return None


def init(name: str | None, *, force: bool, environ: dict[str, str] | os._Environ[str]) -> Path:
    """``orch clusters init NAME``: the cluster file of the cluster this machine's Slurm answers for, written
    to the named clusters' folder and checked by loading it as every verb does."""
    from orchestrator.records.atomic import write_text_atomic
    from orchestrator.records.cache import load_cluster
    from orchestrator.slurm.client import sinfo
    from orchestrator.slurm.discover import cluster_text, parse_sinfo
    from orchestrator.spec.clusterfiles import clusters_dir, is_cluster_name

    if not name or not is_cluster_name(name):
        raise OrchError(f"orch clusters init needs a NAME of letters, digits, '.', '_' or '-' (got {name!r})",
                        hint="e.g. orch clusters init mycluster, then --cluster mycluster")
    folder = clusters_dir(environ)
    if folder is None:
        raise OrchError("no folder for named cluster files ($XDG_CONFIG_HOME or $HOME is not set)",
                        hint="set HOME, or write the file yourself and pass --cluster PATH")
    path = folder / f"{name}.yaml"
    if path.exists() and not force:
        raise OrchError(f"{path} exists already", hint="pass --force to replace it, or choose another NAME")
    partitions = parse_sinfo(sinfo())
    if not any(p.nodes for p in partitions):
        raise OrchError("sinfo lists no partition with nodes", hint="check SLURM_CONF and `sinfo` on this machine")
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, cluster_text(name, partitions))
    try:
        load_cluster(path)
    except OrchError:
        path.unlink(missing_ok=True)  # nothing half-right is left behind
        raise
    return path
