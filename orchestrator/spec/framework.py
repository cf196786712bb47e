"""The training frameworks a script is written with, and whether its layout can match orch's (pure).

``orchestrator.doctor.frameworks`` reads them from the script's source (never imported): Lightning's
``Trainer``, Fabric, Accelerate's ``Accelerator``, the HF ``Trainer``, ``@hydra.main`` and torchelastic's
``@record``, with the literal layout arguments of ``Trainer(...)``/``Fabric(...)`` (:class:`Layout`).
At plan time (``slurm/plan.py`` for ``orch submit``, ``local/plan.py`` for ``orch run``) :func:`with_environment`
names the cluster environment Lightning/Fabric will detect among the variables orch gives a rank of that
launch style (Lightning 2.x's order: :data:`LIGHTNING_ENVIRONMENTS`), and :func:`check_layout` refuses a
layout that cannot match ``--nodes/--gpus`` (``--nproc``) and a spawning strategy inside a launched rank.
Arguments that are not literals are not judged.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.env.distenv import SLURM_VARS
from orchestrator.env.taskenv import PER_NODE_DROPPED
from orchestrator.errors import ConfigError

FrameworkName = Literal["lightning", "fabric", "accelerate", "hf-trainer", "hydra", "torchelastic"]
# strategies that start their own processes (Lightning and Fabric): inside a rank orch launched, each rank
# would start a world of its own; their names and the variants (ddp_spawn_find_unused_parameters_true...)
SPAWN_STRATEGIES = ("ddp_spawn", "ddp_notebook", "ddp_fork")
INTERACTIVE_JOB_NAMES = ("bash", "interactive")  # Lightning's SLURMEnvironment stays off for these job names
# the variables every rank of the styles but per-node gets (torchrun's: env/taskenv.script_env)
TORCHRUN_NAMES = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                            "TORCHELASTIC_RUN_ID"})
SRUN_NAMES = frozenset(SLURM_VARS["world_size"])  # what srun gives every task (orch submit) and the slurm style

Detect = Callable[[Collection[str], str | None], bool]
# Lightning 2.x (_choose_and_init_cluster_environment, Trainer and Fabric alike): the first that detects
# wins; MPIEnvironment (mpi4py with more than one process) is not among orch's launches.
LIGHTNING_ENVIRONMENTS: tuple[tuple[str, Detect], ...] = (
    ("TorchElasticEnvironment", lambda names, job: "TORCHELASTIC_RUN_ID" in names),
    ("SLURMEnvironment", lambda names, job: "SLURM_NTASKS" in names and job not in INTERACTIVE_JOB_NAMES),
    ("LSFEnvironment", lambda names, job: {"LSB_JOBID", "LSB_DJOB_RANKFILE", "JSM_NAMESPACE_LOCAL_RANK",
                                           "JSM_NAMESPACE_SIZE"} <= set(names)),
)
LIGHTNING_FALLBACK = "LightningEnvironment"
# environment -> what it means under orch (the dry run's words)
ENVIRONMENT_NOTES = {
    "TorchElasticEnvironment": "ranks from torchrun's variables; Lightning's own Slurm requeue stays off",
    "SLURMEnvironment": "ranks from srun's variables; devices must be the tasks per node",
    "LightningEnvironment": "no launcher's variables: the script's own processes take their ranks",
}
# framework -> what it reads under orch when not Lightning's environments (by launch style: per-node or not)
READS = {"accelerate": "torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE)",
         "hf-trainer": "torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE) through Accelerate"}
LAYOUT_FRAMEWORKS = ("lightning", "fabric")


class Layout(BaseModel):
    """The layout arguments of one ``Trainer(...)``/``Fabric(...)`` call (None: not a literal, not judged)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    where: str = Field(description="file:line: code of the call")
    devices: int | Literal["auto"] | None = Field(default="auto", description="processes per node; auto: the "
                                                  "accelerator's count (all visible GPUs, 1 on CPU)")
    num_nodes: int | None = 1
    strategy: str | None = "auto"
    accelerator: str | None = "auto"


class Framework(BaseModel):
    """A framework the script is written with (``job.json`` ``script.frameworks``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: FrameworkName
    why: str = Field(description="the line that showed it (file:line: code)")
    layouts: list[Layout] = Field(default_factory=list, description="lightning/fabric: each Trainer/Fabric call")
    environment: str = Field(default="", description="what it detects (or reads) under orch, set at plan time")

    def describe(self) -> str:
        """``lightning (train.py:40: Trainer(...)); under orch it detects TorchElasticEnvironment (...)``."""
        if not self.environment:
            return f"{self.name} ({self.why})"
        if self.name in LAYOUT_FRAMEWORKS:
            note = ENVIRONMENT_NOTES.get(self.environment, "")
            return (f"{self.name} ({self.why}); under orch it detects {self.environment}"
                    + (f" ({note})" if note else ""))
        return f"{self.name} ({self.why}); under orch it reads {self.environment}"


def rank_variables(style: str, *, srun: bool) -> frozenset[str]:
    """The names (of those the frameworks look at) a rank of launch ``style`` sees: torchrun's unless
    per-node (env/taskenv.PER_NODE_DROPPED), srun's under ``orch submit`` (``srun``) and the slurm style."""
    names = set(TORCHRUN_NAMES - set(PER_NODE_DROPPED)) if style == "per-node" else set(TORCHRUN_NAMES)
    if srun or style == "slurm":
        names |= SRUN_NAMES
    return frozenset(names)


def lightning_environment(names: Collection[str], job_name: str | None) -> str:
    """The cluster environment Lightning/Fabric pick among ``names`` (Slurm job ``job_name``)."""
    return next((env for env, detect in LIGHTNING_ENVIRONMENTS if detect(names, job_name)), LIGHTNING_FALLBACK)


def with_environment(frameworks: Sequence[Framework], *, style: str, srun: bool,
                     job_name: str | None) -> list[Framework]:
    """``frameworks`` with what each detects or reads under orch in this launch style."""
    names = rank_variables(style, srun=srun)
    out = []
    for framework in frameworks:
        if framework.name in LAYOUT_FRAMEWORKS:
            environment = lightning_environment(names, job_name)
        elif framework.name in READS:
            environment = READS[framework.name] if "RANK" in names else "no rank variables (one process)"
        else:
            environment = ""
        out.append(framework.model_copy(update={"environment": environment}))
    return out


def devices_per_node(layout: Layout, *, gpus: int, per_task: int, cpu_only: bool) -> int | None:
    """The processes per node the call asks for (None: not known here). ``auto`` counts the GPUs a rank
    sees (every GPU of its node when each rank holds one) or is 1 on CPU."""
    if isinstance(layout.devices, int) and layout.devices > 0:
        return layout.devices
    if layout.devices not in ("auto", -1):
        return None
    if layout.accelerator == "cpu" or (cpu_only and layout.accelerator in ("auto", None)):
        return 1 if layout.devices == "auto" else None
    return gpus if gpus and per_task == 1 else None


def check_layout(frameworks: Sequence[Framework], *, style: str, nodes: int, tasks_per_node: int, gpus: int,
                 per_task: int, command: Literal["orch submit", "orch run"]) -> None:
    """Refuse a Trainer/Fabric layout that cannot match the ranks orch starts (ConfigError naming the call,
    the ``--nodes/--gpus`` or ``--nproc`` that match and the arguments to change). A per-node script's task is
    not a rank (its processes are): not judged."""
    if style == "per-node":
        return
    cpu_only = gpus == 0 and command == "orch submit"
    for framework in frameworks:
        for layout in framework.layouts:
            call = "Trainer" if framework.name == "lightning" else "Fabric"
            strategy = layout.strategy or ""
            if strategy.startswith(SPAWN_STRATEGIES):
                raise ConfigError(
                    f"{layout.where}: strategy={strategy!r} starts {framework.name}'s own processes inside each "
                    f"rank {command} launched: every rank would start a world of its own, not one world",
                    hint=f'use {call}(strategy="ddp"): orch starts one process per rank, as torchrun does')
            per_node = devices_per_node(layout, gpus=gpus, per_task=per_task, cpu_only=cpu_only)
            wanted = (layout.num_nodes if layout.num_nodes is not None else nodes,
                      per_node if per_node is not None else tasks_per_node)
            if wanted == (nodes, tasks_per_node):
                continue
            asked = (f"devices={layout.devices!r}" + (f" ({per_node} per node)" if per_node != layout.devices else "")
                     + f", num_nodes={layout.num_nodes}")
            raise ConfigError(
                f"{layout.where}: {call}({asked}) asks for {wanted[0]} node(s) x {wanted[1]} process(es), but "
                f"{command} starts {nodes} node(s) x {tasks_per_node} rank(s) ({nodes * tasks_per_node} in all): "
                f"{framework.name} would stop when training starts (devices x num_nodes must be the world size)",
                hint=f"{_matching(command, wanted, gpus, per_task)}, or change the script: "
                     f"{call}(devices={tasks_per_node}, num_nodes={nodes})")


def _matching(command: str, wanted: tuple[int, int], gpus: int, per_task: int) -> str:
    """The options that give the layout the call asks for."""
    nodes, per_node = wanted
    if command == "orch run":
        return (f"run it with --nproc {per_node}" if nodes == 1 else
                f"orch run starts one node: submit it with orch submit --nodes {nodes}")
    if gpus:
        return f"submit it with --nodes {nodes} --gpus {per_node * per_task}"
    return f"submit it with --nodes {nodes} --ntasks-per-node {per_node}"
