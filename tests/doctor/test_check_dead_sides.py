"""A finding on a side of an ``if`` that no launched rank takes is not on the run orch starts (``check._run`` with
``source.flow.Flow.dead_lines``): TabPFN's ``init_dist``, whose ``elif "SLURM_PROCID" in os.environ:`` branch (a
``localhost`` rendezvous, ``set_device`` of the global rank) runs only when ``LOCAL_RANK`` is absent, which orch's
launcher always sets; the ``LOCAL_RANK`` branch's own pitfalls are still found."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.doctor import check_file
from orchestrator.source.flow import Flow
from orchestrator.source.names import Module
from orchestrator.source.ranks import Ranks

_SCRIPT = """import os
import torch
import torch.distributed as dist


def init_dist():
    if "LOCAL_RANK" in os.environ:
        rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", world_size=torch.cuda.device_count(), rank=rank)
        return rank
    elif "SLURM_PROCID" in os.environ:
        rank = int(os.environ["SLURM_PROCID"])
        os.environ["MASTER_ADDR"] = "localhost"
        os.environ["MASTER_PORT"] = "12355"
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", world_size=torch.cuda.device_count(), rank=rank)
        return rank
    return 0


rank = init_dist()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
"""


def test_the_branch_no_launched_rank_takes_has_no_finding(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT)
    lines = {(f.code, f.line) for f in check_file(script)}
    assert not {line for _, line in lines} & set(range(12, 19)), lines  # the SLURM_PROCID branch
    assert ("DDP016", 10) in lines  # the local rank as the global rank, on the branch orch's launcher takes


def test_dead_lines_are_the_sides_no_launched_rank_takes() -> None:
    tree = ast.parse(_SCRIPT)
    module = Module(tree)
    flow = Flow(module, Ranks(module))
    assert flow.dead_lines() == [range(12, 19)]


_WINDOWS = """import os
import tempfile
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, num_gpus, temp_dir):
    init_file = os.path.join(temp_dir, "init")
    if os.name == "nt":
        dist.init_process_group("gloo", init_method=f"file:///{init_file}", rank=rank, world_size=num_gpus)
    else:
        dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=num_gpus)


if __name__ == "__main__":
    gpus = torch.cuda.device_count()
    with tempfile.TemporaryDirectory() as temp_dir:
        mp.spawn(worker, args=(gpus, temp_dir), nprocs=gpus)
"""


def test_the_side_of_an_operating_system_test_a_linux_node_never_takes_is_dead() -> None:
    module = Module(ast.parse(_WINDOWS))
    flow = Flow(module, Ranks(module))
    assert flow.dead_lines() == [range(11, 12)]
    worker = module.functions["worker"]
    init = flow.reaches(worker, frozenset({"torch.distributed.init_process_group"}))
    assert init is not None and init.lineno == 13  # the Linux side's, not the first in the text


def test_a_spawners_findings_sit_on_the_linux_side(tmp_path: Path) -> None:
    """StyleGAN-XL's layout: the one-node world (DDP008) is where the GPU count is taken, the spawn index as the rank
    (DDP016) and the temp-folder rendezvous (DDP021) on the Linux side's init; nothing on the Windows side."""
    script = tmp_path / "train.py"
    script.write_text(_WINDOWS)
    lines = {(f.code, f.line) for f in check_file(script)}
    assert {("DDP008", 17), ("DDP016", 13), ("DDP021", 13)} <= lines, lines
    assert 11 not in {line for _, line in lines}, lines


_RETURNS_FIRST = """import os
import torch.distributed as dist


def init_distributed_mode(args):
    print("Not using distributed mode")
    args.distributed = False
    return

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29500"
    dist.init_process_group("nccl")


def loop(batches):
    for batch in batches:
        if batch is None:
            continue
        step(batch)
    raise SystemExit(0)
    os.environ["MASTER_ADDR"] = "10.0.0.1"
"""


def test_what_follows_a_return_or_raise_in_its_block_is_dead(tmp_path: Path) -> None:
    """MaskSpec's ``init_distributed_mode`` returns before its set-up: the addresses it would write never are."""
    module = Module(ast.parse(_RETURNS_FIRST))
    flow = Flow(module, Ranks(module))
    assert range(10, 13) in flow.dead_lines() and range(21, 22) in flow.dead_lines()
    assert range(19, 20) not in flow.dead_lines()  # `step(batch)` after the `if` whose body continues: it runs
    script = tmp_path / "train.py"
    script.write_text(_RETURNS_FIRST)
    assert not [f for f in check_file(script) if f.code == "DDP008"]
    live = _RETURNS_FIRST.replace("    return\n\n", "\n")
    script.write_text(live)
    assert [f.line for f in check_file(script) if f.code == "DDP008"][:1] == [9]  # once it runs, it is reported


_BOTH_PRESENT = """import os
import torch
import torch.distributed as dist


def init_distributed_mode(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.rank = int(os.environ["RANK"])
        args.gpu = int(os.environ["LOCAL_RANK"])
    elif "SLURM_PROCID" in os.environ:
        args.rank = int(os.environ["SLURM_PROCID"])
        os.environ["MASTER_PORT"] = str(12345 + int(min(os.environ["SLURM_STEP_GPUS"].split(","))))
    torch.cuda.set_device(args.gpu)
    dist.init_process_group("nccl", init_method="env://", rank=args.rank)
"""


def test_a_test_of_several_launcher_variables_is_true_in_every_launched_run() -> None:
    """FrozenBiLM's (DETR's) ``if "RANK" in os.environ and "WORLD_SIZE" in os.environ:``: both are set by every
    launcher, so its Slurm ``elif`` never runs; with ``or``, one launcher variable is enough; an ``and`` with a part
    that is no launcher variable (a flag) may be false."""
    module = Module(ast.parse(_BOTH_PRESENT))
    assert Flow(module, Ranks(module)).dead_lines() == [range(10, 13)]
    either = Module(ast.parse(_BOTH_PRESENT.replace(" and ", " or ")))
    assert Flow(either, Ranks(either)).dead_lines() == [range(10, 13)]
    flagged = Module(ast.parse(_BOTH_PRESENT.replace('"WORLD_SIZE" in os.environ', "args.dist")))
    assert Flow(flagged, Ranks(flagged)).dead_lines() == []


# CryoNet's early stop: rank 0's decision broadcast when the launched world has several ranks, the same stop taken
# alone on the run of one process (``source.worldsize``: the world unpacked from the file's set-up function)
_SWITCHED_STOP = """import os
import torch
import torch.distributed as dist


def setup_ddp():
    if "WORLD_SIZE" in os.environ:
        world_size = int(os.environ["WORLD_SIZE"])
    else:
        world_size = 1
    if world_size > 1:
        dist.init_process_group("nccl")
    return dist.get_rank() if world_size > 1 else 0, world_size


def main():
    rank, world_size = setup_ddp()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    for epoch in range(10):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        if {switch}:
            stop = torch.tensor([int(rank == 0 and loss.item() < 0.1)])
            dist.broadcast(stop, src=0)
            if stop.item():
                break
        else:
            if rank == 0 and loss.item() < 0.1:
                break


main()
"""


def test_a_stop_on_the_one_process_side_of_a_world_size_switch_is_not_reported(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SWITCHED_STOP.format(switch="world_size > 1"), encoding="utf-8")
    assert "DDP024" not in [f.code for f in check_file(script)]
    script.write_text(_SWITCHED_STOP.format(switch="epoch % 2"), encoding="utf-8")  # not a switch: one rank leaves
    assert "DDP024" in [f.code for f in check_file(script)]


_SWITCHED = """import argparse, os
import torch
import torch.distributed as dist


def setup(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)


def save_checkpoint(model, path, ddp=True):
    if ddp:
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), path)
    else:
        torch.save(model.state_dict(), path)


def train(out, ddp):
    if ddp:
        setup(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    model = torch.nn.Linear(2, 2)
    for epoch in range(3):
        save_checkpoint(model, out, ddp=ddp)


parser = argparse.ArgumentParser()
parser.add_argument("--ddp", action="store_true")
args = parser.parse_args()
train("ck.pt", args.ddp)
"""


def test_a_save_on_the_side_the_process_groups_switch_leaves_off_is_not_reported(tmp_path: Path) -> None:
    """ABACBS's ``save_checkpoint(..., ddp=ddp)``: its ``else`` saves on every rank only where no process group was
    started (``if ddp: setup(...)``); passed ``ddp=False`` instead, that save runs beside the distributed ones."""
    path = tmp_path / "train.py"
    path.write_text(_SWITCHED)
    assert [f.line for f in check_file(path) if f.code == "DDP006"] == []
    path.write_text(_SWITCHED.replace("save_checkpoint(model, out, ddp=ddp)", "save_checkpoint(model, out, ddp=False)"))
    assert [f.line for f in check_file(path) if f.code == "DDP006"] == [15]
