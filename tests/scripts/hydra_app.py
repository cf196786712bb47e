"""A Hydra app as Hydra's docs write it (no orch import): ``@hydra.main`` with a config folder next to the
script; it joins the ranks' world (torchrun's variables), trains a few DDP steps, logs through Hydra's
logging, and each rank writes ``rank<R>.json`` into Hydra's run directory (its place, the run directory,
the final parameters' checksum).

    torchrun --nproc-per-node 2 hydra_app.py lr=0.1   (or orch run --nproc 2)
"""

import json
import logging
import os
from pathlib import Path

import hydra
import torch
import torch.distributed as dist
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from torch import nn

log = logging.getLogger(__name__)


@hydra.main(version_base="1.3", config_path="hydra_conf", config_name="config")
def main(cfg: DictConfig) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(rank)
    for _ in range(cfg.steps):
        x = torch.randn(8, 8, generator=gen)
        loss = nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    checksum = sum(float(p.detach().double().sum()) for p in model.parameters())
    log.info("rank %d done, checksum %.6f", rank, checksum)
    (run_dir / f"rank{rank}.json").write_text(json.dumps(
        {"rank": rank, "world_size": dist.get_world_size(), "run_dir": str(run_dir), "cwd": os.getcwd(),
         "checksum": checksum}))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
