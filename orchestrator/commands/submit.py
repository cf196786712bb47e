"""``orch submit JOB [key=value ...]``: validate, write the job folder, ``sbatch`` (or ``--dry-run``).

Dry run and submit share one path (:func:`orchestrator.service.plan.prepare`): the dry run prints exactly the
script that would be queued, plus every rank as ``distenv.derive`` computes it, and the code snapshot the submit
would take (``records/snapshots/preview.py``: git's read-only file lists are its only subprocesses); it writes
nothing. A real submit writes the job folder, runs ``sbatch --parsable`` and records the job
id (:mod:`orchestrator.service.queue`); when sbatch refuses, Slurm's message goes to the terminal and to
``submit_error.txt``. The Python API and ``orch mcp`` plan and queue through the same service. This module parses
the command line and formats what the service returns (text, or JSON with ``--json``).

``--sweep key=v1,v2`` (repeatable) submits the cartesian product of the values as one Slurm job
array (``--array-throttle N``: at most N elements at once); element I runs in ``<job folder>/I``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.commands._common import add_options, print_json, restarts_note
from orchestrator.errors import ConfigError
from orchestrator.spec.hydra import describe as describe_hydra
from orchestrator.spec.hydra import hydra_entry
from orchestrator.spec.options import SUBMIT

if TYPE_CHECKING:
    from orchestrator.service.plan import Planned, SnapshotPreview, SubmitPlan
    from orchestrator.service.queue import ArrayPlan
    from orchestrator.spec.budget import Budget


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, SUBMIT)  # the one table: orchestrator/spec/options.py


def run(args: argparse.Namespace) -> int:
    from orchestrator.service.plan import dry_run_json, prepare
    from orchestrator.service.request import cluster_of, submit_options

    cluster = cluster_of(getattr(args, "cluster", None), Path.cwd(), track=args.track or ())  # --track: added
    assert cluster is not None  # required: a missing file raised
    # a script is checked by orch doctor first: errors stop the submission (the dry run only shows them)
    planned = prepare(submit_options(vars(args)), cluster, Path.cwd(), dry_run=args.dry_run, preview=args.dry_run,
                      budget=True)
    budget = planned.budget
    if not args.dry_run and budget is not None:  # a warning, never a refusal: the measurements are of earlier runs
        for advice in budget.warnings:
            print(f"orch: warning: {advice.message}\nHINT: {advice.hint}", file=sys.stderr)
    if args.sweep or args.array_throttle is not None:
        return _sweep(args, planned)
    data_problem = planned.data_problem
    if args.dry_run:
        target = planned.plan.request.script
        note = f"# note: {data_problem.message} ({data_problem.hint})\n" if data_problem else ""
        if target is not None and target.note():
            note += f"# note: {target.note()}\n"
        sys.stdout.write(dry_run_json(planned.plan, planned.findings, planned.snapshot, budget) if args.json
                         else dry_run_text(planned.plan, planned.snapshot, budget, planned.templates) + note)
        return 0
    return _submit(planned, as_json=args.json)


def _submit(planned: Planned, *, as_json: bool) -> int:
    from orchestrator.errors import SlurmError
    from orchestrator.service.queue import queue

    try:
        queued = queue(planned, os.environ)
    except SlurmError as exc:
        print(exc.render(), file=sys.stderr)
        print(f"orch: the job was not queued; its folder is {planned.plan.job_dir}", file=sys.stderr)
        return exc.exit_code
    for line in queued.left_out:  # nodes recorded as bad, left out (slurm/nodememory.py)
        print(f"orch: {line}", file=sys.stderr)
    if as_json:
        print_json({"job_id": queued.job_id, "job_dir": str(queued.job_dir)})
    else:
        print(f"submitted job {queued.job_id}\njob folder: {queued.job_dir}")
        if queued.resources is not None:
            print(f"resources: {queued.resources}")
    return 0


def _sweep(args: argparse.Namespace, planned: Planned) -> int:
    """``--sweep``: the cartesian product as one job array (dry run: the script and the elements)."""
    from orchestrator.errors import SlurmError
    from orchestrator.service.plan import sweep_dry_run_json
    from orchestrator.service.queue import plan_sweep, queue_sweep, sweep_grid

    if not args.sweep:
        raise ConfigError("--array-throttle needs --sweep", hint="e.g. --sweep lr=0.1,0.01 --array-throttle 1")
    array = plan_sweep(planned, sweep_grid(args.sweep), throttle=args.array_throttle)
    data_problem = planned.data_problem
    if args.dry_run:
        note = f"# note: {data_problem.message} ({data_problem.hint})\n" if data_problem else ""
        sys.stdout.write(sweep_dry_run_json(array, planned.snapshot, planned.budget) if args.json
                         else sweep_dry_run_text(array, planned.snapshot, planned.budget, planned.templates) + note)
        return 0
    try:
        queued = queue_sweep(planned, array, os.environ)
    except SlurmError as exc:
        print(exc.render(), file=sys.stderr)
        print(f"orch: the job array was not queued; its folder is {array.job_dir}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print_json({"job_id": queued.array_id, "job_dir": str(queued.job_dir),
                    "elements": [{"job_id": i, "job_dir": str(e.job_dir), "overrides": e.overrides}
                                 for i, e in zip(queued.ids, queued.elements, strict=True)]})
    else:
        print(f"submitted job array {queued.array_id} ({len(queued.ids)} elements)\njob folder: {queued.job_dir}")
        print(sweep_table(array, queued.ids))
    return 0


def sweep_table(array: ArrayPlan, ids: Sequence[str] | None = None) -> str:
    """One line per element: its job id (or index), its folder and its overrides."""
    lines = []
    for element in array.elements:
        name = ids[element.index] if ids else f"[{element.index}]"
        values = " ".join(f"{k}={v}" for k, v in element.overrides.items())
        lines.append(f"{name}  {element.job_dir}  {values}")
    return "\n".join(lines)


def sweep_dry_run_text(array: ArrayPlan, snap: SnapshotPreview | None = None, budget: Budget | None = None,
                       templates: Mapping[str, Path] | None = None) -> str:
    """The array's script, its elements, then the rank table every element shares."""
    head = (f"# job array: {len(array.elements)} element(s), --array={array.plan.context.array}; element I runs "
            f"in {array.job_dir}/I with these overrides:\n")
    table = "".join(f"# {line}\n" for line in sweep_table(array).splitlines())
    return dry_run_text(array.plan, snap, budget, templates) + head + table


def dry_run_text(plan: SubmitPlan, snap: SnapshotPreview | None = None, budget: Budget | None = None,
                 templates: Mapping[str, Path] | None = None) -> str:
    """The script, then one table row per rank (built as one string: 8,192 ranks print at once); ``snap``:
    the code snapshot the submit would take; ``budget``: the run's time budget (spec/budget.py); ``templates``:
    the file each template comes from (``--templates``: ``Planned.templates``)."""
    from orchestrator.service.plan import restarts_of

    rows = plan.ranks
    cfg = plan.run_config
    master = rows[0].env.master_addr
    where = (f"the NodeAddr of {master} (the first node), looked up at run time" if cfg.nodes > 1
             else "loopback: every rank runs on one node")
    low, high = cfg.launcher.port_range
    runs = (f"# runs: {cfg.script.command()}\n#   launch: {cfg.script.launch.describe()}\n"
            + "".join(f"#   framework: {fw.describe()}\n" for fw in cfg.script.frameworks) +
            f"# working directory of every rank: {cfg.script.cwd} (the submit directory, snapshot or not: "
            "relative paths the script writes land there)\n"
            if cfg.script is not None else f"# runs: job {cfg.job_name} ({cfg.job_file})\n")
    if cfg.script is not None and hydra_entry(cfg.script, [Path(cfg.script.cwd)]) is not None:
        runs += f"# {describe_hydra(cfg.job_dir)}\n"
    if budget is not None and cfg.script is None:  # a script's steps and checkpoints are its own: no budget line
        runs += f"#   budget: {budget.line()}\n" + "".join(f"# warning: {w.message}; {w.hint}\n"
                                                          for w in budget.warnings)
    ctx = plan.context
    if snap is not None:
        runs += snap.line()
    if ctx.container_runtime != "none":
        runs += (f"# in a container: {ctx.container_runtime} image {ctx.container_image}, "
                 f"mounts {ctx.container_mounts}\n")
    runs += "".join(f"# --env {name}={shlex.quote(value)} (exported to every task)\n"
                    for name, value in plan.request.env.items())
    if ctx.preflight:
        runs += ("# preflight: the selftest checks run first in the allocation (logs/preflight-<job id>.out, "
                 "preflight.json); a failing node " + ("stops the job\n" if ctx.preflight == "stop" else
                 "is excluded and the job submitted again (preflight_attempts.json)\n"))
    how = restarts_of(plan)
    runs += restarts_note(cfg.launcher.max_restarts, ctx.spare_nodes, how[1] if how else None)
    if plan.resources is not None:
        runs += f"# resources: {plan.resources}\n"
    if plan.left_out is not None:  # nodes recorded as bad (slurm/nodememory.py)
        runs += "".join(f"# {line}\n" for line in plan.left_out.lines())
    procs = cfg.script.launch.procs_per_task if cfg.script is not None and cfg.script.launch.style == "per-node" else 0
    if procs:
        runs += (f"# per-node: each task below starts {procs} process(es) itself: {cfg.nodes * procs} ranks in all, "
                 f"NODE_RANK x {procs} + its own index\n")
    header = runs + (f"# {len(rows)} {'tasks' if procs else 'ranks'}: {cfg.nodes} node(s) x {cfg.tasks_per_node} "
                     f"task(s), derived as for "
              f"job id {plan.assumed_job_id}\n# MASTER_PORT follows the real job id (range {low}-{high}); "
              f"MASTER_ADDR is {where}\n")
    titles = ("HOST", "RANK", "LOCAL_RANK", "NODE_RANK", "DEVICE", "MASTER")
    host_w = max(len(titles[0]), *(len(r.host) for r in rows))
    dev_w = max(len(titles[4]), *(len(r.device) for r in rows))
    rank_w = max(len(titles[1]), len(str(len(rows) - 1)))
    lines = [f"{titles[0]:<{host_w}}  {titles[1]:>{rank_w}}  {titles[2]:>10}  {titles[3]:>9}  "
             f"{titles[4]:<{dev_w}}  {titles[5]}"]
    lines += [f"{r.host:<{host_w}}  {r.env.rank:>{rank_w}}  {r.env.local_rank:>10}  {r.env.node_rank:>9}  "
              f"{r.device:<{dev_w}}  {r.env.master_addr}:{r.env.master_port}" for r in rows]
    used = "".join(f"# template {name}: {path}\n" for name, path in (templates or {}).items())
    return plan.script + "\n" + used + header + "\n".join(lines) + "\n"


