"""The memory of bad nodes at work: ``orch submit`` leaves out the nodes recorded within
``launcher.bad_node_ttl``, and a failed job's evidence is recorded.

- :func:`leave_out` (``service/plan.py`` new_plan, so the CLI, the API and orch mcp alike): the active records of the
  job root (``records.restarts.badnodes``) on the job's partition join the request's ``--exclude``; the plan
  says which and why (the dry run prints it). A node the user names in ``--nodelist`` is kept (the
  user's word wins, and the dry run says so); when leaving the nodes out would leave too few, the
  submit stops with a hint (``orch nodes --forget``) instead of queueing a job that cannot start.
- :func:`record_finished` / ``python -m orchestrator.slurm.nodememory --job-dir DIR [--job-id ID]``
  (the batch script, once its training step failed): the job's blame
  (``records.restarts.blame``) and its ranks' records -> ``records.restarts.nodeevidence`` -> ``badnodes.record``.
  The preflight step records its failed nodes itself (``slurm.preflight``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.env import hostlist
from orchestrator.errors import ConfigError, OrchError
from orchestrator.records.restarts import badnodes
from orchestrator.records.restarts.badnodes import BadNode
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.extras import merge_sbatch
from orchestrator.spec.runconfig import JOB_ID_FILE

if TYPE_CHECKING:
    from orchestrator.records.restarts.seen import Seen

FORGET_HINT = "orch nodes lists them; orch nodes --forget NODE (or --all) uses a node again"


@dataclass(frozen=True)
class LeftOut:
    """What the bad-node memory did to one submission: the nodes left out, and those kept (--nodelist)."""

    nodes: tuple[BadNode, ...] = ()
    kept: tuple[BadNode, ...] = ()
    ttl_s: int = 0

    def lines(self) -> list[str]:
        """The dry run's words: one line per node."""
        out = [f"left out: {b.node} ({b.reason}: job {b.job_id}, {b.time}; recorded as bad within "
               f"launcher.bad_node_ttl {self.ttl_s} s)" for b in self.nodes]
        out += [f"kept: {b.node} is named in --nodelist although recorded as bad ({b.reason}: job {b.job_id}, "
                f"{b.time})" for b in self.kept]
        if out:
            out.append(f"({FORGET_HINT})")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"ttl_s": self.ttl_s, "left_out": [b.as_dict() for b in self.nodes],
                "kept": [b.as_dict() for b in self.kept]}


def _listed(value: str | None) -> list[str]:
    if not value or "/" in value:  # unset, a flag, or a file of names (placement says what is wrong)
        return []
    try:
        return hostlist.expand(value)
    except hostlist.HostlistError:
        return []  # placement names the bad list


def leave_out(extra: Mapping[str, str | None], cluster: Cluster, partition_name: str | None, nodes: int,
              job_root: Path, now: float | None = None) -> tuple[dict[str, str | None], LeftOut]:
    """The request's sbatch extras with the active bad nodes of the partition added to ``exclude``."""
    ttl = cluster.launcher.bad_node_ttl
    if ttl <= 0:
        return dict(extra), LeftOut()
    partition = cluster.partition(partition_name)
    hosts = hostlist.expand(partition.nodes)
    bad = [b for b in badnodes.active(job_root, ttl, now) if b.node in set(hosts)]
    if not bad:
        return dict(extra), LeftOut(ttl_s=ttl)
    merged = merge_sbatch(cluster.defaults.sbatch, partition.sbatch, extra)
    wanted = set(_listed(merged.get("nodelist")))
    excluded = _listed(merged.get("exclude"))
    kept = tuple(b for b in bad if b.node in wanted)
    new = tuple(b for b in bad if b.node not in wanted and b.node not in excluded)
    if not new:
        return dict(extra), LeftOut(kept=kept, ttl_s=ttl)
    union = sorted({*excluded, *(b.node for b in new)}, key=hosts.index)
    free = [h for h in hosts if h not in set(union)]
    if len(free) < nodes:
        names = hostlist.compress([b.node for b in new])
        raise ConfigError(f"partition {partition.name} has {len(free)} node(s) left without the nodes recorded as "
                          f"bad ({names}) and those excluded, fewer than the {nodes} the job needs",
                          hint=f"{FORGET_HINT}; or set launcher.bad_node_ttl to 0 in cluster.yaml")
    return {**extra, "exclude": hostlist.compress(union)}, LeftOut(nodes=new, kept=kept, ttl_s=ttl)


def job_root_of(job_dir: Path) -> Path:
    """The job root of a job folder (a sweep's element folder lies one level deeper)."""
    from orchestrator.records.joblayout import ARRAY_FILE

    parent = job_dir.parent
    return parent.parent if (parent / ARRAY_FILE).exists() else parent


def record_finished(job_dir: Path, job_id: str, hosts: Mapping[int, str] | None = None,
                    seen: Seen | None = None) -> list[tuple[str, str]]:
    """Record the nodes a failed job's evidence points at; the ``(node, kind)`` pairs recorded. ``seen``:
    what srun said of the ranks' ends (``slurm.stepreport``), completing the records."""
    from orchestrator.records.restarts.blame import blame
    from orchestrator.records.restarts.nodeevidence import evidence
    from orchestrator.records.restarts.seen import complete
    from orchestrator.spec.runconfig import read_run_config
    from orchestrator.task.outcome import read_outcomes

    records, notes = read_outcomes(job_dir)
    records = complete([r for r in records if r.run == job_id], seen) if seen is not None else records
    try:
        size: int | None = read_run_config(job_dir).world_size
    except OrchError:
        size = None
    found = blame(records, world_size=size, run=job_id, notes=notes)
    pairs = evidence(found, records, run=job_id, hosts=hosts)
    if remembers(bad_node_ttl(job_dir)):  # launcher.bad_node_ttl 0: nothing is remembered (orch nodes lists none)
        for node, kind in pairs:
            badnodes.record(job_root_of(job_dir), node, kind, job_id)
    return pairs


def bad_node_ttl(job_dir: Path) -> int | None:
    """The job's ``launcher.bad_node_ttl`` (job.json); None when job.json cannot be read."""
    from orchestrator.spec.runconfig import read_run_config

    try:
        return read_run_config(job_dir).launcher.bad_node_ttl
    except OrchError:
        return None


def remembers(ttl: int | None) -> bool:
    """Are bad nodes recorded for later jobs? Not with ``bad_node_ttl`` 0: orch submit would never leave them
    out and orch nodes never lists them. An unknown TTL (no job.json): recorded, the cluster's TTL decides."""
    return ttl is None or ttl > 0


def record_preflight(job_dir: Path, verdict: Mapping[str, Any] | None, job_id: str) -> list[str]:
    """The nodes a failed preflight named, recorded as bad (``preflight``); never raises."""
    failed = verdict.get("failed_nodes", []) if isinstance(verdict, Mapping) else []
    nodes = sorted({str(f.get("host")) for f in failed if isinstance(f, dict)})
    recorded: list[str] = []
    if not remembers(bad_node_ttl(job_dir)):
        return recorded
    for node in nodes:
        try:
            badnodes.record(job_root_of(job_dir), node, "preflight", job_id)
            recorded.append(node)
        except OrchError as exc:
            print(f"orch: warning: node {node} not recorded as bad: {exc.message}", file=sys.stderr)
    return recorded


def allocation_hosts(job_dir: Path, environ: Mapping[str, str]) -> dict[int, str] | None:
    """rank -> node in the batch script (srun's block distribution over ``SLURM_JOB_NODELIST``), when the
    step ran on the whole allocation (else None: the caller knows better)."""
    from orchestrator.spec.runconfig import read_run_config

    try:
        cfg = read_run_config(job_dir)
        nodes = hostlist.expand(environ.get("SLURM_JOB_NODELIST", ""))
    except OrchError:
        return None
    if len(nodes) != cfg.nodes:
        return None
    return {rank: nodes[rank // cfg.tasks_per_node] for rank in range(cfg.world_size)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.slurm.nodememory",
                                     description="Record the nodes a failed job's evidence points at.")
    parser.add_argument("--job-dir", required=True)
    parser.add_argument("--job-id", help="the job's id (default: the folder's job_id, an array element's "
                                         "<array id>_<index>)")
    args = parser.parse_args(argv)
    job_dir = Path(args.job_dir)
    try:
        job_id = args.job_id or (job_dir / JOB_ID_FILE).read_text(encoding="utf-8").strip()
    except OSError as exc:
        print(f"orch: warning: no node recorded: {job_dir / JOB_ID_FILE}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        pairs = record_finished(job_dir, job_id, allocation_hosts(job_dir, os.environ))
    except OrchError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    announce(pairs, bad_node_ttl(job_dir))
    return 0


def announce(pairs: Sequence[tuple[str, str]], ttl: int | None) -> None:
    """One batch-log line per node the evidence points at: recorded as bad for ``ttl`` seconds (the job's
    launcher.bad_node_ttl), or, with a TTL of 0, not remembered (as orch nodes and orch submit see it)."""
    for node, kind in pairs:
        if not remembers(ttl):
            print(f"orch: node {node}: {badnodes.KINDS[kind]}; not remembered for later jobs (launcher.bad_node_ttl "
                  "is 0: orch nodes lists no node, orch submit leaves none out)", file=sys.stderr)
            continue
        within = f" for launcher.bad_node_ttl ({ttl} s)" if ttl is not None else ""
        print(f"orch: node {node} recorded as bad ({badnodes.KINDS[kind]}); later jobs leave it out{within} "
              "(orch nodes)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
