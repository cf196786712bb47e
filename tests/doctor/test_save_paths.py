"""Whose file a save writes (orchestrator/doctor/save_paths.py): a name each process draws for itself (``uuid4()``,
``os.getpid()``, an unseeded ``random`` draw) is its own file; a TensorBoard writer made with no folder writes under
``runs/<time>_<hostname>``, one per node; a data cache built where it is missing and read back is no per-node
checkpoint. Each beside its twin that still writes one shared file (DDP006)."""

from __future__ import annotations

from orchestrator.doctor import check_source

_EVERY_RANK = """
import os
import random
import string
import uuid
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
{seed}
checkpoint = torch.load("pretrained.ckpt", map_location="cpu")
name = {name}
path = os.path.join("/shared/tmp", name + ".ckpt")
torch.save(checkpoint, path)
"""


def every_rank(name: str, seed: str = "") -> list[str]:
    return [f.code for f in check_source(_EVERY_RANK.format(name=name, seed=seed), "t.py")]


def test_a_name_each_process_draws_is_its_own_file() -> None:
    assert "DDP006" not in every_rank("str(uuid.uuid4())")
    assert "DDP006" not in every_rank("str(os.getpid())")
    assert "DDP006" not in every_rank('"".join(random.choices(string.ascii_lowercase, k=10))')


_UNPACKED = """
import os
import tempfile
import torch
import torch.distributed as dist

dist.init_process_group("nccl")
fd, tmp_path = tempfile.mkstemp(suffix=".pt", dir="/shared/ckpt")
os.close(fd)
torch.save({{"step": 1}}, {path})
"""


def test_a_file_unpacked_from_mkstemp_is_each_processs_own() -> None:
    """spot-train's ``fd, tmp_path = tempfile.mkstemp(...)``, then ``torch.save(blob, tmp_path)``: a new name each
    call."""
    assert "DDP006" not in [f.code for f in check_source(_UNPACKED.format(path="tmp_path"), "t.py")]
    assert "DDP006" in [f.code for f in check_source(_UNPACKED.format(path='"/shared/ckpt/last.pt"'), "t.py")]


def test_a_random_name_drawn_after_a_common_seed_is_one_file() -> None:
    assert "DDP006" in every_rank('"".join(random.choices(string.ascii_lowercase, k=10))', seed="random.seed(0)")


def test_a_fixed_name_is_one_file() -> None:
    assert "DDP006" in every_rank('"converted"')


_TENSORBOARD = """
import os
import torch
import torch.distributed as dist
from torch.utils.tensorboard import SummaryWriter

local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
if local_rank == 0:
    writer = {writer}
    torch.save({{"lr": 0.1}}, os.path.join(writer.log_dir, "config.bin"))
"""


def tensorboard(writer: str) -> list[str]:
    return [f.code for f in check_source(_TENSORBOARD.format(writer=writer), "t.py")]


def test_a_per_node_save_into_a_writers_default_folder_is_the_nodes_own() -> None:
    assert "DDP006" not in tensorboard("SummaryWriter()")
    assert "DDP006" not in tensorboard("SummaryWriter(log_dir=None, comment='lm')")


def test_a_per_node_save_into_a_writers_given_folder_is_shared() -> None:
    assert "DDP006" in tensorboard('SummaryWriter("runs/lm")')
    assert "DDP006" in tensorboard('SummaryWriter(log_dir="runs/lm")')


_CACHE = """
import os
import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
model = torch.nn.Linear(2, 2)


def load_data(cache_file):
    if os.path.exists(cache_file):
        return torch.load(cache_file)
    features = [list(range(8)) for _ in range(100)]
    {guard}
        torch.save({saved}, cache_file)
    return features


data = load_data("cache/features.pt")
"""


def cache(saved: str, guard: str = "if local_rank in (-1, 0):") -> list[str]:
    return [f.code for f in check_source(_CACHE.format(saved=saved, guard=guard), "t.py")]


def test_a_data_cache_built_by_each_nodes_first_process_is_no_checkpoint() -> None:
    assert "DDP006" not in cache("features")


def test_a_data_cache_every_rank_writes_at_once_is_reported() -> None:
    assert "DDP006" in cache("features", guard="if True:")


def test_a_model_saved_where_the_file_is_tested_and_read_is_a_checkpoint() -> None:
    assert "DDP006" in cache("model.state_dict()")
    assert "DDP006" in cache('{"model": features}')
