"""Restart inside the allocation: what the batch script runs after each training step (issue 20).

::

    python -m orchestrator.slurm.restart --job-dir DIR --attempt N --step-rc RC --signals S >DIR/restart_next

records the attempt in ``attempts.json`` and the goodput ledger (``task/recovery.py``) and decides
(``records/restartpolicy.py``). It exits 1 when the job ends here (completed, preempted: the requeue
path follows, or a failure not worth a restart, named on stderr, the batch log), and 0 when the script
starts the next ``srun`` step: it then prints that step's MASTER_ADDR, MASTER_PORT and its node options
(``--nodelist=...`` with ``--spare-nodes``; none without), one per line.

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

from orchestrator.env import distenv, hostlist
from orchestrator.errors import OrchError
from orchestrator.records.attempts import read_attempts
from orchestrator.records.seen import Seen
from orchestrator.slurm.stepreport import read_seen
from orchestrator.spec.runconfig import RunConfig, read_run_config
from orchestrator.task.recovery import AttemptFacts, end_attempt

STOP_EXIT = 1


def next_nodes(allocation: Sequence[str], blamed: Sequence[str], nodes: int) -> tuple[list[str], list[str]]:
    """(the next attempt's nodes, the blamed nodes it leaves out): the allocation in order without the
    blamed nodes while ``nodes`` remain; a blamed node is kept (in order) when no spare is left for it."""
    left_out = [n for n in dict.fromkeys(blamed) if n in allocation]
    while left_out and len(allocation) - len(left_out) < nodes:
        left_out.pop()  # the most recently blamed stays out; older ones come back first
    chosen = [n for n in allocation if n not in left_out][:nodes]
    return chosen, left_out


def _blamed_here(job_dir: Path, requeue: int, before: int | None = None) -> list[str]:
    return [str(a["blamed_node"]) for a in read_attempts(job_dir)
            if a.get("requeue", 0) == requeue and isinstance(a.get("blamed_node"), str)
            and (before is None or (isinstance(a.get("attempt"), int) and a["attempt"] < before))]


def step_nodes(cfg: RunConfig, job_dir: Path, environ: Mapping[str, str], requeue: int, attempt: int) -> list[str]:
    """The nodes attempt ``attempt`` ran on, in order (the same choice :func:`node_options` made for it)."""
    try:
        allocation = hostlist.expand(environ.get("SLURM_JOB_NODELIST", ""))
    except OrchError:
        return []
    if cfg.spare_nodes == 0:
        return allocation[:cfg.nodes]
    return next_nodes(allocation, _blamed_here(job_dir, requeue, before=attempt), cfg.nodes)[0]


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
    nodememory.announce(pairs)


def _node_addr(node: str) -> str:
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
    chosen, left_out = next_nodes(allocation, _blamed_here(job_dir, requeue), cfg.nodes)
    if left_out:
        print(f"orch: restart: leaving out {', '.join(left_out)} (blamed); running on {', '.join(chosen)}",
              file=sys.stderr)
    # --ntasks too: srun inherits the allocation's SLURM_NTASKS (nodes + spares), too many for fewer nodes
    return [f"--nodelist={','.join(chosen)}", f"--ntasks={cfg.nodes * cfg.tasks_per_node}"], chosen[0]


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
    args = parser.parse_args(argv)
    env = os.environ if environ is None else environ
    job_dir = Path(args.job_dir)
    try:
        cfg = read_run_config(job_dir)
        requeue = distenv.restart_count({k: v for k, v in env.items() if k != distenv.ATTEMPT_VAR})
        if args.first:
            print("\n".join(node_options(cfg, job_dir, env, requeue)[0]))
            return 0
        now = time.time()
        run, nodes = distenv.script_run_id(env, "") or None, tuple(step_nodes(cfg, job_dir, env, requeue, args.attempt))
        # srun's report in the batch log: the ranks killed before they could write their records
        seen = read_seen(job_dir, run, restart=requeue + args.attempt, nodes=nodes,
                         tasks_per_node=cfg.tasks_per_node) if args.step_rc != 0 else None
        facts = AttemptFacts(attempt=args.attempt, requeue=requeue, exit_code=args.step_rc,
                             started=_float(env.get("ORCH_SRUN_START")) or now,
                             batch_started=_float(env.get("ORCH_BATCH_START")), interrupted=args.signals > 0,
                             run=run, step_nodes=nodes, seen=seen)
        decision = end_attempt(job_dir, cfg, facts, now=now)
        if args.step_rc != 0 and not facts.interrupted:
            _remember_bad_nodes(job_dir, facts.run, facts.step_nodes, cfg.tasks_per_node, seen)
        if not decision.restart:
            if decision.message:
                print(f"orch: attempt {args.attempt} {decision.kind} (exit {args.step_rc}): {decision.message}",
                      file=sys.stderr)
            return STOP_EXIT
        options, head = node_options(cfg, job_dir, env, requeue)
        addr = _node_addr(head) if head else env.get("MASTER_ADDR", "")
        nxt = {**env, distenv.ATTEMPT_VAR: str(args.attempt + 1)}
        port = distenv.job_master_port(nxt, cfg.launcher.port_range)
        where = f" rank {decision.blamed_rank}" if decision.blamed_rank is not None else ""
        print(f"orch: attempt {args.attempt} {decision.kind}{where} (exit {args.step_rc}); restarting in the "
              f"allocation from the newest checkpoint (attempt {args.attempt + 1} of at most "
              f"{cfg.launcher.max_restarts + 1})", file=sys.stderr)
        print("\n".join([addr, str(port), *options]))
        return 0
    except OrchError as exc:
        print(exc.render(), file=sys.stderr)
        return STOP_EXIT


if __name__ == "__main__":
    sys.exit(main())
