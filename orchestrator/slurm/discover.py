"""What the cluster orch runs on says it has, read into cluster.yaml (pure: the Slurm client runs ``sinfo``).

``orch clusters init NAME`` asks ``sinfo`` for one line per partition and node configuration
(:data:`SINFO_FORMAT`: partition, nodes, gres, CPUs, memory in MB, time limit) and writes a cluster file
from it (:func:`cluster_text`): each partition with its nodes, GPUs per node (the ``gpu`` entries of its
gres; their type when there is one), CPUs, memory and time limit, and Slurm's default partition as
``defaults.partition``. A partition whose nodes differ (two lines) gets the smallest of each: the limits
orch checks hold on every node of it. ``orch clusters`` uses :func:`parse_sinfo` too: a file is reachable
only when the partitions it names are this cluster's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

SINFO_FORMAT = "%P|%N|%G|%c|%m|%l"
NO_LIMIT = {"infinite", "unlimited"}
_GPU_RE = re.compile(r"^gpu(?::([^:(]+))?(?::(\d+))?")
_HEADER = ("# Written by `orch clusters init` from this cluster's sinfo: partitions, nodes, GPUs (gres), CPUs,\n"
           "# memory (MB) and time limits. Check it with `orch submit JOB --cluster {name} --dry-run`, then add\n"
           "# defaults (time, account, qos), env and launcher settings (docs/cluster-yaml.md).\n")


@dataclass
class FoundPartition:
    """One partition as sinfo describes it (its node configurations merged)."""

    name: str
    nodes: list[str] = field(default_factory=list)  # hostlist expressions, one per node configuration
    gpus: int | None = None
    gpu_types: set[str] = field(default_factory=set)
    cpus: int | None = None
    mem_mb: int | None = None
    max_time: str = "UNLIMITED"
    default: bool = False


def gpus_of(gres: str) -> tuple[int, str | None]:
    """GPUs per node and their type from sinfo's gres (``gpu:8``, ``gpu:a100:8(S:0-1)``, ``gpu:4,nvme:1``,
    ``(null)``): the sum of the ``gpu`` entries, the type when they name one alone."""
    count, types = 0, set()
    for entry in gres.split(","):
        match = _GPU_RE.match(entry.strip())
        if not match:
            continue
        kind, number = match.group(1), match.group(2)
        if number is None and kind is not None and kind.isdigit():  # gpu:8 (no type)
            kind, number = None, kind
        count += int(number) if number is not None else 1
        if kind is not None:
            types.add(kind)
    return count, (types.pop() if len(types) == 1 else None)


def slurm_time(limit: str) -> str:
    """sinfo's time limit as cluster.yaml's ``max_time`` (``infinite`` -> ``UNLIMITED``)."""
    text = limit.strip()
    return "UNLIMITED" if not text or text.lower() in NO_LIMIT or text == "n/a" else text


def _number(text: str) -> int | None:
    digits = text.strip().rstrip("+")
    return int(digits) if digits.isdigit() else None


def _smaller(old: int | None, new: int | None) -> int | None:
    return new if old is None else old if new is None else min(old, new)


def parse_sinfo(text: str) -> list[FoundPartition]:
    """sinfo's lines (:data:`SINFO_FORMAT`, no header) as partitions, in sinfo's order."""
    found: dict[str, FoundPartition] = {}
    for line in text.splitlines():
        cells = line.strip().split("|")
        if len(cells) != 6 or not cells[0]:
            continue
        name, default = cells[0].rstrip("*"), cells[0].endswith("*")
        part = found.setdefault(name, FoundPartition(name=name))
        part.default = part.default or default
        if cells[1] and cells[1] != "n/a":
            part.nodes.append(cells[1])
        gpus, kind = gpus_of(cells[2])
        part.gpus = _smaller(part.gpus, gpus)
        if kind is not None:
            part.gpu_types.add(kind)
        part.cpus = _smaller(part.cpus, _number(cells[3]))
        part.mem_mb = _smaller(part.mem_mb, _number(cells[4]))
        part.max_time = slurm_time(cells[5])
    return list(found.values())


def cluster_text(name: str, partitions: list[FoundPartition]) -> str:
    """A cluster file (YAML) for ``partitions``; the ones without nodes (none up, none configured) are left out."""
    usable = [p for p in partitions if p.nodes]
    lines = [_HEADER.format(name=name).rstrip("\n"), f"name: {json.dumps(name)}", "partitions:"]
    for part in usable:
        lines += [f"  - name: {json.dumps(part.name)}",
                  f"    nodes: {json.dumps(','.join(part.nodes))}",
                  f"    gpus_per_node: {part.gpus or 0}",
                  f"    cpus_per_node: {part.cpus or 1}",
                  f"    mem_per_node: {part.mem_mb or 1}",
                  f"    max_time: {json.dumps(part.max_time)}"]
        if len(part.gpu_types) == 1:
            lines.append(f"    gpu_type: {json.dumps(next(iter(part.gpu_types)))}")
    default = next((p.name for p in usable if p.default), usable[0].name if usable else None)
    if default is not None:
        lines += ["defaults:", f"  partition: {json.dumps(default)}"]
    return "\n".join(lines) + "\n"
