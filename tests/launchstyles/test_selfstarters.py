"""Scripts that start their own ranks without ``mp.spawn`` (orchestrator/launchstyles/spawns.py): torchrun's agent
run in-process (``elastic_launch(LaunchConfig(...), entrypoint)(*args)``) and a launcher helper of the project that
starts ``multiprocessing.Process(target=_wrap, args=(func, ...))``, where ``_wrap`` calls the function its caller
hands over (TAPE's ``launch_process_group(run_train, args, ...)``, the shape of torch's own spawn): both ``per-node``,
named at the start's line."""

from __future__ import annotations

from pathlib import Path

from orchestrator.launchstyles import detect, read

_ELASTIC = """import torch.distributed as dist
from torch.distributed.launcher.api import LaunchConfig, elastic_launch


def worker(config):
    dist.init_process_group("nccl")


def main(config):
    launch_config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=8, rdzv_backend="c10d")
    elastic_launch(launch_config, worker)(config)


if __name__ == "__main__":
    main({})
"""


def test_torchruns_agent_started_in_the_script_is_per_node(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(_ELASTIC)
    launch = detect(read(script))
    assert (launch.style, launch.why) == ("per-node", "train.py:11: elastic_launch(launch_config, worker)(config)")


_LAUNCHER = """import multiprocessing as mp


def _wrap(func, kwargs, queue):
    func(**kwargs)


def launch_process_group(func, args, num_processes):
    for local_rank in range(num_processes):
        process = mp.Process(target=_wrap, args=(func, {"args": args}, mp.SimpleQueue()))
        process.start()
"""

_TRAINER = """import torch.distributed as dist


def train(args):
    dist.init_process_group("nccl")
"""

_ENTRY = """import argparse

from pkg import launcher, trainer


def run_train(args=None):
    trainer.train(args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    launcher.launch_process_group(run_train, parser.parse_args(), 8)
"""


def test_a_launcher_helper_that_wraps_the_function_it_is_handed_is_per_node(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "launcher.py").write_text(_LAUNCHER)
    (tmp_path / "pkg" / "trainer.py").write_text(_TRAINER)
    (tmp_path / "main.py").write_text(_ENTRY)
    launch = detect(read(tmp_path / "main.py"))
    assert launch.style == "per-node" and launch.why.startswith("pkg/launcher.py:10: process = mp.Process(")
    # the handed function that trains nothing (a logger): the helper's processes are not ranks
    (tmp_path / "pkg" / "trainer.py").write_text("def train(args):\n    print(args)\n")
    assert detect(read(tmp_path / "main.py")).style != "per-node"
