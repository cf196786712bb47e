"""Plan a submission: job + cluster.yaml + command line -> SubmitPlan. The dry run stops here.

``build_plan`` is pure: the caller passes the cluster, the loaded job, the python path, the time and
a random token (no subprocess, no ``os.environ``). It resolves every value (command line, then the
job's resources, then cluster.yaml's defaults: :mod:`orchestrator.slurm.resources` resolves the
resources and checks them against the partition before anything runs), builds ``job.json``, renders
the script, and derives the rank table from simulated Slurm task environments with the same
``distenv.derive`` the tasks use. ``write_job_dir`` is the edge
(the folder layout itself belongs to :mod:`orchestrator.records.jobdirs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.env import distenv, hostlist, masterport, taskenv
from orchestrator.env.devices import task_gpu_indices
from orchestrator.errors import ConfigError
from orchestrator.records.jobcreate import write_job_dir as _write_job_dir
from orchestrator.records.joblayout import folder_name, job_dir_path
from orchestrator.records.snapshots.store import snapshot_root
from orchestrator.slurm.render import LOOPBACK_ADDR, ScriptContext, check_templates_dir, render_script
from orchestrator.slurm.resources import (
    check_gpus,
    check_nodes,
    cpus_per_task,
    default_gpus,
    gpu_layout,
    gpu_spec,
    launch_layout,
    memory,
    resources_line,
    time_limit,
)
from orchestrator.spec.bounds import within
from orchestrator.spec.cluster import Cluster
from orchestrator.spec.containers import ContainerPlan, resolve_container
from orchestrator.spec.extras import merge_sbatch, placement
from orchestrator.spec.framework import check_layout, with_environment
from orchestrator.spec.job import BUILTIN_JOBS_DIR, LoadedJob, Resources, make_params
from orchestrator.spec.launch import Launch
from orchestrator.spec.runconfig import NodeChoice, Preflight, RunConfig
from orchestrator.spec.script import ScriptTarget
from orchestrator.spec.snapshot import takes_snapshot
from orchestrator.spec.umask import script_umask

# The dry run has no job id yet; ranks and MASTER_PORT are shown as derived for this one. The real
# port is derived the same way from the real job id (and SLURM_RESTART_COUNT) inside the batch step.
DRY_RUN_JOB_ID = "12345"
__all__ = ["DRY_RUN_JOB_ID", "RankRow", "Resolved", "SubmitPlan", "SubmitRequest", "build_plan", "folder_name",
           "make_request", "resolve", "simulate_ranks", "write_job_dir"]


class SubmitRequest(BaseModel):
    """What the user asked for (``orch submit`` flags; None = not given)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job: str
    nodes: Annotated[int, within("nodes")] | None = None
    gpus: Annotated[int, within("gpus")] | None = Field(default=None, description="GPUs per node (one task per GPU)")
    ntasks_per_node: Annotated[int, within("ntasks_per_node")] | None = None
    cpus_per_task: Annotated[int, within("cpus_per_task")] | None = None
    partition: str | None = None
    time: str | None = None
    job_name: str | None = None
    account: str | None = None
    qos: str | None = None
    overrides: dict[str, Any] = Field(default_factory=dict)
    templates: Path | None = None
    data_dir: str | None = None
    # Bring your own script (None: the job file's SPEC) and several GPUs per task.
    script: ScriptTarget | None = None
    gpus_per_task: Annotated[int, within("gpus_per_task")] | None = None
    # Site options: extra #SBATCH options (after cluster.yaml's) and --env variables (after its env).
    sbatch_extra: dict[str, str | None] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: list[str] = Field(default_factory=list)  # --pass-env: names only, added to launcher.pass_env
    # Containers (None: launcher.container of cluster.yaml).
    container_runtime: Literal["none", "pyxis", "apptainer"] | None = None
    container_image: str | None = None
    container_mounts: list[str] = Field(default_factory=list)
    # orch submit --preflight[=exclude] (None: launcher.preflight of cluster.yaml; "off": none).
    preflight: Literal["off", "stop", "exclude"] | None = None
    # Restarts inside the allocation (None: launcher.max_restarts of cluster.yaml) and spare nodes.
    max_restarts: Annotated[int, within("max_restarts")] | None = None
    spare_nodes: Annotated[int, within("spare_nodes")] | None = None
    # The world check of a script's ranks (None: launcher.world_check of cluster.yaml).
    world_check: Literal["warn", "strict", "independent"] | None = None
    # The wait of a collective, a script's process group's timeout (None: launcher.collective_timeout of cluster.yaml).
    collective_timeout: Annotated[int, within("collective_timeout")] | None = None
    # Code snapshot at submit (None: launcher.snapshot of cluster.yaml; False: --no-snapshot).
    snapshot: bool | None = None


def make_request(values: Mapping[str, Any]) -> SubmitRequest:
    """Validate request values; errors name the command-line flag."""
    try:
        return SubmitRequest.model_validate(dict(values))
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = str(err["loc"][0]) if err["loc"] else "request"
            problems.append(f"--{name.replace('_', '-')} {values.get(name)!r}: {err['msg']}")
        raise ConfigError("; ".join(problems), hint="see orch submit --help") from None


@dataclass(frozen=True)
class RankRow:
    """One rank of the dry-run table: where it runs and what derive() says about it."""

    host: str
    device: str
    env: distenv.DistEnv
    devices: tuple[int, ...] = ()  # the node's GPUs (indices) this rank holds

    def as_dict(self) -> dict[str, int | str | list[int]]:
        return {"host": self.host, "device": self.device, **self.env.as_dict(), "devices": list(self.devices)}


@dataclass(frozen=True)
class SubmitPlan:
    request: SubmitRequest
    script: str
    ranks: tuple[RankRow, ...]
    run_config: RunConfig
    job_dir: Path
    context: ScriptContext
    assumed_job_id: str = DRY_RUN_JOB_ID
    resources: str | None = None  # "2 nodes x 8 GPUs (all of partition gpu's; ...)" when orch chose them
    left_out: Any = None  # slurm.nodememory.LeftOut: the nodes recorded as bad that --exclude gained
    resolved: Resolved | None = None  # the values the gate, the bad-node exclusion and this plan read


@dataclass(frozen=True)
class Resolved:
    """The request's values settled once, before anything reads them: the doctor gate (a script's), the bad-node
    exclusion (``slurm/nodememory.py``) and :func:`build_plan` read these, never the flags again."""

    nodes: int  # --nodes, else the job's (a script's: 1)
    partition: str | None  # --partition, else the job's (None: cluster.yaml's default partition)
    gpus: int | None  # --gpus as asked (None: the job file's, or a script's all of the partition's: the plan's)
    gpus_per_task: int | None  # --gpus-per-task as asked
    launch: Launch | None = None  # a script's launch style, as the doctor gate settled it (None: a job file)


class Asked(Protocol):
    """What :func:`resolve` reads of the submit options or a request."""

    @property
    def nodes(self) -> int | None: ...
    @property
    def partition(self) -> str | None: ...
    @property
    def gpus(self) -> int | None: ...
    @property
    def gpus_per_task(self) -> int | None: ...


def resolve(asked: Asked, resources: Resources, launch: Launch | None = None) -> Resolved:
    """The one rule for which value wins (``asked``: anything with ``nodes``, ``partition``, ``gpus`` and
    ``gpus_per_task``, the submit options or a request): the one asked for, else the job's ``resources``."""
    return Resolved(nodes=nodes_wanted(asked.nodes, resources), partition=asked.partition or resources.partition,
                    gpus=asked.gpus, gpus_per_task=asked.gpus_per_task, launch=launch)


def nodes_wanted(asked: int | None, resources: Resources) -> int:
    """Which ``--nodes`` wins: the one asked for (``--nodes``, ``nodes=``), else the job's (:func:`resolve`)."""
    return asked if asked is not None else resources.nodes


def build_plan(request: SubmitRequest, cluster: Cluster, loaded_job: LoadedJob, *, python: str,
               now: datetime, token: str, job_root: Path, resolved: Resolved | None = None) -> SubmitPlan:
    """Resolve, validate, render and simulate (pure). Raises ConfigError naming the field and the fix.
    ``resolved``: the values the submit settled (None: settled here from the request, :func:`resolve`)."""
    spec, res = loaded_job.spec, loaded_job.spec.resources
    if resolved is None:
        resolved = resolve(request, res, request.script.launch if request.script is not None else None)
    partition = cluster.partition(resolved.partition)
    hosts = hostlist.expand(partition.nodes)
    nodes = resolved.nodes
    gpus, asked_tasks, defaulted = default_gpus(request, res.gpus, partition)
    spares = request.spare_nodes or 0
    check_nodes(nodes + spares, len(hosts), partition)
    check_gpus(nodes, gpus, partition)
    tasks, per_task = gpu_layout(asked_tasks, request.gpus_per_task, gpus, script=request.script is not None)
    script_target, tasks, per_task = launch_layout(request.script, tasks, per_task, gpus, request.gpus_per_task)
    try:
        cpus = cpus_per_task(request.cpus_per_task or res.cpus_per_task or cluster.defaults.cpus_per_task,
                              tasks, partition, per_task if gpus else 0)
    except ConfigError as exc:
        if defaulted is None:
            raise
        raise ConfigError(f"{exc.message} (orch chose {resources_line(nodes, gpus, tasks, defaulted)})",
                          hint=f"{exc.hint}; or ask for fewer GPUs with --gpus N") from None
    time_text = time_limit(request.time or res.time, cluster.defaults.time, partition,
                           cluster.launcher.preempt_before)
    mem_per_gpu, mem = memory(cluster, partition, gpus, tasks * cpus)
    params = make_params(spec, request.overrides)
    if request.templates is not None:
        check_templates_dir(request.templates)
    if not job_root.is_absolute():
        raise ConfigError(f"job root {job_root} is not absolute", hint="resolve launcher.job_root first")
    job_name = request.job_name if request.job_name is not None else spec.name
    if not job_name.strip():
        raise ConfigError("the job name is empty", hint="pass --job-name NAME with at least one character")
    if script_target is not None and script_target.frameworks:  # Trainer(devices=, num_nodes=) vs the ranks
        check_layout(script_target.frameworks, style=script_target.launch.style, nodes=nodes, tasks_per_node=tasks,
                     gpus=gpus, per_task=per_task, command="orch submit")
        script_target = script_target.model_copy(update={"frameworks": with_environment(
            script_target.frameworks, style=script_target.launch.style, srun=True, job_name=job_name)})
    job_dir = job_dir_path(job_root, job_name, now, token)
    passed = [*cluster.launcher.pass_env, *(n for n in request.pass_env if n not in cluster.launcher.pass_env)]
    asked = {"max_restarts": request.max_restarts, "world_check": request.world_check,
             "collective_timeout": request.collective_timeout}
    launcher = cluster.launcher.model_copy(update={"python": python, "pass_env": passed,
                                                  **{k: v for k, v in asked.items() if v is not None}})
    extras = merge_sbatch(cluster.defaults.sbatch, partition.sbatch, request.sbatch_extra)
    placed = placement(hosts, extras, nodes + spares, partition.name)[:nodes]
    env = {**cluster.env, **request.env}
    choice = node_choice(extras, hosts)
    preflight = _preflight(request.preflight or cluster.launcher.preflight, choice)
    box = resolve_container(cluster.launcher.container, runtime=request.container_runtime,
                            image=request.container_image, mounts=request.container_mounts,
                            always=_task_paths(job_dir, request.script, takes_snapshot(
                                request.snapshot, cluster.launcher.snapshot, request.script is not None,
                                loaded_job.path, BUILTIN_JOBS_DIR)))
    context = ScriptContext(
        job_name=job_name, nodes=nodes, ntasks_per_node=tasks, gpus_per_node=gpus, cpus_per_task=cpus,
        time=time_text, partition=partition.name, job_dir=str(job_dir), python=python,
        gpu_flag=launcher.gpu_flag, gpu_spec=gpu_spec(gpus, partition),
        mem_per_gpu_mb=mem_per_gpu, mem_mb=mem,
        account=request.account or cluster.defaults.account, qos=request.qos or cluster.defaults.qos,
        env=dict(cluster.env), extra_env=dict(request.env), setup=tuple(launcher.setup),
        pass_env=tuple(launcher.pass_env),
        sbatch_extra=extras,
        gpus_per_task=per_task, **_container_fields(box),
        srun_wait=launcher.srun_wait,
        preempt_signal=launcher.preempt_signal, preempt_before=launcher.preempt_before,
        requeue=launcher.requeue, master_addr=LOOPBACK_ADDR if nodes + spares == 1 else None,
        spare_nodes=spares,
        preflight=preflight.mode if preflight else None,
        workdir=request.script.cwd if request.script is not None else None,
    )
    script = render_script(context, request.templates)
    run_config = RunConfig(
        mode="slurm", job_name=job_name,
        job_file=str(loaded_job.path) if request.script is None else request.script.target,
        params=params.model_dump(mode="json") if request.script is None else {},
        nodes=nodes, gpus_per_node=gpus, tasks_per_node=tasks, cpus_per_task=cpus, partition=partition.name,
        time=time_text, data_dir=request.data_dir, job_dir=str(job_dir), cluster_name=cluster.name,
        launcher=launcher, env=env, created=now.isoformat(timespec="seconds"),
        script=script_target, gpus_per_task=per_task,
        expect=partition.expect.model_dump(exclude_none=True) if partition.expect else {},
        preflight=preflight, spare_nodes=spares, node_choice=choice, tracking=list(cluster.tracking),
        umask=script_umask(launcher.umask),
    )
    head = context.master_addr or placed[0]
    ranks = simulate_ranks(placed, tasks, gpus, head, launcher.port_range, gpus_per_task=per_task)
    return SubmitPlan(request=request, script=script, ranks=ranks, run_config=run_config, job_dir=job_dir,
                      context=context, resources=resources_line(nodes, gpus, tasks, defaulted), resolved=resolved)


def simulate_ranks(hosts: list[str], tasks_per_node: int, gpus_per_node: int, master_addr: str,
                   port_range: tuple[int, int], *, gpus_per_task: int = 1) -> tuple[RankRow, ...]:
    """Every rank of the allocation, through the same ``derive()`` the tasks run."""
    port = masterport.master_port(DRY_RUN_JOB_ID, 0, port_range)
    envs = taskenv.simulate_slurm_task_envs(hosts, tasks_per_node, DRY_RUN_JOB_ID, gpus_per_node,
                                            master_addr, port)
    rows = []
    for environ in envs:
        env = distenv.derive(environ, port_range=port_range)
        held = tuple(task_gpu_indices(env.local_rank, gpus_per_task)) if gpus_per_node else ()
        device = _device_label(held)
        rows.append(RankRow(host=environ["SLURMD_NODENAME"], device=device, env=env, devices=held))
    return tuple(rows)


def node_choice(extras: Mapping[str, str | None], hosts: list[str]) -> NodeChoice:
    """The submit-time node lists (--exclude, --nodelist, the partition's nodes) a resubmission starts from."""
    nodes = {key: hostlist.expand(value) if value else [] for key in ("exclude", "nodelist")
             for value in [extras.get(key)]}
    return NodeChoice(exclude=nodes["exclude"], nodelist=nodes["nodelist"], partition_nodes=hosts)


def _preflight(mode: str, choice: NodeChoice) -> Preflight | None:
    """--preflight: what the batch script needs to exclude a failed node."""
    if mode == "off":
        return None
    return Preflight(mode="exclude" if mode == "exclude" else "stop", **choice.model_dump())


def _task_paths(job_dir: Path, script: ScriptTarget | None, snapshots: bool = False) -> list[str]:
    """Host folders every task reads: the job folder, the code snapshots (this user's store under the job
    root: ``<job root>/.snapshots``, records/snapshots/store.py), and for scripts the submit and script folders."""
    paths = [str(job_dir), *([str(snapshot_root(job_dir.parent))] if snapshots else [])]
    if script is not None:
        paths.append(script.cwd)
        if script.kind == "script":
            paths.append(str(Path(script.target).parent))
    return list(dict.fromkeys(paths))


def _container_fields(box: ContainerPlan | None) -> dict[str, Any]:
    if box is None:
        return {}
    return {"container_runtime": box.runtime, "container_image": box.image, "container_mounts": box.mounts,
            "container_python": box.python, "apptainer": box.apptainer}


def _device_label(held: tuple[int, ...]) -> str:
    """``cuda:3`` for one GPU; ``gpus 4,5`` for several (the task sees them as cuda:0 and cuda:1)."""
    if not held:
        return "cpu"
    return f"cuda:{held[0]}" if len(held) == 1 else "gpus " + ",".join(map(str, held))


def write_job_dir(plan: SubmitPlan) -> Path:
    """Create the job folder with sbatch.sh, job.json, logs/ and checkpoints/ (:func:`jobcreate.write_job_dir`)."""
    return _write_job_dir(plan.job_dir, plan.script, plan.run_config)
