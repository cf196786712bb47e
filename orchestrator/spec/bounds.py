"""The one table of bounds on the numbers orch hands on: to Slurm, to the ranks and to its own loops (pure).

Every bound is the stricter of what the receiver can hold and what can make sense:

- Slurm keeps counts in 32-bit fields (``0xfffffffe``/``0xffffffff`` mean "not set"/"infinite", and
  larger numbers wrap: an array throttle of ``2**32 + 1`` becomes 1), a node's CPUs in 16 bits, time
  limits in minutes, and a job array holds ``MaxArraySize - 1`` elements at most (orch's sweeps: 1000);
- the ranks turn timeouts into ``datetime.timedelta`` and ``threading`` waits (at most about 2.9e11
  seconds, ``threading.TIMEOUT_MAX`` about 9.2e9), and hyperparameters into float32 tensors;
- orch's own waits (``orch logs -f --interval``) must neither spin nor sleep for ever.

pydantic fields take a bound with ``Annotated[int, within(NAME)]``; plain values (command-line options)
call :func:`check` with the option's name, which raises ``ValueError`` naming the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from annotated_types import Interval

DAY = 86_400
MAX_TIME_LIMIT_S = 365 * DAY  # --time, defaults.time, max_time (UNLIMITED for no limit)
MAX_TIMEOUT_S = 7 * DAY  # the launcher's waits: a rank that waits longer is stuck, not slow
MAX_MEM_MB = 1 << 30  # 1 PiB per node (Slurm keeps MB in 64 bits, with flag bits on top)
MAX_ARRAY_SIZE = 1000  # Slurm's default MaxArraySize is 1001 (indices 0-1000)
MAX_CPUS = 65_534  # Slurm keeps a node's CPU count in 16 bits (0xffff: not set)
MAX_NODES = 100_000  # the partition's node list is the real limit; Slurm counts nodes in 32 bits
MAX_GPUS_PER_NODE = 64
MAX_LR = 1e4  # any larger learning rate overflows the first update of float32 weights
MAX_RESUMES = 1_000_000  # job.json's restarts: how often orch run --resume continued a local run
C_INT_MAX = 2**31 - 1  # counts that reach torch as a C int
FLOAT32_MAX = 3.4028234663852886e38  # a job's float hyperparameters reach torch as float32 tensors


@dataclass(frozen=True)
class Bound:
    """``low <= value <= high`` (``low`` excluded when ``open_low``); ``why`` explains ``high``."""

    low: float
    high: float
    why: str
    open_low: bool = False
    unit: str = ""  # shown after the numbers (" s")

    def problem(self, value: float) -> str | None:
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number, not {value}"
        too_low = value <= self.low if self.open_low else value < self.low
        if too_low or value > self.high:
            low = f"more than {_show(self.low)}" if self.open_low else f"at least {_show(self.low)}"
            return f"must be {low}{self.unit} and at most {_show(self.high)}{self.unit} ({self.why})"
        return None


def _show(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else f"{value:g}"


BOUNDS: dict[str, Bound] = {
    # numbers orch passes to Slurm
    "nodes": Bound(1, MAX_NODES, "the partition's node list is the real limit"),
    "gpus": Bound(0, MAX_GPUS_PER_NODE, "GPUs per node"),
    "gpus_per_task": Bound(1, MAX_GPUS_PER_NODE, "GPUs per node"),
    "ntasks_per_node": Bound(1, MAX_CPUS, "Slurm counts a node's CPUs in 16 bits"),
    "cpus_per_task": Bound(1, MAX_CPUS, "Slurm counts a node's CPUs in 16 bits"),
    "cpus_per_node": Bound(1, MAX_CPUS, "Slurm counts a node's CPUs in 16 bits"),
    "array_throttle": Bound(1, MAX_ARRAY_SIZE, f"a sweep has at most {MAX_ARRAY_SIZE} elements; Slurm wraps "
                                               "larger numbers (2**32 + 1 becomes 1)"),
    "time_limit": Bound(1, MAX_TIME_LIMIT_S, "365 days; use UNLIMITED for no limit", unit=" s"),
    "mem_mb": Bound(0, MAX_MEM_MB, "1 PiB per node"),
    # the launcher's waits (cluster.yaml launcher.*), in seconds
    "init_timeout": Bound(10, MAX_TIMEOUT_S, "7 days"),
    "collective_timeout": Bound(5, MAX_TIMEOUT_S, "7 days"),
    "srun_wait": Bound(0, MAX_TIMEOUT_S, "7 days"),
    "preempt_before": Bound(0, MAX_TIMEOUT_S, "7 days"),
    "bad_node_ttl": Bound(0, 365 * DAY, "365 days; 0 to remember no bad node"),
    # restarts inside the allocation (docs/preemption-and-restarts.md)
    "max_restarts": Bound(0, 100, "each restart redoes the work since the last checkpoint"),
    "spare_nodes": Bound(0, MAX_NODES, "the partition's node list is the real limit"),
    "restarts": Bound(0, MAX_RESUMES, "each one is an orch run --resume; the ranks count restarts in a C int"),
    # TrainParams
    "lr": Bound(0, MAX_LR, "a larger step overflows float32 weights at the first update", open_low=True),
    "momentum": Bound(0, 1, "momentum above 1 makes every update grow"),
    "weight_decay": Bound(0, MAX_LR, "as lr"),
    "lr_gamma": Bound(0, MAX_LR, "as lr", open_low=True),
    "lr_min": Bound(0, MAX_LR, "as lr"),
    "progress_every": Bound(0, DAY, "1 day; 0 for no progress lines"),
    "checkpoint_every": Bound(0, MAX_TIMEOUT_S, "7 days; 0 for checkpoints at epoch ends only"),
    "num_workers": Bound(0, 1024, "DataLoader processes per rank"),
    "epochs": Bound(1, C_INT_MAX, "a C int"),
    "batch_size": Bound(1, C_INT_MAX, "a C int"),
    "eval_batch_size": Bound(1, C_INT_MAX, "a C int"),
    "max_steps_per_epoch": Bound(1, C_INT_MAX, "a C int"),
    "seed": Bound(0, 2**63 - 1, "torch's generators take 64 bits"),
    "num_threads": Bound(1, 4096, "torch threads per rank"),
    "grad_accum": Bound(1, 2**31 - 1, "a C int"),
    "warmup_steps": Bound(0, 2**31 - 1, "a C int"),
    "lr_step_epochs": Bound(1, 2**31 - 1, "a C int"),
    "log_every": Bound(1, 2**31 - 1, "a C int"),
    # orch's own loops
    "interval": Bound(0.01, 3600, "seconds between reads: above 0.01 (no busy loop), at most an hour"),
}


def within(name: str) -> Interval:
    """The bound of ``name`` for a pydantic field: ``x: Annotated[int, within("nodes")] = 1``."""
    bound = BOUNDS[name]
    whole = float(bound.low).is_integer() and float(bound.high).is_integer()
    low, high = (int(bound.low), int(bound.high)) if whole else (bound.low, bound.high)
    return Interval(gt=low, le=high) if bound.open_low else Interval(ge=low, le=high)


def check(name: str, value: float | None) -> None:
    """``ValueError`` naming the bound when ``value`` (not None) is outside the bound of ``name``."""
    if value is None:
        return
    problem = BOUNDS[name].problem(value)
    if problem is not None:
        raise ValueError(f"{value!r}{BOUNDS[name].unit} {problem}")


def param_problem(name: str, value: object) -> str | None:
    """What is wrong with hyperparameter ``name`` = ``value``: a built-in one (TrainParams) against the table
    (also when a job redeclares the field with a new default and no bounds), any float against float32,
    any integer against 64 bits."""
    if isinstance(value, bool):
        return None
    bound = BOUNDS.get(name) if name in TRAIN_PARAMS else None
    if bound is not None and isinstance(value, (int, float)):
        problem = bound.problem(value)
        if problem is not None:
            return f"{name}={value} {problem}"
    if isinstance(value, float):
        return check_float32(name, value)
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return f"{name} does not fit in 64 bits (torch's integers)"
    return None


# TrainParams' own fields with a bound (orchestrator.spec.job checks this list has them all)
TRAIN_PARAMS = frozenset({"epochs", "batch_size", "eval_batch_size", "max_steps_per_epoch", "seed", "num_threads",
                          "grad_accum", "warmup_steps", "lr_step_epochs", "lr", "momentum", "weight_decay",
                          "lr_gamma", "lr_min", "progress_every", "num_workers",
                          "checkpoint_every", "log_every"})


def check_float32(name: str, value: float) -> str | None:
    """A job's own float hyperparameter: finite and within float32 (torch's default dtype)."""
    if not math.isfinite(value):
        return f"{name}={value} is not a finite number (job.json, which carries it to the ranks, is JSON)"
    if abs(value) > FLOAT32_MAX:
        return f"{name}={value:g} does not fit in float32 (at most {FLOAT32_MAX:.4g}), torch's default dtype"
    return None
