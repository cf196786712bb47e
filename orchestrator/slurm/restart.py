"""Restart inside the allocation: what the batch script runs after each training step.

::

    python -m orchestrator.slurm.restart --job-dir DIR --attempt N --step-rc RC --signals S >DIR/restart_next

records the attempt in ``attempts.json`` and the goodput ledger (``restarts/recovery.py``) and decides
(``restarts/policy.py``). It exits 1 when the job ends here (completed, preempted: the requeue
path follows, or a failure not worth a restart, named on stderr, the batch log), and 0 when the script
starts the next ``srun`` step: it then prints that step's MASTER_ADDR, MASTER_PORT, attempt number (after
the step's in-process restarts, ``launcher.restart: in-process``) and node options (``--nodelist=...`` with
``--spare-nodes``; none without), one per line.

It exits 3 (:data:`RESUBMIT_EXIT`) when the failure blamed a node and no spare is left to run without it:
the job is then submitted again without that node (``slurm/resubmit.py``, as ``--preflight=exclude``
does) and resumes from its checkpoint. The sbatch options are in ``DIR/resubmit_next``; stdout holds
the same-nodes restart all the same, which the script falls back to when that sbatch fails. The script
reports the new job with ``--resubmitted ID``. Not for a job array's element, whose folder is shared
by the array.

``--first`` prints the node options of the first attempt (with spares: the first ``nodes`` nodes of
the allocation) and exits 0. The nodes of the next attempt are the allocation's, less each node blamed
in this allocation, as long as enough are left (:func:`next_nodes`, pure).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator.env import distenv, hostlist, taskenv
from orchestrator.errors import OrchError
from orchestrator.records.restarts.attempts import RESUBMIT_NEXT_FILE, read_attempts
from orchestrator.records.restarts.seen import Seen
from orchestrator.restarts.protocol import in_step_restarts
from orchestrator.restarts.recovery import AttemptFacts, end_attempt
from orchestrator.slurm.stepreport import read_seen
from orchestrator.spec.runconfig import RunConfig, read_run_config

STOP_EXIT = 1
RESUBMIT_EXIT = 3


def next_nodes(allocation: Sequence[str], blamed: Sequence[str], nodes: int) -> tuple[list[str], list[str]]:
    """(the next attempt's nodes, the blamed nodes it leaves out): the allocation in order without the
    blamed nodes while ``nodes`` remain; a blamed node is kept (in order) when no spare is left for it."""
    left_out = [n for n in dict.fromkeys(blamed) if n in allocation]
    while left_out and len(allocation) - len(left_out) < nodes:
        left_out.pop()  # the most recently blamed stays out; older ones come back first
    chosen = [n for n in allocation if n not in left_out][:nodes]
    return chosen, left_out


def _blamed_here(job_dir: Path, requeue: int, before: int | None = None, job: str | None = None) -> list[str]:
    """The nodes blamed in this allocation (this Slurm job, this requeue), in order."""
    return [str(a["blamed_node"]) for a in read_attempts(job_dir)
            if a.get("requeue", 0) == requeue and isinstance(a.get("blamed_node"), str)
            and (job is None or a.get("job") in (None, job))
            and (before is None or (isinstance(a.get("attempt"), int) and a["attempt"] < before))]


def _blamed_anywhere(job_dir: Path) -> list[str]:
    """Every node blamed in this job folder, whichever job of it ran there."""
    return [str(a["blamed_node"]) for a in read_attempts(job_dir) if isinstance(a.get("blamed_node"), str)]


def resubmission(cfg: RunConfig, job_dir: Path, environ: Mapping[str, str], requeue: int,
                 blamed: str | None) -> tuple[str, ...]:
    """The sbatch options of a job submitted again without the blamed node(s), or () to restart here:
    nothing blamed, a spare is left for it, a job array's element, or too few nodes would remain (said)."""
    if blamed is None or cfg.node_choice is None or blamed not in cfg.node_choice.partition_nodes:
        return ()
    allocation = _allocation(environ)
    _chosen, left_out = next_nodes(allocation, _blamed_here(job_dir, requeue, job=_job(environ)), cfg.nodes)
    if blamed in left_out:
        return ()  # a spare takes its place (node_options)
    if environ.get("SLURM_ARRAY_TASK_ID"):
        print(f"orch: restart: {blamed} is blamed and no spare is left; an array element is not submitted "
              "again (the array shares its folder): restarting on the same nodes", file=sys.stderr)
        return ()
    from orchestrator.slurm.resubmit import without

    plan = without(cfg.node_choice, _blamed_anywhere(job_dir), nodes=cfg.nodes + cfg.spare_nodes)
    if not plan.sbatch_args:
        print(f"orch: restart: {blamed} is blamed and no spare is left, but {plan.why}: restarting on the "
              "same nodes", file=sys.stderr)
    return plan.sbatch_args


def _allocation(environ: Mapping[str, str]) -> list[str]:
    try:
        return hostlist.expand(environ.get("SLURM_JOB_NODELIST", ""))
    except OrchError:
        return []


def _job(environ: Mapping[str, str]) -> str | None:
    return distenv.script_run_id(environ, "") or None


def step_nodes(cfg: RunConfig, job_dir: Path, environ: Mapping[str, str], requeue: int, attempt: int) -> list[str]:
    """The nodes attempt ``attempt`` ran on, in order (the same choice :func:`node_options` made for it)."""
    allocation = _allocation(environ)
    if cfg.spare_nodes == 0:
        return allocation[:cfg.nodes]
    return next_nodes(allocation, _blamed_here(job_dir, requeue, before=attempt, job=_job(environ)), cfg.nodes)[0]


def _remember_bad_nodes(job_dir: Path, run: str | None, nodes: Sequence[str], per_node: int,
                        seen: Seen | None = None) -> None:
    """A failed attempt's evidence (hang, signal death, NCCL/CUDA error; never the job's own exception)
    goes to the job root's bad_nodes.jsonl (slurm.nodememory), after every attempt, not only the last."""
    from orchestrator.records.jobdirs import read_id
    from orchestrator.slurm import nodememory
    from orchestrator.spec.runconfig import JOB_ID_FILE

    hosts = {rank: node for i, node in enumerate(nodes) for rank in range(i * per_node, (i + 1) * per_node)}
    try:
        job_id = read_id(job_dir / JOB_ID_FILE) or run or ""
        pairs = nodememory.record_finished(job_dir, job_id, hosts or None, seen=seen)
    except (OrchError, OSError) as exc:
        print(f"orch: warning: no bad node recorded: {exc}", file=sys.stderr)
        return
    nodememory.announce(pairs, nodememory.bad_node_ttl(job_dir))


def node_addr(node: str) -> str:
    """A node's NodeAddr from slurmctld (names need not resolve on test clusters); the name otherwise."""
    from orchestrator.slurm.client import command_output

    try:
        text = command_output(["scontrol", "show", "node", node])
    except OrchError:
        return node
    found = re.search(r"NodeAddr=(\S+)", text)
    return found.group(1) if found else node


def node_options(cfg: RunConfig, job_dir: Path, environ: Mapping[str, str], requeue: int) -> tuple[list[str], str]:
    """The next attempt's srun node options and its head node ("" without spares: srun's own choice)."""
    if cfg.spare_nodes == 0:
        return [], ""
    allocation = hostlist.expand(environ.get("SLURM_JOB_NODELIST", ""))
    chosen, left_out = next_nodes(allocation, _blamed_here(job_dir, requeue, job=_job(environ)), cfg.nodes)
    if left_out:
        print(f"orch: restart: leaving out {', '.join(left_out)} (blamed); running on {', '.join(chosen)}",
              file=sys.stderr)
    # --ntasks too: srun inherits the allocation's SLURM_NTASKS (nodes + spares), too many for fewer nodes
    return [f"--nodelist={','.join(chosen)}", f"--ntasks={cfg.nodes * cfg.tasks_per_node}"], chosen[0]


def _write_resubmit(job_dir: Path, args: Sequence[str]) -> None:
    """``resubmit_next``: the sbatch options of the job submitted again (removed when there is none)."""
    from orchestrator.records.atomic import write_text_atomic
    from orchestrator.slurm.resubmit import sbatch_lines

    path = job_dir / RESUBMIT_NEXT_FILE
    if args:
        write_text_atomic(path, sbatch_lines(args))
    else:
        path.unlink(missing_ok=True)


def _resubmitted(job_dir: Path, job_id: str) -> int:
    """The batch script submitted the job again: the folder follows the new job, the attempt says so."""
    from orchestrator.records.restarts.attempts import write_attempts
    from orchestrator.slurm.resubmit import record_next_job

    record_next_job(job_dir, job_id)
    history = read_attempts(job_dir)
    if history:
        history[-1]["resubmitted_as"] = job_id
        write_attempts(job_dir, history)
    print(f"orch: restart: job {job_id} runs the next attempt; this job stops here", file=sys.stderr)
    return 0


def _float(text: str | None) -> float | None:
    try:
        return float((text or "").replace(",", "."))
    except ValueError:
        return None


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.slurm.restart")
    parser.add_argument("--job-dir", required=True)
    parser.add_argument("--first", action="store_true", help="print the first attempt's node options")
    parser.add_argument("--attempt", type=int, default=0)
    parser.add_argument("--step-rc", type=int, default=0)
    parser.add_argument("--signals", type=int, default=0)
    parser.add_argument("--resubmitted", metavar="ID", help="record the job submitted again without a blamed node")
    args = parser.parse_args(argv)
    env = os.environ if environ is None else environ
    job_dir = Path(args.job_dir)
    try:
        if args.resubmitted:
            return _resubmitted(job_dir, args.resubmitted)
        cfg = read_run_config(job_dir)
        requeue = distenv.restart_count({k: v for k, v in env.items() if k != distenv.ATTEMPT_VAR})
        if args.first:
            print("\n".join(node_options(cfg, job_dir, env, requeue)[0]))
            return 0
        now = time.time()
        run, nodes = _job(env), tuple(step_nodes(cfg, job_dir, env, requeue, args.attempt))
        # the step's in-process restarts (launcher.restart: in-process) were attempts of their own
        attempt = args.attempt + in_step_restarts(read_attempts(job_dir), job=run, requeue=requeue, base=args.attempt)
        # srun's report in the batch log: the ranks killed before they could write their records
        seen = read_seen(job_dir, run, restart=requeue + attempt, nodes=nodes,
                         tasks_per_node=cfg.tasks_per_node) if args.step_rc != 0 else None
        facts = AttemptFacts(attempt=attempt, requeue=requeue, exit_code=args.step_rc,
                             started=_float(env.get("ORCH_SRUN_START")) or now,
                             batch_started=_float(env.get("ORCH_BATCH_START")), interrupted=args.signals > 0,
                             run=run, step_nodes=nodes, seen=seen,
                             loopback=taskenv.is_loopback(env.get("MASTER_ADDR", "")))
        decision = end_attempt(job_dir, cfg, facts, now=now)
        if args.step_rc != 0 and not facts.interrupted:
            _remember_bad_nodes(job_dir, facts.run, facts.step_nodes, cfg.tasks_per_node, seen)
        if not decision.restart:
            if decision.message:
                print(f"orch: attempt {attempt} {decision.kind} (exit {args.step_rc}): {decision.message}",
                      file=sys.stderr)
            return STOP_EXIT
        where = f" rank {decision.blamed_rank}" if decision.blamed_rank is not None else ""
        where += f" on {decision.blamed_node}" if decision.blamed_node else ""
        elsewhere = resubmission(cfg, job_dir, env, requeue, decision.blamed_node)
        options, head = node_options(cfg, job_dir, env, requeue)
        addr = node_addr(head) if head else env.get("MASTER_ADDR", "")
        nxt = {**env, distenv.ATTEMPT_VAR: str(attempt + 1)}
        port = distenv.job_master_port(nxt, cfg.launcher.port_range)
        how = ("submitting the job again without it, to resume" if elsewhere
               else "restarting in the allocation")
        print(f"orch: attempt {attempt} {decision.kind}{where} (exit {args.step_rc}); {how} from the newest "
              f"checkpoint (attempt {attempt + 1} of at most {cfg.launcher.max_restarts + 1})", file=sys.stderr)
        _write_resubmit(job_dir, elsewhere)
        print("\n".join([addr, str(port), str(attempt + 1), *options]))
        return RESUBMIT_EXIT if elsewhere else 0
    except OrchError as exc:
        print(exc.render(), file=sys.stderr)
        return STOP_EXIT


if __name__ == "__main__":
    sys.exit(main())
