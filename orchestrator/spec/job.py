"""Job specs: what a job trains, its default resources and its hyperparameters (no torch here).

A job is a small Python file (``jobs/mnist.py``) that defines ``SPEC = JobSpec(...)``. Its module
level must not import torch: the model and data are built inside ``SPEC.build``, which only the
runtime calls. ``JOB`` on the command line is a job name (looked up in the job search path) or a
path to such a file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from orchestrator.errors import ConfigError
from orchestrator.spec.bounds import param_problem, within
from orchestrator.spec.jobimport import import_job_file

JOBS_ENV_VAR = "ORCH_JOBS_DIR"
BUILTIN_JOBS_DIR = Path(__file__).resolve().parents[2] / "jobs"


class TrainParams(BaseModel):
    """Hyperparameters every job understands; a job subclasses this to add its own."""

    # allow_inf_nan=False: job.json (JSON) cannot carry inf/nan, so they would reach the ranks as null.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    epochs: Annotated[int, within("epochs")] = 1
    batch_size: Annotated[int, within("batch_size")] = Field(
        default=64, description="per rank; the global batch is this x world size")
    lr: Annotated[float, within("lr")] = 0.01
    momentum: Annotated[float, within("momentum")] = 0.9
    weight_decay: Annotated[float, within("weight_decay")] = 0.0
    seed: Annotated[int, within("seed")] = Field(default=0, description="torch's generators take 64 bits; the "
                      "sampler adds the epoch")
    amp: bool = Field(default=False, description="automatic mixed precision (CUDA only)")
    channels_last: bool = Field(default=False, description="channels_last memory format (CUDA only)")
    check_sync: bool = Field(default=False, description="compare a parameter checksum across ranks")
    max_steps_per_epoch: Annotated[int, within("max_steps_per_epoch")] | None = Field(
        default=None, description="cut epochs short (smoke tests)")
    eval_batch_size: Annotated[int, within("eval_batch_size")] = 1000
    checkpoint: bool = Field(default=True, description="write a checkpoint every epoch")
    checkpoint_every: Annotated[float, within("checkpoint_every")] = Field(default=1800.0,
            description="seconds of training between checkpoints inside an epoch, on rank 0's clock "
                        "(0: at epoch ends only; off with checkpoint=false)")
    num_threads: Annotated[int, within("num_threads")] | None = Field(
        default=None, description="torch threads per rank (default: cpus per task)")
    num_workers: Annotated[int, within("num_workers")] | None = Field(default=None,
            description="DataLoader worker processes per rank "
                                    "for Dataset-backed sets (default: cpus per task - 1, at most 4)")
    grad_accum: Annotated[int, within("grad_accum")] = Field(default=1,
            description="micro-batches per optimizer step (DDP no_sync "
                            "on the others); the effective batch is batch_size x grad_accum x world size")
    lr_schedule: Literal["constant", "cosine", "step"] = Field(
        default="constant", description="learning-rate schedule over optimizer steps, after the warm-up")
    warmup_steps: Annotated[int, within("warmup_steps")] = Field(default=0,
            description="linear warm-up from 0 to lr (optimizer steps)")
    lr_step_epochs: Annotated[int, within("lr_step_epochs")] = Field(default=1,
            description="lr_schedule=step: multiply lr by lr_gamma "
                                "every this many epochs")
    lr_gamma: Annotated[float, within("lr_gamma")] = Field(default=0.1, description="lr_schedule=step: the factor")
    lr_min: Annotated[float, within("lr_min")] = Field(default=0.0, description="lr_schedule=cosine: the final lr")
    on_nonfinite: Literal["stop", "skip"] = Field(
        default="stop", description="a NaN/inf loss: stop the run (exit 1), or skip that optimizer step and "
        "count it")
    progress_every: Annotated[float, within("progress_every")] = Field(default=30.0,
            description="seconds between progress lines in the "
                                  "log inside an epoch (0: none)")
    log_every: Annotated[int, within("log_every")] | None = Field(
        default=None, description="optimizer steps between per-step scalars (loss, lr, samples/s, gradient norm) "
        "in steps.jsonl, TensorBoard and the trackers (default: about 200 points per run)")

    @model_validator(mode="after")
    def _v_bounds(self) -> TrainParams:
        """Every integer, the job's own ones too, reaches torch as a 64-bit value, every float as float32;
        the built-in fields keep their bounds (orchestrator.spec.bounds) when a job redeclares them."""
        for name in type(self).model_fields:
            problem = param_problem(name, getattr(self, name))
            if problem is not None:
                raise ValueError(problem)
        return self


class Resources(BaseModel):
    """Default resources of a job; the command line overrides them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: Annotated[int, within("nodes")] = 1
    gpus: Annotated[int, within("gpus")] = Field(default=1, description="GPUs (= tasks) per node")
    time: str | None = None
    partition: str | None = None
    cpus_per_task: Annotated[int, within("cpus_per_task")] | None = None


@dataclass(frozen=True)
class JobSpec:
    """What a job file declares. ``build(params, ctx)`` returns the runtime's ``TrainTask``."""

    name: str
    params: type[TrainParams]
    build: Callable[..., Any]
    resources: Resources = field(default_factory=Resources)
    description: str = ""
    needs_data: bool = False
    # download(data_dir): fetch what is missing of the job's data into data_dir (orch run JOB --download);
    # a network failure raises OSError (urllib's URLError is one), bad files a ConfigError
    download: Callable[[Path], None] | None = None


@dataclass(frozen=True)
class LoadedJob:
    spec: JobSpec
    path: Path


def job_search_path(environ: Mapping[str, str], cwd: Path) -> list[Path]:
    """Where job names are looked up, in order: $ORCH_JOBS_DIR, ./jobs, the built-in jobs."""
    dirs = []
    if environ.get(JOBS_ENV_VAR):
        dirs.append(Path(environ[JOBS_ENV_VAR]).expanduser())
    dirs += [cwd / "jobs", BUILTIN_JOBS_DIR]
    unique: list[Path] = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def available_jobs(search_path: Sequence[Path]) -> list[str]:
    names: set[str] = set()
    for d in search_path:
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.py") if not p.name.startswith("_"))
    return sorted(names)


def resolve_job_file(job: str, search_path: Sequence[Path], cwd: Path) -> Path:
    """A job argument is a path to a .py file or a job name in the search path."""
    as_path = Path(job).expanduser()
    if job.endswith(".py") or "/" in job:
        path = as_path if as_path.is_absolute() else cwd / as_path
        if path.is_file():
            return path.resolve()
        raise ConfigError(f"job file {path} does not exist", hint="pass a job name or the path of a job .py file")
    for d in search_path:
        candidate = d / f"{job}.py"
        if candidate.is_file():
            return candidate.resolve()
    known = ", ".join(available_jobs(search_path)) or "none found"
    raise ConfigError(f"unknown job {job!r}", hint=f"use one of: {known} (or a path to a job file)")


def load_job_file(path: Path) -> JobSpec:
    """Import a job file and return its ``SPEC``. The file must not import torch at module level.

    A job file that exits while it is imported (``sys.exit``, ``os._exit``, ``os.abort``) or whose
    ``SPEC`` holds the wrong types is a ConfigError, never a silent exit or a traceback.
    """
    module_name = f"orch_job_{path.stem}_{abs(hash(str(path)))}"
    # guarded: a job file that exits, forks, execs or prints at import is its error, never orch's behaviour
    module = sys.modules[module_name] if module_name in sys.modules else import_job_file(path, module_name)
    job_spec = getattr(module, "SPEC", None)
    if job_spec is None:
        raise ConfigError(f"job file {path} defines no SPEC",
                          hint="add SPEC = JobSpec(name=..., params=..., build=...)")
    return check_spec(job_spec, path)


# JobSpec fields: the type each must have, and what to write instead.
_SPEC_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "name": (lambda v: isinstance(v, str) and bool(v.strip()), "a non-empty str, e.g. name='my_job'"),
    "params": (lambda v: isinstance(v, type) and issubclass(v, TrainParams),
               "a subclass of orchestrator.spec.job.TrainParams (the class, not an instance)"),
    "build": (callable, "a function build(params, ctx) returning a TrainTask"),
    "resources": (lambda v: isinstance(v, Resources), "orchestrator.spec.job.Resources(nodes=..., gpus=...)"),
    "description": (lambda v: isinstance(v, str), "a str"),
    "needs_data": (lambda v: isinstance(v, bool), "True or False"),
    "download": (lambda v: v is None or callable(v), "None or a function download(data_dir) that fetches the data"),
}


def check_spec(spec: object, path: Path) -> JobSpec:
    """``SPEC`` must be a JobSpec whose fields have the right types (a dataclass checks none)."""
    if not isinstance(spec, JobSpec):
        raise ConfigError(f"job file {path} defines no SPEC of type JobSpec: SPEC is a {type(spec).__name__}",
                          hint="write SPEC = JobSpec(name=..., params=..., build=...)")
    for name, (ok, fix) in _SPEC_FIELDS.items():
        if not ok(getattr(spec, name)):
            raise ConfigError(f"job file {path}: SPEC.{name} is {type(getattr(spec, name)).__name__} "
                              f"{str(getattr(spec, name))[:60]!r}", hint=f"SPEC.{name} must be {fix}")
    return spec


def load_job(job: str, environ: Mapping[str, str], cwd: Path) -> LoadedJob:
    path = resolve_job_file(job, job_search_path(environ, cwd), cwd)
    return LoadedJob(spec=load_job_file(path), path=path)


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    """``["lr=0.1", "epochs=3"]`` -> ``{"lr": "0.1", "epochs": "3"}``; values stay strings for pydantic."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"override {item!r} is not key=value", hint="write overrides as key=value, e.g. lr=0.05")
        if key in out:
            raise ConfigError(f"override {key!r} is given twice", hint="give each key once")
        out[key] = value
    return out


def make_params(spec: JobSpec, overrides: Mapping[str, Any]) -> TrainParams:
    """Validate overrides against the job's own params model; errors name the key and the valid keys.

    The ranks validate the parameters again from job.json: so they are written to JSON and read back
    here too, and a value that does not survive that trip (inf, nan, a type JSON cannot carry) is
    refused now, before anything is queued, instead of failing on every rank.
    """
    try:
        params = spec.params.model_validate(dict(overrides))
    except (TypeError, AttributeError, KeyError, ArithmeticError) as exc:  # a job's own validator failing badly
        raise ConfigError(f"job {spec.name}: its params model failed on the overrides: {exc!r}"[:400],
                          hint="fix the validators of the job's Params class") from None
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown override {key!r}")
            elif not key:  # a check of the whole model
                problems.append(err["msg"].removeprefix("Value error, "))
            else:
                shown = str(overrides.get(key, ""))
                shown = shown if len(shown) <= 40 else f"{shown[:20]}...({len(shown)} characters)"
                problems.append(f"override {key}={shown}: {err['msg']}")
        valid = ", ".join(f"{k} ({_type_name(f.annotation)}, default {f.default!r})"
                          for k, f in spec.params.model_fields.items())
        raise ConfigError(f"job {spec.name}: " + "; ".join(problems), hint=f"valid keys: {valid}") from None
    check_round_trip(spec, params)
    return params


def check_round_trip(spec: JobSpec, params: TrainParams) -> None:
    """What every rank does with job.json's ``params``: JSON out, JSON in, validate; it must give ``params``."""
    import json

    try:
        text = json.dumps(params.model_dump(mode="json"), allow_nan=False)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"job {spec.name}: the parameters cannot be stored in job.json: {str(exc)[:200]}",
                          hint="use plain numbers, text and booleans (no inf or nan) in the job's params") from None
    try:
        again = spec.params.model_validate(json.loads(text))
    except ValidationError as exc:
        raise ConfigError(f"job {spec.name}: the ranks could not read the parameters back from job.json: "
                          f"{str(exc).splitlines()[0][:200]}",
                          hint="use values that JSON keeps as they are (plain numbers, text, booleans)") from None
    except (TypeError, AttributeError, KeyError, ArithmeticError) as exc:
        raise ConfigError(f"job {spec.name}: its params model failed on its own values: {exc!r}"[:400],
                          hint="fix the validators of the job's Params class") from None
    changed = [k for k in type(params).model_fields if getattr(again, k) != getattr(params, k)]
    if changed:
        raise ConfigError(f"job {spec.name}: parameter {changed[0]}={getattr(params, changed[0])!r} would reach "
                          f"the ranks as {getattr(again, changed[0])!r} (job.json is JSON)",
                          hint=f"use a value that JSON keeps as it is for {changed[0]}")


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
