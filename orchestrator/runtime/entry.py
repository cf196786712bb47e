"""The shared entrypoint: device, process group, the job's code, then the training loop (``runtime/trainer.py``).

``run(...)`` is what ``python -m orchestrator.runtime.launch`` calls in every task once the distributed
environment is derived and exported. A job file holds no distributed code: it only builds a
``TrainTask`` (model, data sets, loss, metrics); everything here and in ``runtime/trainer.py`` is the same
for every job.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from orchestrator.env import devices
from orchestrator.env.distenv import DistEnv
from orchestrator.records.startup import CLOCK
from orchestrator.restarts.heartbeat import Heartbeat, NoBeat
from orchestrator.runtime.dist import gather_objects, process_group
from orchestrator.runtime.imports import join, prefetch_dynamo
from orchestrator.runtime.trainer import Trainer
from orchestrator.spec.job import load_job_file
from orchestrator.spec.runconfig import RunConfig
from orchestrator.spec.snapshot import relocate
from orchestrator.task.preempt import PreemptFlag


def run(cfg: RunConfig, env: DistEnv, job_dir: Path, flag: PreemptFlag, environ: Mapping[str, str],
        store: Any = None, beat: Heartbeat | None = None) -> int:
    """Train the job of ``cfg`` as rank ``env.rank``; returns the exit code (0 also after preemption).
    ``store``, ``beat``: an in-process restart's generation store and its worker's heartbeat (restarts/)."""
    cuda = torch.cuda.is_available()
    choice = devices.select_device(
        cuda_available=cuda, device_count=torch.cuda.device_count() if cuda else 0,
        visible=environ.get(devices.VISIBLE_VAR), rank=env.rank, local_rank=env.local_rank,
        local_world_size=env.local_world_size)
    spec = load_job_file(Path(relocate(cfg.job_file, cfg.snapshot)))  # the code snapshot's copy, if any
    params = spec.params.model_validate(cfg.params)
    torch.set_num_threads(devices.num_threads(params.num_threads, cfg.cpus_per_task))
    dynamo = prefetch_dynamo()  # DDP imports torch._dynamo: overlap that with the rendezvous
    CLOCK.lap("imports")
    with process_group(rank=env.rank, world_size=env.world_size, local_rank=env.local_rank,
                       master_addr=env.master_addr, master_port=env.master_port, choice=choice,
                       timeout=cfg.launcher.init_timeout,
                       collective_timeout=cfg.launcher.collective_timeout, store=store) as ctx:
        CLOCK.lap("process_group")
        join(dynamo)  # before this rank imports anything else: no two threads importing at once
        CLOCK.lap("import_dynamo")
        if choice.kind == "cuda":
            host = devices.host_name(environ, socket.gethostname())
            devices.check_unique_devices(gather_objects((host, choice.physical), ctx))
        data_dir = cfg.data_dir  # resolved at submit/run time ($ORCH_DATA_DIR is read there, not here)
        trainer = Trainer(cfg=cfg, spec=spec, params=params, ctx=ctx, job_dir=job_dir, flag=flag,
                          data_dir=Path(data_dir).expanduser() if data_dir else None, beat=beat or NoBeat())
        try:
            return trainer.run()
        finally:
            if trainer.checkpointer is not None:
                trainer.checkpointer.close()  # a write still in flight lands (an exception path)
            trainer.tracker.close(trainer.status)
