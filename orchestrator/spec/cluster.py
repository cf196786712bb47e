"""cluster.yaml's models (pydantic, ``extra="forbid"``): partitions, defaults, the launcher, the doctor's settings.

Which file is used: :mod:`orchestrator.spec.clusterfiles`. Its text parsed and validated, each bad field
named with its fix: :mod:`orchestrator.spec.clusterparse`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.env.masterport import DEFAULT_PORT_RANGE
from orchestrator.errors import ConfigError
from orchestrator.spec.bounds import check, within
from orchestrator.spec.containers import Container
from orchestrator.spec.doctorcodes import DOCTOR_CODES
from orchestrator.spec.extras import check_env_var, check_sbatch_key
from orchestrator.spec.remote import Remote
from orchestrator.spec.tracking import TrackerName
from orchestrator.spec.umask import check_umask
from orchestrator.spec.units import parse_mem_mb, parse_time

NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")  # a cluster's or partition's name; always fullmatch: "gpu\n" is not one


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_time(value: str) -> str:
    check("time_limit", parse_time(value))
    return value


def _check_mem(value: str | int) -> str | int:
    check("mem_mb", parse_mem_mb(value))
    return value


def _check_name(value: str, what: str) -> str:
    if not NAME_RE.fullmatch(value):
        raise ValueError(f"{what} {value!r} may only use letters, digits, '_', '.' and '-'")
    return value


SbatchExtras = dict[str, str | bool | int]  # sbatch option (long name) -> value; true: a flag, false: left out


def _check_sbatch(value: SbatchExtras) -> SbatchExtras:
    for key in value:
        check_sbatch_key(key)
    return value


SlurmTime = Annotated[str, Field(description="Slurm time: M, M:S, H:M:S, D-H, D-H:M or D-H:M:S")]


class Expect(_Model):
    """Figures a partition promises; ``orch submit selftest`` fails below them."""

    busbw_gbps: float | None = Field(default=None, gt=0, description="all-reduce bus bandwidth, GB/s (nccl-tests)")
    gemm_gflops: float | None = Field(default=None, gt=0, description="GEMM rate of the slowest rank, GFLOP/s")


class Partition(_Model):
    """One Slurm partition: where jobs run and the limits orch checks before submitting."""

    name: str
    nodes: str = Field(description="Slurm hostlist of the partition's nodes, e.g. gpu[001-064]")
    gpus_per_node: Annotated[int, within("gpus")]
    cpus_per_node: Annotated[int, within("cpus_per_node")]
    mem_per_node: str | int = Field(description="memory per node, e.g. 480G (MB when no unit)")
    max_time: SlurmTime = "UNLIMITED"
    gpu_type: str | None = None
    sbatch: SbatchExtras = Field(default_factory=dict, description="extra sbatch options for this partition")
    expect: Expect | None = None

    _v_name = field_validator("name")(lambda v: _check_name(v, "partition name"))
    _v_sbatch = field_validator("sbatch")(_check_sbatch)
    _v_time = field_validator("max_time")(check_time)
    _v_mem = field_validator("mem_per_node")(_check_mem)

    @field_validator("nodes")
    @classmethod
    def _v_nodes(cls, value: str) -> str:
        from orchestrator.env.hostlist import expand

        if not expand(value):
            raise ValueError("the node list is empty")
        return value

    @property
    def max_time_seconds(self) -> int | None:
        return parse_time(self.max_time)

    @property
    def mem_mb(self) -> int:
        return parse_mem_mb(self.mem_per_node)


class Defaults(_Model):
    """Values used when neither the command line nor the job sets them."""

    partition: str | None = None
    time: SlurmTime = "01:00:00"
    account: str | None = None
    qos: str | None = None
    cpus_per_task: Annotated[int, within("cpus_per_task")] | None = None
    mem_per_gpu: str | int | None = None
    sbatch: SbatchExtras = Field(
        default_factory=dict,
        description="extra sbatch options for every job, e.g. {constraint: a100, exclusive: true}",
    )

    _v_time = field_validator("time")(check_time)
    _v_sbatch = field_validator("sbatch")(_check_sbatch)

    @field_validator("mem_per_gpu")
    @classmethod
    def _v_mem(cls, value: str | int | None) -> str | int | None:
        return None if value is None else _check_mem(value)


class Launcher(_Model):
    """How tasks are started and wired together."""

    port_range: tuple[int, int] = DEFAULT_PORT_RANGE
    init_timeout: Annotated[int, within("init_timeout")] = Field(
        default=300,
        description="seconds for rendezvous, start-up (building the job, resuming) and checkpoint writes, "
                    "the phases where ranks legitimately wait",
    )
    collective_timeout: Annotated[int, within("collective_timeout")] = Field(
        default=30,
        description="seconds a training or evaluation collective may wait: a crashed, stuck or diverging "
                    "rank ends the job this fast",
    )
    srun_wait: Annotated[int, within("srun_wait")] = Field(
        default=60,
        description="srun --wait: seconds before the step is ended after the first task exits",
    )
    preempt_signal: Literal["USR1", "USR2", "TERM", "INT", "HUP", "URG"] = "USR2"
    preempt_before: Annotated[int, within("preempt_before")] = Field(
        default=120,
        description="seconds before the time limit to signal",
    )
    requeue: bool = True
    bad_node_ttl: Annotated[int, within("bad_node_ttl")] = Field(
        default=86_400,
        description="seconds orch submit leaves out a node recorded as bad (bad_nodes.jsonl in job_root; "
                    "orch nodes); 0: never",
    )
    max_restarts: Annotated[int, within("max_restarts")] = Field(
        default=0,
        description="orch submit/run --max-restarts default: failed training steps restarted inside the "
                    "allocation from the newest checkpoint (0: none; the job fails at the first failure)",
    )
    restart: Literal["in-process", "step"] = Field(
        default="in-process",
        description="how a failed rank is restarted (max_restarts > 0): in-process (the other ranks' processes "
                    "stay, the failed rank's is forked again; a script on one node: its world, warm) or step "
                    "(a new srun step); by step where in-process cannot apply (orchestrator/restarts/protocol.py)",
    )
    job_root: str = Field(default="~/orch-jobs", description="where job folders are created")
    gpu_flag: Literal["gpus-per-node", "gres"] = "gpus-per-node"
    python: str | None = Field(
        default=None,
        description="python on the compute nodes (default: the interpreter running orch)",
    )
    setup: list[str] = Field(
        default_factory=list,
        description="shell lines run before srun (module load ..., source venv)",
    )
    pass_env: list[str] = Field(
        default_factory=list,
        description="names of variables (secrets such as WANDB_API_KEY) that tasks take from the shell "
                    "running orch submit; only the names are written to the script and job.json, never the values",
    )
    container: Container = Field(default_factory=Container)
    snapshot: bool = Field(
        default=True,
        description="orch submit copies the job's code into <job_root>/.snapshots/ and every task runs from "
                    "the copy (off: the files in place)",
    )
    snapshot_max_mb: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        default=100,
        description="a code snapshot larger than this stops the submit",
    )
    preflight: Literal["off", "stop", "exclude"] = Field(
        default="off",
        description="orch submit --preflight default: run the selftest checks first in every job (stop: a "
                    "failed node stops the job; exclude: the job is submitted again without it)",
    )
    umask: str | None = Field(
        default=None,
        description='the umask of the script\'s ranks, e.g. "0022" (quoted): what its outputs get (orch\'s '
                    "own records stay 0600/0700); unset: yours at submit",
    )
    checkpoint_write: Literal["async", "sync"] = Field(
        default="async",
        description="orch's entrypoint: async copies the state to host memory on the training thread and "
                    "writes the file in the background; sync writes it on the training thread (every rank waits)",
    )
    world_check: Literal["warn", "strict", "independent"] = Field(
        default="warn",
        description="scripts in several ranks that never formed one process group: warn, strict (the run "
                    "fails), independent (meant to be; no check)",
    )

    _v_umask = field_validator("umask")(check_umask)

    @field_validator("port_range")
    @classmethod
    def _v_ports(cls, value: tuple[int, int]) -> tuple[int, int]:
        low, high = value
        if not 1024 <= low <= high <= 65535:
            raise ValueError("must be [low, high] with 1024 <= low <= high <= 65535")
        return value

    @field_validator("pass_env")
    @classmethod
    def _v_pass_env(cls, value: list[str]) -> list[str]:
        for name in value:
            check_env_var(name)
        return value


class Doctor(_Model):
    """How ``orch submit``/``orch run``/``orch doctor`` treat a script's findings on this cluster."""

    ignore: list[str] = Field(default_factory=list, description="orch doctor codes never reported here, "
                              "e.g. [DDP001, DDP005] (as --ignore on the command line)")

    @field_validator("ignore")
    @classmethod
    def _v_ignore(cls, value: list[str]) -> list[str]:
        codes = [str(code).strip().upper() for code in value]
        unknown = [c for c in codes if c not in DOCTOR_CODES]
        if unknown:
            raise ValueError(f"unknown orch doctor code {unknown[0]!r}: the codes are {DOCTOR_CODES[0]}.."
                             f"{DOCTOR_CODES[-1]} (docs/doctor.md)")
        return codes


class Cluster(_Model):
    """The whole cluster.yaml."""

    name: str
    partitions: list[Partition] = Field(min_length=1)
    defaults: Defaults = Field(default_factory=Defaults)
    env: dict[str, str] = Field(default_factory=dict, description="exported to every task")
    launcher: Launcher = Field(default_factory=Launcher)
    doctor: Doctor = Field(default_factory=Doctor)
    remote: Remote | None = Field(default=None, description="submit from another machine over SSH (docs/remote.md)")
    tracking: list[TrackerName] = Field(default_factory=list, description="experiment trackers every job logs to "
                                        "besides TensorBoard: wandb, mlflow (--track adds to them)")

    _v_name = field_validator("name")(lambda v: _check_name(v, "cluster name"))

    @field_validator("env")
    @classmethod
    def _v_env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, val in value.items():
            check_env_var(key, val)
        return value

    @model_validator(mode="after")
    def _v_partitions(self) -> Cluster:
        names = [p.name for p in self.partitions]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"partition names must be unique; repeated: {', '.join(dupes)}")
        if self.defaults.partition is not None and self.defaults.partition not in names:
            raise ValueError(
                f"defaults.partition {self.defaults.partition!r} is not one of the partitions: {', '.join(names)}"
            )
        return self

    def partition(self, name: str | None) -> Partition:
        """The named partition, else the default one, else the first; unknown names raise ConfigError."""
        wanted = name or self.defaults.partition
        if wanted is None:
            return self.partitions[0]
        for part in self.partitions:
            if part.name == wanted:
                return part
        known = ", ".join(p.name for p in self.partitions)
        raise ConfigError(f"unknown partition {wanted!r}", hint=f"use --partition with one of: {known}")
