"""DDP014 is the script's own spawn: the spawn inside the project's copy of a well-known installed spawner
(detectron2's ``engine/launch.py`` ``launch``, shipped with the script in a package folder without its
``__init__.py``) is that spawner's, made only when asked for more than one process, and not reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file

_LAUNCH = """\
import torch.distributed as dist
import torch.multiprocessing as mp


def _worker(index, main_func, world_size, machine_rank, num_gpus_per_machine, dist_url, args):
    dist.init_process_group("nccl", init_method=dist_url, world_size=world_size,
                            rank=machine_rank * num_gpus_per_machine + index)
    main_func(*args)


def {name}(main_func, num_gpus_per_machine, num_machines=1, machine_rank=0, dist_url=None, args=()):
    world_size = num_machines * num_gpus_per_machine
    if world_size > 1:
        mp.start_processes(_worker, nprocs=num_gpus_per_machine,
                           args=(main_func, world_size, machine_rank, num_gpus_per_machine, dist_url, args))
    else:
        main_func(*args)
"""

_ENTRY = """\
from {package} import {name}


def main():
    print("training")


if __name__ == "__main__":
    {name}(main, 8, num_machines=2, machine_rank=0, dist_url="env://")
"""


@pytest.mark.parametrize(("package", "name", "reported"), [
    ("detectron2.engine", "launch", False),  # detectron2's own spawner, copied
    ("myproject.engine", "launch", True),  # the project's spawner: the script's spawn
    ("detectron2.engine", "start", True)])  # another function of that module
def test_a_copy_of_an_installed_spawner_is_not_the_scripts_spawn(tmp_path: Path, package: str, name: str,
                                                                 reported: bool) -> None:
    folder = tmp_path.joinpath(*package.split("."))
    folder.mkdir(parents=True)
    (folder / "launch.py").write_text(_LAUNCH.format(name=name))
    entry = tmp_path / "train.py"
    entry.write_text(_ENTRY.format(package=package, name=name))
    assert any(f.code == "DDP014" for f in check_file(entry)) is reported
