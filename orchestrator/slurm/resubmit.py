"""Submitting a job again without some nodes: the one owner of that rule.

Two paths hand a job to a fresh ``sbatch`` of its own batch script, with ``--exclude``: a failed
preflight (``--preflight=exclude``, ``slurm/preflight.py``) and a restart whose blamed node has no spare
left in the allocation (``slurm/restart.py``). Both start from the nodes the submit asked for
(``job.json``'s ``node_choice``): the options are computed here (:func:`without`, pure), and the new
job's id is recorded here (:func:`record_next_job`: ``job_id``, the job index), so ``orch status``,
``logs`` and ``cancel`` follow the folder to the job that runs now.

A fresh sbatch rather than ``scontrol requeue``: Slurm 22.05 changes ExcNodeList only while a job is
pending, and a requeue issued from the batch script kills it before it could update the requeued job.
sbatch's command-line options win over the script's ``#SBATCH`` lines, so ``--exclude`` repeats the
submit-time exclusions and ``--nodelist`` the asked-for nodes less the excluded ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.env import hostlist
from orchestrator.errors import OrchError
from orchestrator.slurm.tracking import record_id
from orchestrator.spec.runconfig import NodeChoice, read_run_config


@dataclass(frozen=True)
class Without:
    """The sbatch options of the next job (empty: not possible, ``why`` says so) and the nodes it leaves out."""

    excluded: tuple[str, ...]
    sbatch_args: tuple[str, ...]
    why: str = ""


def without(choice: NodeChoice, bad: Iterable[str], *, nodes: int) -> Without:
    """The next job's ``--exclude``/``--nodelist`` without ``bad`` (and the submit-time exclusions), when at
    least ``nodes`` nodes of the partition are left (pure). A name that is not a node of the partition (a
    host name a rank saw) is no node to exclude: sbatch would refuse it."""
    excluded = tuple(sorted({*choice.exclude, *(node for node in bad if node in choice.partition_nodes)}))
    remaining = [node for node in choice.partition_nodes if node not in excluded]
    if len(remaining) < nodes:
        return Without(excluded, (), f"without {hostlist.compress(list(excluded))} only {len(remaining)} "
                                     f"node(s) remain, the job needs {nodes}")
    nodelist = [node for node in choice.nodelist if node not in excluded]
    return Without(excluded, (f"--exclude={hostlist.compress(list(excluded))}",
                              f"--nodelist={hostlist.compress(nodelist) if nodelist else ''}"))


def sbatch_lines(args: Sequence[str]) -> str:
    """What the batch script reads with ``mapfile``: one option a line."""
    return "".join(f"{arg}\n" for arg in args)


def record_next_job(job_dir: Path, job_id: str) -> None:
    """The folder's job is now ``job_id``: its ``job_id`` file and a line in the job index."""
    from orchestrator.records.jobindex import Submitted, now_text, record_submit

    submitted = now_text()  # right after the batch script's sbatch returned
    record_id(job_dir, job_id)  # the one writer of job_id (orch submit's too)
    try:
        cfg = read_run_config(job_dir)
    except OrchError:
        return
    record_submit(job_dir, Submitted(job_id=job_id, job_dir=str(job_dir), submitted=submitted,
                                     job_name=cfg.job_name, cluster=cfg.cluster_name))
