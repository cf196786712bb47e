"""probe: the smoke job, plus a record of the distributed environment each rank saw.

``build`` runs in every task after ``orchestrator.task.launch`` exported the derived variables, so
``<job folder>/ranks/rank<R>.json`` shows what Slurm gave the task (SLURM_PROCID, SLURM_LOCALID,
SLURM_NODEID, SLURMD_NODENAME) next to what orch derived from it (RANK, LOCAL_RANK, NODE_RANK, ...).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from jobs.smoke import SmokeParams
from jobs.smoke import build as smoke_build
from orchestrator import JobSpec, Resources

if TYPE_CHECKING:
    from orchestrator import BuildContext, TrainTask

RECORDED = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "MASTER_ADDR",
            "MASTER_PORT", "SLURM_JOB_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURMD_NODENAME",
            "SLURM_RESTART_COUNT", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "GLOO_SOCKET_IFNAME")


def build(params: SmokeParams, ctx: BuildContext) -> TrainTask:
    record = {name: os.environ.get(name) for name in RECORDED}
    record.update(ctx_rank=ctx.rank, ctx_local_rank=ctx.local_rank, ctx_world_size=ctx.world_size,
                  device=str(ctx.device), pid=os.getpid())
    folder = ctx.job_dir / "ranks"
    folder.mkdir(exist_ok=True)
    (folder / f"rank{ctx.rank}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    return smoke_build(params, ctx)


SPEC = JobSpec(
    name="probe",
    params=SmokeParams,
    build=build,
    resources=Resources(nodes=1, gpus=1, time="00:10:00"),
    description="smoke, recording each rank's environment in ranks/rank<R>.json",
)
