"""``job.json``: the resolved configuration of one run, written at submit time, read by every task.

It is the contract between the login node (``orch submit``/``orch run``) and the compute nodes
(``python -m orchestrator.runtime.launch --job-dir DIR``): everything a task needs besides Slurm's own
variables is here, so the rendered script stays short and carries no user values but paths.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from orchestrator.errors import ConfigError
from orchestrator.spec.bounds import within
from orchestrator.spec.cluster import Launcher, check_time
from orchestrator.spec.extras import check_env_var
from orchestrator.spec.safefile import RECORD_LIMIT, NotAFile, open_regular
from orchestrator.spec.script import ScriptTarget
from orchestrator.spec.snapshot import Snapshot
from orchestrator.spec.tracking import TrackerName
from orchestrator.spec.umask import check_umask

JOB_FILE = "job.json"
SCRIPT_FILE = "sbatch.sh"
JOB_ID_FILE = "job_id"
SUBMIT_ERROR_FILE = "submit_error.txt"
SUBMIT_TOKEN_FILE = "submit_token"  # written before sbatch: the --comment that finds the job if orch dies after it
METRICS_FILE = "metrics.jsonl"
RESULT_FILE = "result.json"
PROGRESS_FILE = "progress.json"  # rank 0's position inside an epoch, rewritten every few seconds
CHECKPOINT_DIR = "checkpoints"
LOG_DIR = "logs"
HYDRA_DIR = "hydra"  # a Hydra app's one run directory, every rank's (spec/hydra.py)
PREFLIGHT_RESULT_FILE = "preflight.json"  # orch submit --preflight: the selftest's verdict in the allocation
PREFLIGHT_RECORD_FILE = "preflight_attempts.json"  # --preflight=exclude: each attempt, the nodes it excluded
PREFLIGHT_NEXT_FILE = "preflight_next"  # --preflight=exclude: the sbatch options of the next attempt
REQUEUE_FILE = "requeue"  # left by the runtime after a preemption checkpoint; the batch script requeues


class NodeChoice(BaseModel):
    """The nodes a submit asked for: what the job needs to be submitted again without some of them
    (``slurm/resubmit.py``: after a preflight failure, or a restart whose blamed node has no spare)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exclude: list[str] = Field(default_factory=list, description="nodes excluded at submit time (--exclude)")
    nodelist: list[str] = Field(default_factory=list, description="nodes asked for at submit time (--nodelist)")
    partition_nodes: list[str] = Field(default_factory=list, description="every node of the partition")


class Preflight(NodeChoice):
    """``orch submit --preflight[=exclude]``: what the batch script's preflight step needs to decide."""

    mode: Literal["stop", "exclude"]
    max_attempts: int = Field(default=3, ge=1, description="exclude mode: submissions in all, the first included")


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    mode: Literal["slurm", "local"]
    job_name: str
    job_file: str = Field(description="absolute path of the job's .py file")
    params: dict[str, Any] = Field(description="validated hyperparameters (the job's params model)")
    nodes: Annotated[int, within("nodes")]  # the bounds a submit checks (spec/bounds.py): a hand edit too
    gpus_per_node: Annotated[int, within("gpus")]
    tasks_per_node: Annotated[int, within("ntasks_per_node")]
    cpus_per_task: Annotated[int, within("cpus_per_task")]
    partition: str | None = None
    time: str | None = None  # a Slurm time within the bound time_limit (a hand edit too)
    data_dir: str | None = None
    job_dir: str
    cluster_name: str | None = None
    launcher: Launcher = Field(default_factory=Launcher)
    env: dict[str, str] = Field(default_factory=dict)
    expect: dict[str, float] = Field(default_factory=dict, description="the partition's expect figures (selftest)")
    created: str = Field(description="ISO 8601 time of submission")
    # Bring your own script: what every task runs instead of the job file's SPEC (None: a job file).
    script: ScriptTarget | None = None
    gpus_per_task: Annotated[int, within("gpus_per_task")] = Field(
        default=1, description="GPUs each task holds (tasks = gpus / this)")
    restarts: Annotated[int, within("restarts")] = Field(
        default=0, description="local runs: how often orch run --resume continued it")
    preflight: Preflight | None = Field(default=None, description="orch submit --preflight (None: no preflight)")
    spare_nodes: Annotated[int, within("spare_nodes")] = Field(
        default=0, description="orch submit --spare-nodes: allocated beyond nodes, for "
                             "a restart without a blamed node")
    node_choice: NodeChoice | None = Field(default=None, description="orch submit: the nodes asked for (a job "
                                           "submitted again leaves a blamed node out of them)")
    snapshot: Snapshot | None = Field(default=None, description="the code snapshot every task runs from "
                                      "(None: the files in place; docs/snapshots.md)")
    tracking: list[TrackerName] = Field(default_factory=list, description="W&B / MLflow (TensorBoard is always on)")
    umask: str | None = Field(default=None, description="the umask the script runs under (spec/umask.py): "
                              "launcher.umask, else the user's at submit/run time; None: an older job.json, 0077")

    _v_umask = field_validator("umask")(check_umask)

    @field_validator("time")
    @classmethod
    def _v_time(cls, value: str | None) -> str | None:
        return None if value is None else check_time(value)

    @field_validator("env")
    @classmethod
    def _v_env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, val in value.items():  # the same rule as cluster.yaml's env: a hand-edited job.json too
            check_env_var(key, val)
        return value

    @property
    def world_size(self) -> int:
        return self.nodes * self.tasks_per_node


def run_config_text(config: RunConfig) -> str:
    """``job.json``'s text (``orchestrator.records.jobcreate.write_run_config`` writes it)."""
    return json.dumps(config.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def read_run_config(job_dir: Path) -> RunConfig:
    path = job_dir / JOB_FILE
    try:
        with open_regular(path) as fh:
            raw = fh.read(RECORD_LIMIT + 1)
        if len(raw) > RECORD_LIMIT:
            raise ValueError(f"larger than {RECORD_LIMIT:,} bytes")
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist", hint="pass the job folder that orch submit/run printed") from None
    except NotAFile as exc:
        raise ConfigError(f"{path} {exc.strerror}", hint="the job folder is damaged; submit again") from None
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise ConfigError(f"cannot read {path}: {str(exc)[:200]}",
                          hint="the job folder is damaged; submit again") from None
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top level)'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise ConfigError(f"{path} is invalid: {problems[:600]}",
                          hint="the job folder is damaged (or was edited by hand); submit again") from None
