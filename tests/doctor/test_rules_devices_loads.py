"""DDP009 in a script a framework runs on every rank (Accelerate's ``prepare``): a checkpoint loaded with no
``map_location`` lands where it was saved (GPU 0) on every rank; silent with ``map_location`` and in a script no
framework or process group makes parallel; and a load whose result a model takes later in the function
(``data = torch.load(p)``, then ``net.load_state_dict(data["net"])``) is a model's state, whatever its names."""

from __future__ import annotations

from orchestrator.doctor import check_source

_SCRIPT = """
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(2, 2)
model.load_state_dict({load})
{prepare}
"""


def codes(load: str, prepare: str = "model = accelerator.prepare(model)") -> list[str]:
    return [f.code for f in check_source(_SCRIPT.format(load=load, prepare=prepare), "t.py")]


def test_a_checkpoint_loaded_with_no_map_location_under_accelerate_is_reported() -> None:
    assert "DDP009" in codes('torch.load("ckpt.pt")["model"]')


def test_a_map_location_is_not_reported() -> None:
    assert "DDP009" not in codes('torch.load("ckpt.pt", map_location="cpu")["model"]')


def test_a_script_no_framework_makes_parallel_is_not_judged() -> None:
    assert "DDP009" not in codes('torch.load("ckpt.pt")["model"]', prepare="")


_FED = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
net = torch.nn.Linear(2, 2).cuda()


def restore(p):
    data = torch.load(p)
    {use}


restore("x.pt")
model = DDP(net)
"""


def fed_findings(use: str) -> list[str]:
    return [f.confidence for f in check_source(_FED.format(use=use), "t.py") if f.code == "DDP009"]


def test_a_load_fed_to_load_state_dict_later_is_a_models_state() -> None:
    assert fed_findings('net.load_state_dict(data["net"])') == ["likely"]


def test_a_load_no_model_takes_is_not_judged() -> None:
    assert fed_findings("print(len(data))") == []



_BRANCHES = """
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(gpu, args):
    dist.init_process_group("nccl")
    model = DDP(torch.nn.Linear(2, 2).cuda(gpu))
    if args.gpu is None:
        checkpoint = torch.load(args.resume)
    else:
        checkpoint = torch.load(args.resume{other})
    model.load_state_dict(checkpoint["model"])


def main(args):
    ngpus = torch.cuda.device_count()
{guard}
    if args.spawn:
        mp.spawn(worker, nprocs=ngpus, args=(args,))
    else:
        worker(args.gpu, args)
"""
_ONE_GPU = """\
    if ngpus > 1 and not args.spawn:
        print("more than one GPU: pass --spawn")
        return -1
"""


def branch_lines(other: str, guard: str = _ONE_GPU) -> list[int]:
    source = _BRANCHES.format(other=other, guard=guard)
    return [f.line for f in check_source(source, "t.py") if f.code == "DDP009"]


def test_a_load_without_a_gpu_where_the_script_runs_one_gpu_unless_it_spawns_is_not_reported() -> None:
    assert branch_lines(', map_location=f"cuda:{args.gpu}"') == []


def test_the_same_load_in_a_script_that_runs_unspawned_on_many_gpus_is_reported() -> None:
    assert branch_lines(', map_location=f"cuda:{args.gpu}"', guard="") == [12]


def test_the_same_load_in_a_script_whose_spawn_is_how_it_trains_is_not_reported() -> None:
    """FKD's ImageNet layout: the group is given the flags' world (no launcher's WORLD_SIZE read anywhere), so the
    spawn is how the script trains (a per-node script) and its workers always have a GPU: the ``args.gpu is None``
    branch runs in no spawned worker."""
    source = _BRANCHES.format(other=', map_location=f"cuda:{args.gpu}"', guard="").replace(
        'dist.init_process_group("nccl")', 'dist.init_process_group("nccl", world_size=args.world_size, rank=gpu)')
    assert [f.line for f in check_source(source, "t.py") if f.code == "DDP009"] == []


def test_a_cpu_map_location_in_the_other_branch_leaves_the_gpu_branch_reported() -> None:
    assert branch_lines(', map_location="cpu"') == [12]


def test_both_branches_without_map_location_are_reported() -> None:
    assert branch_lines("") == [12, 14]


_SAVER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Model:
    def save_network(self, network, path):
        state_dict = network.state_dict()
        for key, param in state_dict.items():
            state_dict[key] = {copy}
        torch.save(state_dict, path)

    def load_network(self, network, path):
        network.load_state_dict(torch.load(path))


dist.init_process_group("nccl")
net = DDP(torch.nn.Linear(2, 2).cuda())
"""


def test_a_load_of_what_its_saver_writes_as_cpu_copies_is_not_reported() -> None:
    """KAIR's ``load_network``: its ``save_network`` saves ``param.cpu()`` copies, so the load holds no GPU tensors."""
    assert "DDP009" not in [f.code for f in check_source(_SAVER.format(copy="param.cpu()"), "t.py")]
    assert "DDP009" in [f.code for f in check_source(_SAVER.format(copy="param"), "t.py")]


_CPU_COPIES = """
import copy
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
model = torch.nn.Linear(2, 2).cuda()
model.load_state_dict(torch.load("model.3.bin"))
model = DDP(model)
torch.save({saved}, "model.4.bin")
torch.save({optimizer}, "optim.4.bin")
"""


def test_loads_in_a_file_whose_every_save_is_a_cpu_copy_are_not_reported() -> None:
    """VLP's captioning script saves ``copy.deepcopy(model_to_save).cpu().state_dict()``: what it loads back (its own
    checkpoints) holds no GPU tensors. One save of GPU tensors in the file, and its loads are judged again."""
    def codes(saved: str, optimizer: str) -> list[str]:
        return [f.code for f in check_source(_CPU_COPIES.format(saved=saved, optimizer=optimizer), "t.py")]
    cpu = "copy.deepcopy(model.module).cpu().state_dict()"
    assert "DDP009" not in codes(cpu, "{k: v.cpu() for k, v in model.state_dict().items()}")
    assert "DDP009" in codes(cpu, "model.module.state_dict()")
