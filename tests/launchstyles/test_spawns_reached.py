"""Spawns read where a project puts them (orchestrator/launchstyles/spawns.py): a spawner in a shared helper module
that another helper module hands the worker, and a spawn behind an opt-in flag whose other branch stops the script.
Both are per-node scripts; the same code with a launcher's path beside the spawn is not."""

from __future__ import annotations

from pathlib import Path

from orchestrator.launchstyles import detect, read

WORKER = """\
import torch.distributed as dist


def main_worker(gpu, ngpus_per_node, args):
    dist.init_process_group("nccl")
    print("training", gpu)
"""


def _package_project(root: Path) -> Path:
    """``python -m cat.ctc``: the entry imports its training module relatively; that module hands its worker to the
    spawner of a shared helper module (CAT's ``coreutils.main_spawner(args, main_worker)``)."""
    for folder in ("cat", "cat/ctc", "cat/shared"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "__init__.py").write_text("", encoding="utf-8")
    (root / "cat" / "ctc" / "__main__.py").write_text("from .train import main\nmain()\n", encoding="utf-8")
    worker = WORKER.replace("import torch.distributed as dist\n", "import torch.distributed as dist\n\n")
    (root / "cat" / "ctc" / "train.py").write_text(
        "import argparse\n\nfrom ..shared import coreutils\n\n\n" + worker
        + "\n\ndef main():\n    args = argparse.ArgumentParser().parse_args()\n"
          "    coreutils.main_spawner(args, main_worker)\n", encoding="utf-8")
    (root / "cat" / "shared" / "coreutils.py").write_text(
        "import torch\nimport torch.multiprocessing as mp\n\n\ndef main_spawner(args, _main_worker):\n"
        "    ngpus_per_node = torch.cuda.device_count()\n"
        "    mp.spawn(_main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))\n", encoding="utf-8")
    return root / "cat" / "ctc" / "__main__.py"


def test_a_spawner_handed_its_worker_by_another_helper_module_is_a_spawn(tmp_path: Path) -> None:
    entry = _package_project(tmp_path)
    facts = read(entry)
    assert [(Path(s.file).name, s.line) for s in facts.spawns] == [("coreutils.py", 7)]
    launch = detect(facts)
    assert (launch.style, launch.why.split(":")[0]) == ("per-node", "coreutils.py")


def test_a_spawner_handed_a_worker_that_trains_nothing_is_no_spawn(tmp_path: Path) -> None:
    entry = _package_project(tmp_path)
    train = tmp_path / "cat" / "ctc" / "train.py"
    train.write_text(train.read_text(encoding="utf-8").replace('    dist.init_process_group("nccl")\n', ""),
                     encoding="utf-8")
    assert read(entry).spawns == ()


OPT_IN = WORKER + """

def main(args):
    if args.multiprocessing_distributed:
        mp.spawn(main_worker, nprocs=8, args=(8, args))
    else:
        {other}


if __name__ == "__main__":
    import argparse
    import torch.multiprocessing as mp
    parser = argparse.ArgumentParser()
    parser.add_argument("--multiprocessing-distributed", action="store_true")
    main(parser.parse_args())
"""


def test_an_opt_in_spawn_whose_other_branch_stops_is_the_only_way(tmp_path: Path) -> None:
    script = tmp_path / "main_contrast.py"
    script.write_text(OPT_IN.format(other="raise NotImplementedError('Currently only DDP training')"),
                      encoding="utf-8")
    launch = detect(read(script))
    assert (launch.style, launch.why.split(":")[:2]) == ("per-node", ["main_contrast.py", "11"])


def test_an_opt_in_spawn_beside_a_launcher_path_is_asked_for_not_the_style(tmp_path: Path) -> None:
    script = tmp_path / "main.py"
    script.write_text(OPT_IN.format(other="main_worker(None, 1, args)"), encoding="utf-8")  # ImageNet's other branch
    assert read(script).spawns == ()
    assert detect(read(script)).style == "env"


PARTIAL = """\
import time
from functools import partial

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def distributed_train(rank, num_gpus, group_name):
    dist.init_process_group("nccl", init_method="tcp://localhost:54321", world_size=num_gpus, rank=rank)


def main():
    num_gpus = torch.cuda.device_count()
    train_fn = partial(distributed_train, num_gpus=num_gpus, group_name=time.strftime("%Y%m%d"))
    {start}


if __name__ == "__main__":
    main()
"""


def test_a_process_started_on_a_partial_of_a_training_function_is_a_spawn(tmp_path: Path) -> None:
    """SaShiMi's ``train_fn = partial(distributed_train, ...)``, one ``mp.Process(target=train_fn)`` per GPU."""
    script = tmp_path / "train.py"
    script.write_text(PARTIAL.format(start="for i in range(num_gpus):\n        mp.Process(target=train_fn, "
                                           "args=(i,)).start()"), encoding="utf-8")
    launch = detect(read(script))
    assert (launch.style, launch.why.split(":")[:2]) == ("per-node", ["train.py", "17"])
    inline = tmp_path / "inline.py"
    inline.write_text(PARTIAL.format(start="mp.spawn(partial(distributed_train, group_name='g'), nprocs=num_gpus)"),
                      encoding="utf-8")
    assert [s.line for s in read(inline).spawns] == [16]


def test_a_partial_of_a_function_that_trains_nothing_is_no_spawn(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(PARTIAL.replace('    dist.init_process_group("nccl", init_method="tcp://localhost:54321", '
                                      'world_size=num_gpus, rank=rank)\n', "    print(rank)\n").format(
        start="mp.Process(target=train_fn, args=(0,)).start()"), encoding="utf-8")
    assert read(script).spawns == ()


def _process_runner(root: Path, sets_up: str) -> Path:
    """PointContrast's (and pycls's) layout: the entry calls ``lib/multiprocessing.py``'s runner, whose ``Process``
    target starts the group through a function of another helper module, ``lib/distributed.py``."""
    (root / "lib").mkdir()
    (root / "lib" / "distributed.py").write_text(
        "import torch\nimport torch.distributed as dist\n\n\ndef init_process_group(rank, world_size):\n"
        f"    {sets_up}\n", encoding="utf-8")
    (root / "lib" / "multiprocessing.py").write_text(
        "import multiprocessing as mp\n\nimport lib.distributed as du\n\n\ndef run(rank, world_size, fun):\n"
        "    du.init_process_group(rank, world_size)\n    fun()\n\n\ndef multi_proc_run(num_proc, fun):\n"
        "    ps = []\n    for i in range(num_proc):\n"
        "        p = mp.Process(target=run, args=(i, num_proc, fun))\n        ps.append(p)\n        p.start()\n"
        "    for p in ps:\n        p.join()\n", encoding="utf-8")
    (root / "train.py").write_text(
        "import lib.multiprocessing as mpu\n\n\ndef train():\n    print('training')\n\n\n"
        "mpu.multi_proc_run(8, train)\n", encoding="utf-8")
    return root / "train.py"


def test_a_process_whose_target_sets_up_the_group_in_another_helper_module_is_a_spawn(tmp_path: Path) -> None:
    facts = read(_process_runner(tmp_path, "dist.init_process_group('nccl', init_method='tcp://localhost:10001', "
                                           "world_size=world_size, rank=rank)"))
    assert [(Path(s.file).name, s.line) for s in facts.spawns] == [("multiprocessing.py", 14)]
    assert detect(facts).style == "per-node"


def test_a_process_whose_helper_sets_up_nothing_is_no_spawn(tmp_path: Path) -> None:
    facts = read(_process_runner(tmp_path, "torch.cuda.set_device(rank)"))
    assert facts.spawns == ()
