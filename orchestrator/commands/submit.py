"""``orch submit JOB [key=value ...]``: validate, write the job folder, ``sbatch`` (or ``--dry-run``).

Dry run and submit share one path (``plan.build_plan``): the dry run prints exactly the script that
would be queued, plus every rank as ``distenv.derive`` computes it, and the code snapshot the submit
would take (``records/snapshots/preview.py``: git's read-only file lists are its only subprocesses); it writes
nothing. A real submit writes the job folder, runs ``sbatch --parsable`` and records the job
id; when sbatch refuses, Slurm's message goes to the terminal and to ``submit_error.txt``. The
Python API queues through the same functions (:mod:`orchestrator.slurm.submission`).

``--sweep key=v1,v2`` (repeatable) submits the cartesian product of the values as one Slurm job
array (``--array-throttle N``: at most N elements at once); element I runs in ``<job folder>/I``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.commands._common import add_options, cluster_from_args, print_json, restarts_note
from orchestrator.errors import ConfigError
from orchestrator.spec.hydra import describe as describe_hydra
from orchestrator.spec.hydra import hydra_entry
from orchestrator.spec.options import SUBMIT
from orchestrator.spec.tracking import merge_tracking

if TYPE_CHECKING:
    from orchestrator.doctor.findings import Finding
    from orchestrator.records.snapshots.preview import SnapshotPreview
    from orchestrator.slurm.plan import SubmitPlan
    from orchestrator.slurm.submission import ArrayPlan
    from orchestrator.spec.budget import Budget
    from orchestrator.spec.cluster import Cluster
    from orchestrator.spec.job import LoadedJob

RANK_KEYS = ("rank", "local_rank", "node_rank", "host", "world_size", "local_world_size",
             "master_addr", "master_port", "devices")  # the JSON of each rank in --dry-run --json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, SUBMIT)  # the one table: orchestrator/spec/options.py


def run(args: argparse.Namespace) -> int:
    from orchestrator.slurm.submission import build_request, new_plan, submit_options

    cluster = cluster_from_args(args)
    if args.track:  # --track adds to cluster.yaml's tracking
        cluster = cluster.model_copy(update={"tracking": merge_tracking(cluster.tracking, args.track)})
    cwd = Path.cwd()
    # a script is checked by orch doctor first: errors stop the submission (the dry run only shows them)
    options = replace(submit_options(vars(args)), ignore=[*args.ignore, *cluster.doctor.ignore])
    findings: list[Finding] = []
    request, loaded = build_request(options, cwd=cwd, environ=os.environ, search=[Path(p) for p in sys.path if p],
                                    dry_run=args.dry_run, findings=findings)
    target = request.script
    plan = new_plan(request, cluster, loaded, cwd)
    snap = snapshot_preview(plan, cluster) if args.dry_run else None
    budget = plan_budget(plan, cluster)
    if not args.dry_run:  # a warning, never a refusal: the measurements are of earlier runs
        for advice in budget.warnings:
            print(f"orch: warning: {advice.message}\nHINT: {advice.hint}", file=sys.stderr)
    if args.sweep or args.array_throttle is not None:
        return _sweep(args, plan, loaded, snap, budget)
    data_problem = _data_dir_problem(loaded.spec.name, loaded.spec.needs_data, request.data_dir)
    if args.dry_run:
        note = f"# note: {data_problem.message} ({data_problem.hint})\n" if data_problem else ""
        if target is not None and target.note():
            note += f"# note: {target.note()}\n"
        sys.stdout.write(dry_run_json(plan, findings, snap, budget) if args.json
                         else dry_run_text(plan, snap, budget) + note)
        return 0
    if data_problem:
        raise data_problem
    return _submit(plan, as_json=args.json)


def plan_budget(plan: SubmitPlan, cluster: Cluster) -> Budget:
    """The run's time budget from the earlier runs of its job under the job root (records/history.py)."""
    from orchestrator.records.history import job_budget

    cfg = plan.run_config
    limit = cluster.partition(cfg.partition).max_time_seconds if cfg.partition else None
    return job_budget(cfg, plan.job_dir.parent, max_time_s=limit)


def snapshot_preview(plan: SubmitPlan, cluster: Cluster) -> SnapshotPreview:
    """The code snapshot the submit would take (read-only: records/snapshots/preview.py); a remote cluster's
    orch takes it there."""
    from orchestrator.records.snapshots.preview import SnapshotPreview, preview

    if cluster.remote is not None:
        return SnapshotPreview(off="taken on the cluster by its orch at submit (--remote-check shows it)")
    return preview(plan.run_config, plan.request.snapshot)


def _data_dir_problem(job_name: str, needs_data: bool, data_dir: str | None) -> ConfigError | None:
    from orchestrator.slurm.submission import data_dir_problem

    return data_dir_problem(job_name, needs_data, data_dir)


def _submit(plan: SubmitPlan, *, as_json: bool) -> int:
    from orchestrator.errors import SlurmError
    from orchestrator.slurm.submission import queue

    try:
        job_id = queue(plan, os.environ)
    except SlurmError as exc:
        print(exc.render(), file=sys.stderr)
        print(f"orch: the job was not queued; its folder is {plan.job_dir}", file=sys.stderr)
        return exc.exit_code
    if plan.left_out is not None:  # nodes recorded as bad, left out (slurm/nodememory.py)
        for line in plan.left_out.lines():
            print(f"orch: {line}", file=sys.stderr)
    if as_json:
        print_json({"job_id": job_id, "job_dir": str(plan.job_dir)})
    else:
        print(f"submitted job {job_id}\njob folder: {plan.job_dir}")
        if plan.resources is not None:
            print(f"resources: {plan.resources}")
    return 0


def _sweep(args: argparse.Namespace, plan: SubmitPlan, loaded: LoadedJob, snap: SnapshotPreview | None,
           budget: Budget | None = None) -> int:
    """``--sweep``: the cartesian product as one job array (dry run: the script and the elements)."""
    from orchestrator.errors import SlurmError
    from orchestrator.slurm.submission import parse_sweep, plan_array, queue_array

    if not args.sweep:
        raise ConfigError("--array-throttle needs --sweep", hint="e.g. --sweep lr=0.1,0.01 --array-throttle 1")
    array = plan_array(plan, loaded, parse_sweep(args.sweep), throttle=args.array_throttle)
    data_problem = _data_dir_problem(loaded.spec.name, loaded.spec.needs_data, plan.request.data_dir)
    if args.dry_run:
        note = f"# note: {data_problem.message} ({data_problem.hint})\n" if data_problem else ""
        sys.stdout.write(sweep_dry_run_json(array, snap, budget) if args.json
                         else sweep_dry_run_text(array, snap, budget) + note)
        return 0
    if data_problem:
        raise data_problem
    try:
        array_id, ids = queue_array(array, os.environ)
    except SlurmError as exc:
        print(exc.render(), file=sys.stderr)
        print(f"orch: the job array was not queued; its folder is {array.job_dir}", file=sys.stderr)
        return exc.exit_code
    if args.json:
        print_json({"job_id": array_id, "job_dir": str(array.job_dir),
                    "elements": [{"job_id": i, "job_dir": str(e.job_dir), "overrides": e.overrides}
                                 for i, e in zip(ids, array.elements, strict=True)]})
    else:
        print(f"submitted job array {array_id} ({len(ids)} elements)\njob folder: {array.job_dir}")
        print(sweep_table(array, ids))
    return 0


def sweep_table(array: ArrayPlan, ids: Sequence[str] | None = None) -> str:
    """One line per element: its job id (or index), its folder and its overrides."""
    lines = []
    for element in array.elements:
        name = ids[element.index] if ids else f"[{element.index}]"
        values = " ".join(f"{k}={v}" for k, v in element.overrides.items())
        lines.append(f"{name}  {element.job_dir}  {values}")
    return "\n".join(lines)


def sweep_dry_run_text(array: ArrayPlan, snap: SnapshotPreview | None = None, budget: Budget | None = None) -> str:
    """The array's script, its elements, then the rank table every element shares."""
    head = (f"# job array: {len(array.elements)} element(s), --array={array.plan.context.array}; element I runs "
            f"in {array.job_dir}/I with these overrides:\n")
    table = "".join(f"# {line}\n" for line in sweep_table(array).splitlines())
    return dry_run_text(array.plan, snap, budget) + head + table


def sweep_dry_run_json(array: ArrayPlan, snap: SnapshotPreview | None = None, budget: Budget | None = None) -> str:
    """``{"script", "array", "elements": [{"index", "job_dir", "overrides", "params"}], "snapshot", "budget",
    "ranks"}``."""
    ranks = json.loads(dry_run_json(array.plan, (), snap, budget))
    elements = [{"index": e.index, "job_dir": str(e.job_dir), "overrides": e.overrides,
                 "params": e.run_config.params} for e in array.elements]
    return json.dumps({"script": array.script, "array": array.plan.context.array, "elements": elements,
                       "assumed_job_id": ranks["assumed_job_id"], "snapshot": ranks["snapshot"],
                       "budget": ranks["budget"],
                       "ranks": ranks["ranks"]}, indent=1) + "\n"


def dry_run_text(plan: SubmitPlan, snap: SnapshotPreview | None = None, budget: Budget | None = None) -> str:
    """The script, then one table row per rank (built as one string: 8,192 ranks print at once); ``snap``:
    the code snapshot the submit would take; ``budget``: the run's time budget (spec/budget.py)."""
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
    runs += restarts_note(cfg.launcher.max_restarts, ctx.spare_nodes)
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
    templates = ""
    if plan.request.templates is not None:
        from orchestrator.slurm.render import template_sources

        used = template_sources(plan.request.templates)
        templates = "".join(f"# template {name}: {path}\n" for name, path in used.items())
    return plan.script + "\n" + templates + header + "\n".join(lines) + "\n"


def dry_run_json(plan: SubmitPlan, findings: Sequence[Finding] = (), snap: SnapshotPreview | None = None,
                 budget: Budget | None = None) -> str:
    """``{"script": ..., "assumed_job_id": ..., "findings": [...], "snapshot": ..., "ranks": [...]}`` with one
    rank per line (``findings``: orch doctor's on the script, each ``{code, severity, file, line, message, fix}``;
    ``snapshot``: the code snapshot the submit would take, records/snapshots/preview.py).

    Built from per-rank ``json.dumps`` calls (the C encoder; ``indent=`` would switch to the slow
    pure-Python one, which takes ~0.15 s for 8,192 ranks).
    """
    dumps = json.dumps
    ranks = []
    for row in plan.ranks:
        values = row.as_dict()
        ranks.append(dumps({key: values[key] for key in RANK_KEYS}))
    target = plan.run_config.script
    runs = ({"kind": "job", "job": plan.run_config.job_name, "job_file": plan.run_config.job_file} if target is None
            else {**target.model_dump(mode="json"), "command": target.command(), "note": target.note(),
                  "workdir": target.cwd})  # every rank's working directory: the submit directory
    return (f'{{"script": {dumps(plan.script)},\n "runs": {dumps(runs)},\n'
            f' "assumed_job_id": {dumps(plan.assumed_job_id)},\n'
            f' "findings": {dumps([f.as_dict() for f in findings])},\n'
            f' "bad_nodes": {dumps(plan.left_out.as_dict() if plan.left_out is not None else None)},\n'
            f' "snapshot": {dumps(snap.as_dict() if snap is not None else None)},\n'
            f' "budget": {dumps(budget.as_dict() if budget is not None else None)},\n'
            f' "ranks": [\n  ' + ",\n  ".join(ranks) + "\n ]}\n")
