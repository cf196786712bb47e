"""Launch styles: how a script expects its ranks to be started, the one table of them (pure).

A script is written for one launcher, and runs correctly only when started that way
(:data:`DESCRIPTIONS` says what each style is written for and how orch starts it):

* ``env``: torchrun's (reads ``LOCAL_RANK``...): one task per rank, torchrun's variables;
* ``local-rank-arg``: ``torch.distributed.launch``'s (the GPU from ``--local_rank``): the same, and
  ``--local-rank=N`` before its arguments in the spelling it declares;
* ``per-node``: it spawns its own processes (``mp.spawn``): one task per node holding the node's GPUs,
  MASTER_ADDR/PORT, NODE_RANK, NNODES, NPROC_PER_NODE, WORLD_SIZE, and ``{node_rank}``... in its arguments;
* ``slurm``: srun's (reads ``SLURM_PROCID``...): one task per rank, Slurm's task variables consistent with it.

``orch submit``/``orch run`` pick the style from the script's source (``orchestrator.launchstyles``:
the line that decided it is kept in :class:`Launch` and shown by the dry run); ``--launch STYLE`` overrides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import ConfigError

LaunchStyle = Literal["env", "local-rank-arg", "per-node", "slurm"]
STYLES: tuple[str, ...] = get_args(LaunchStyle)
AUTO = "auto"  # --launch auto (the default): read the script
LOCAL_RANK_FLAGS = ("--local_rank", "--local-rank")  # the spellings torch.distributed.launch passed

# style -> (what it is written for, how orch starts it): the dry run's and docs' one description
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "env": ("torchrun (ranks from LOCAL_RANK, RANK, WORLD_SIZE)", "one task per rank, torchrun's variables"),
    "local-rank-arg": ("torch.distributed.launch (the GPU from a --local_rank argument)",
                       "one task per rank, torchrun's variables and --local-rank=N as the old launcher passed it"),
    "per-node": ("its own processes per node (mp.spawn)",
                 "one task per node holding the node's GPUs; MASTER_ADDR, MASTER_PORT, NODE_RANK, NNODES, "
                 "NPROC_PER_NODE, WORLD_SIZE exported; {node_rank}... filled in its arguments"),
    "slurm": ("srun (ranks from SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS)",
              "one task per rank, Slurm's task variables consistent with the rank, and torchrun's"),
}

# per-node: the placeholders filled in the script's arguments, each task its own node's values
# each placeholder's value is the variable of that name a per-node task gets (env/taskenv.per_node_env)
PLACEHOLDER_VARS = {"node_rank": "NODE_RANK", "nnodes": "NNODES", "nproc_per_node": "NPROC_PER_NODE",
                    "world_size": "WORLD_SIZE", "master_addr": "MASTER_ADDR", "master_port": "MASTER_PORT"}
PLACEHOLDERS = tuple(PLACEHOLDER_VARS)
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


class Launch(BaseModel):
    """How the script's ranks are started (``job.json`` ``script.launch``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    style: LaunchStyle = "env"
    how: Literal["default", "detected", "asked"] = Field(
        default="default", description="default: nothing in the script said otherwise; detected: read from the "
                                       "script (why); asked: --launch")
    why: str = Field(default="", description="the line that decided it (file:line: code), or the option")
    flag: str = Field(default="--local-rank", description="local-rank-arg: the spelling the script declares")
    procs_per_task: int = Field(default=1, ge=1, le=1024,
                                description="per-node: the processes each task (node) starts itself")

    def describe(self) -> str:
        """One line for the dry run: ``launch: per-node (detected: train.py:46: mp.spawn(...))``."""
        how = {"default": "the default", "detected": "detected", "asked": "asked"}[self.how]
        reason = f": {self.why}" if self.why else ""
        return f"{self.style} ({how}{reason}); {DESCRIPTIONS[self.style][1]}"


def fill_placeholders(args: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """``{node_rank}`` and the other :data:`PLACEHOLDERS` replaced by this task's values; everything else
    (``{lr}``, ``{}``) stays byte for byte (pure)."""
    return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in args]


def uses_placeholders(args: Sequence[str]) -> list[str]:
    """The placeholders the arguments name, in order of first use (pure)."""
    seen: list[str] = []
    for arg in args:
        for match in _PLACEHOLDER.finditer(arg):
            if match.group(1) not in seen:
                seen.append(match.group(1))
    return seen


def local_rank_argument(flag: str, local_rank: int) -> str:
    """What ``torch.distributed.launch`` put before the script's own arguments (pure)."""
    return f"{flag}={local_rank}"


def check_style(asked: str | None, *, script: bool) -> str:
    """``--launch``'s value, checked: a style of :data:`STYLES` or ``auto``, for a script only."""
    if asked is None or asked == AUTO:
        return AUTO
    if asked not in STYLES:
        raise ConfigError(f"--launch {asked!r} is not a launch style",
                          hint=f"use one of: {AUTO}, {', '.join(STYLES)} (docs/bring-your-own-script.md)")
    if not script:
        raise ConfigError(f"--launch {asked}: a job file runs orch's own entrypoint, which starts one rank per task",
                          hint="leave out --launch, or pass a script (train.py) or -m package.module")
    return asked
