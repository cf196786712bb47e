"""Tasks in a container (pure): which runtime, image and bind mounts a job uses.

| runtime     | how srun starts each task                                                      |
| ----------- | ------------------------------------------------------------------------------ |
| none        | ``srun ... $PYTHON -m orchestrator.runtime.launch ...``                        |
| pyxis       | ``srun --container-image=IMG --container-mounts=M ... python3 -m ...``         |
| apptainer   | ``srun ... apptainer exec [--nv] --bind M IMG python3 -m ...``                 |

cluster.yaml ``launcher.container`` sets the defaults; ``orch submit --container-runtime``,
``--container-image`` and ``--container-mounts`` override them per job. The job folder and the
submit directory (and the script's folder) are always mounted at the same path, so every task
finds ``job.json`` and the script. The batch shell itself stays on the host: it computes
MASTER_PORT with launcher.python there. orch must be importable by the image's python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import ConfigError


class Container(BaseModel):
    """cluster.yaml ``launcher.container``: run every task in a container: pyxis/enroot (srun
    --container-image) or Apptainer/Singularity."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runtime: Literal["none", "pyxis", "apptainer"] = "none"
    image: str | None = Field(default=None, description="pyxis: an enroot image (nvcr.io#nvidia/pytorch:24.05-py3 "
                              "or a .sqsh file); apptainer: a .sif file or a docker:// URI")
    mounts: list[str] = Field(default_factory=list, description="SRC[:DST[:FLAGS]] bind mounts; the job folder "
                              "and the submit directory are always added")
    python: str = Field(default="python3", description="python inside the image (orch must be importable there)")
    apptainer: str = Field(default="apptainer", description="the command: apptainer or singularity")


@dataclass(frozen=True)
class ContainerPlan:
    runtime: str  # pyxis | apptainer
    image: str
    mounts: str  # SRC:DST,SRC:DST (pyxis --container-mounts and apptainer --bind take the same form)
    python: str
    apptainer: str


def check_mount(mount: str, source: str) -> str:
    parts = mount.split(":")
    if not mount or "," in mount or len(parts) > 3 or not all(parts[:2]) or not parts[0].startswith("/"):
        raise ConfigError(f"{source}: {mount!r} is not SRC[:DST[:FLAGS]] with an absolute SRC",
                          hint="one mount per entry, e.g. /scratch:/scratch or /data:/data:ro (no commas)")
    return mount if len(parts) > 1 else f"{mount}:{mount}"  # pyxis wants SRC:DST


def resolve_container(config: Container, *, runtime: str | None, image: str | None, mounts: Sequence[str],
                      always: Sequence[str]) -> ContainerPlan | None:
    """The job's container (None: none). ``always``: host paths every task needs (mounted as is)."""
    chosen = runtime or config.runtime
    picture = image or config.image
    if chosen == "none":
        if image is not None or mounts:
            raise ConfigError("--container-image/--container-mounts without a container runtime",
                              hint="add --container-runtime pyxis (or apptainer), or set launcher.container.runtime")
        return None
    if not picture:
        raise ConfigError(f"container runtime {chosen} needs an image",
                          hint="pass --container-image IMAGE or set launcher.container.image")
    wanted: list[str] = []
    for mount in [*config.mounts, *mounts]:
        wanted.append(check_mount(mount, "launcher.container.mounts / --container-mounts"))
    for path in always:
        for bad in ",:":
            if bad in path:
                raise ConfigError(f"{path!r} contains {bad!r}, which a container mount list cannot carry",
                                  hint="use a job root, script and submit directory without ',' and ':'")
        if not any(m.split(":")[0] == path for m in wanted):
            wanted.append(f"{path}:{path}")
    return ContainerPlan(runtime=chosen, image=picture, mounts=",".join(wanted), python=config.python,
                         apptainer=config.apptainer)
