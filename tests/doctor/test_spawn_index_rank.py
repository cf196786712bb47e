"""DDP016 at a spawner for one node whose spawned processes pass their spawn index, unchanged, as
``init_process_group``'s rank (orchestrator/doctor/rules_spawn.py ``check_index_as_rank``, on the launch styles' fact
``launchstyles/spawnrank.py``): a warning in the doctor's own output (it trains on one node), an error across nodes
(every node's processes claim ranks 0..nprocs-1), reported once at the init line; silent where the rank adds a node's
offset to the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor.check import check_file, check_source
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.launchstyle import answered
from orchestrator.launchstyles import choose

_SPAWNER = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(gpu, args):
{body}
    torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda(gpu), device_ids=[gpu])


if __name__ == "__main__":
    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(None,))
"""


def _ddp016(findings: list) -> list[tuple[int, str]]:  # type: ignore[type-arg]
    return [(f.line, f.severity) for f in findings if f.code == "DDP016"]


@pytest.mark.parametrize(("body", "found"), [
    # the index itself, and through a copy: a warning at the init
    ("    dist.init_process_group('nccl', rank=gpu, world_size=torch.cuda.device_count())", [(7, "warning")]),
    ("    rank = gpu\n    dist.init_process_group('nccl', rank=rank, world_size=8)", [(8, "warning")]),
    # the node's offset added (a flag, the environment): the global rank, silent
    ("    rank = args.nr * 8 + gpu\n    dist.init_process_group('nccl', rank=rank, world_size=16)", []),
    ("    dist.init_process_group('nccl', rank=int(__import__('os').environ['NODE_RANK']) * 8 + gpu)", []),
    # no rank= at all: init_process_group reads RANK itself, silent
    ("    dist.init_process_group('nccl')", []),
    # the index written into the environment as RANK, which the group then reads: at the RANK line
    ("    import os\n    os.environ['RANK'] = str(gpu)\n    dist.init_process_group('nccl')", [(8, "warning")]),
    ("    import os\n    os.environ.update({\n        'MASTER_PORT': '29500',\n        'RANK': f'{gpu}',\n    })\n"
     "    dist.init_process_group('nccl')", [(10, "warning")]),
    ("    import os\n    os.environ.update(RANK=str(gpu))\n    dist.init_process_group('nccl')", [(8, "warning")]),
    # the node's offset in what is written, or only the local rank written: silent
    ("    import os\n    os.environ['RANK'] = str(args.nr * 8 + gpu)\n    dist.init_process_group('nccl')", []),
    ("    import os\n    os.environ['LOCAL_RANK'] = str(gpu)\n    dist.init_process_group('nccl')", []),
    # StyleGAN-XL: a Windows-only gloo init first, the Linux one in the `else`: the cluster's, at its line
    ("    import os\n    if os.name == 'nt':\n        dist.init_process_group('gloo', rank=gpu, world_size=2)\n"
     "    else:\n        dist.init_process_group('nccl', rank=gpu, world_size=2)", [(11, "warning")]),
])
def test_a_spawn_index_as_the_rank_is_a_warning_on_one_node(body: str, found: list[tuple[int, str]]) -> None:
    findings = check_source(_SPAWNER.format(body=body), "train.py")
    assert _ddp016(findings) == found
    if found:
        ddp016 = next(f for f in findings if f.code == "DDP016")
        assert "spawn index" in ddp016.message and "NODE_RANK" in ddp016.fix
        assert ddp016.confidence != "possible"


def test_a_spawn_a_launcher_check_keeps_from_running_is_silent() -> None:
    """``if "LOCAL_RANK" not in os.environ: mp.spawn(...)``: under a launcher the workers take the launcher's ranks,
    so the index as the rank is the script's single-machine fallback, not a per-node spawner."""
    source = _SPAWNER.format(body="    dist.init_process_group('nccl', rank=gpu, world_size=8)").replace(
        "    mp.spawn(", "    import os\n    if 'LOCAL_RANK' not in os.environ:\n        mp.spawn(")
    assert _ddp016(check_source(source, "train.py")) == []


@pytest.mark.parametrize(("calls", "found"), [
    ("    run_distributed(worker, None)\n", [(7, "warning")]),  # the one function every call hands in
    ("    run_distributed(worker, None)\n    run_distributed(other, None)\n", []),  # two: not known which
])
def test_a_spawn_of_a_function_handed_in_as_a_parameter_is_followed(calls: str, found: list[tuple[int, str]]) -> None:
    """``def run_distributed(fn, args): mp.spawn(fn, ...)``, called with the file's training function: that function
    is what the spawn starts."""
    source = _SPAWNER.format(body="    dist.init_process_group('nccl', rank=gpu, world_size=8)").replace(
        'if __name__ == "__main__":\n    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(None,))\n',
        "def other(gpu, args):\n    dist.init_process_group('nccl', rank=args.nr * 8 + gpu, world_size=16)\n\n\n"
        "def run_distributed(fn, args):\n    mp.spawn(fn, nprocs=torch.cuda.device_count(), args=(args,))\n\n\n"
        'if __name__ == "__main__":\n' + calls)
    assert _ddp016(check_source(source, "train.py")) == found


def test_two_spawns_of_one_worker_are_one_finding() -> None:
    source = _SPAWNER.format(body="    dist.init_process_group('nccl', rank=gpu, world_size=8)").replace(
        "    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(None,))",
        "    if torch.cuda.device_count() > 4:\n        mp.spawn(worker, nprocs=4, args=(None,))\n"
        "    else:\n        mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(None,))")
    assert _ddp016(check_source(source, "train.py")) == [(7, "warning")]


def test_the_init_in_a_project_module_is_reported_in_that_module(tmp_path: Path) -> None:
    """The spawned function comes from the project (``from utils.train import train``): the finding names that
    module's init line; the node's offset there keeps it silent."""
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("", encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text("import torch\nimport torch.multiprocessing as mp\n\nfrom utils.train import train\n\n"
                      "if __name__ == '__main__':\n"
                      "    mp.spawn(train, nprocs=torch.cuda.device_count(), args=(None,))\n", encoding="utf-8")
    for rank, found in (("rank", [("train.py", 5)]), ("args.node_rank * 8 + rank", [])):
        (tmp_path / "utils" / "train.py").write_text(
            "import torch.distributed as dist\n\n\n"
            "def train(rank, args):\n"
            f"    dist.init_process_group('nccl', init_method=args.url, world_size=args.world, rank={rank})\n",
            encoding="utf-8")
        assert [(Path(f.file).name, f.line) for f in check_file(script) if f.code == "DDP016"] == found


@pytest.mark.parametrize("nodes", [1, 2])
def test_across_nodes_the_same_finding_is_the_error(tmp_path: Path, nodes: int) -> None:
    """The per-node style's answer adds no second DDP016 at the line; across nodes the warning becomes the error
    (with the offset to add, or one node), on one node it stays a warning."""
    script = tmp_path / "train.py"
    script.write_text(_SPAWNER.format(body="    dist.init_process_group('nccl', rank=gpu, world_size=8)"),
                      encoding="utf-8")
    launch = choose("auto", script)
    assert launch.style == "per-node"
    found = across_nodes(answered(launch, check_file(script), nodes, script), nodes, 8)
    assert _ddp016(found) == [(7, "error" if nodes > 1 else "warning")]
    if nodes > 1:
        ddp016 = next(f for f in found if f.code == "DDP016")
        assert "cannot work on 2 nodes" in ddp016.message and "NODE_RANK" in ddp016.fix


_BOTH_WAYS = """import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main_worker(gpu, ngpus, args):
    if args.local_rank != -1:
        args.rank = {launched}
    else:
        args.rank = args.rank * ngpus + gpu
    dist.init_process_group('nccl', init_method=args.dist_url, world_size=args.world_size, rank=args.rank)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--local_rank', default=-1, type=int)
    parser.add_argument('--multiprocessing-distributed', action='store_true')
    args = parser.parse_args()
    ngpus = torch.cuda.device_count()
    if args.multiprocessing_distributed:
        mp.spawn(main_worker, nprocs=ngpus, args=(ngpus, args))
    else:
        main_worker(args.local_rank, ngpus, args)
"""


@pytest.mark.parametrize(("launched", "found"), [
    ("args.local_rank", True),  # the launcher's path: the node's local rank as the global rank
    ("int(__import__('os').environ['RANK'])", False),
])
def test_a_spawner_whose_worker_a_launcher_also_starts_is_read_on_the_launchers_path(launched: str,
                                                                                     found: bool) -> None:
    """MoCo-style ``main_worker``: spawned per node with ``--multiprocessing-distributed``, else called once per
    launched rank; on that path ``args.rank = args.local_rank`` claims ranks 0..n-1 again on every node."""
    findings = check_source(_BOTH_WAYS.format(launched=launched), "train.py")
    assert bool([f for f in findings if f.code == "DDP016"]) is found


_BOTH_PATHS = """import argparse
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main_worker(gpu, ngpus, args):
    args.gpu = gpu
    print(vars(args))
    dist.init_process_group('nccl', init_method='env://', world_size=ngpus, rank=args.gpu)


if __name__ == "__main__":
    args = argparse.ArgumentParser().parse_args()
    if args.distributed:
        mp.spawn(main_worker, nprocs=torch.cuda.device_count(), args=(torch.cuda.device_count(), args))
    else:
        main_worker(0, 1, args)
"""


def test_an_index_held_in_an_attribute_is_one_finding_past_a_call_that_reads_it() -> None:
    """``args.gpu = gpu`` past ``print(vars(args))`` (a call that only reads the object): the index is the rank, said
    once at the attribute's assignment; the local-rank reading of ``rank=args.gpu`` at the init gives way to it."""
    assert _ddp016(check_source(_BOTH_PATHS, "train.py")) == [(8, "warning")]
