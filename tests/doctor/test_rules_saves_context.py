"""DDP006 reads a backend's ``is_root_worker()`` early return as a rank guard (the save runs on the root worker
only), and a path edited by a string method (``f"{name}_lora".replace("/", "_")``) is still a path; the same saves
with no guard are every rank's, and a value that is no path is not judged."""

from __future__ import annotations

from orchestrator.doctor import check_source

_SCRIPT = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Backend:
    def is_root_worker(self):
        return dist.get_rank() == 0


backend = Backend()
dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2))


def save_model(path):
{guard}
    torch.save(model.module.state_dict(), path)


for epoch in range(3):
    save_model("ckpt.pt")
"""


def codes(guard: str) -> list[str]:
    return [f.code for f in check_source(_SCRIPT.format(guard=guard), "t.py")]


def test_an_early_return_off_the_root_worker_guards_the_save() -> None:
    assert "DDP006" not in codes("    if not backend.is_root_worker():\n        return")


def test_the_save_with_no_guard_is_every_ranks() -> None:
    assert "DDP006" in codes("    pass")


_PRETRAINED = """
from accelerate import Accelerator
from transformers import AutoModel

accelerator = Accelerator()
model = accelerator.prepare(AutoModel.from_pretrained("m"))
name = "org/model"
for epoch in range(3):
    model_id = {path}
    model.save_pretrained(model_id)
"""


def pretrained_codes(path: str) -> list[str]:
    return [f.code for f in check_source(_PRETRAINED.format(path=path), "t.py")]


def test_an_edited_path_saved_by_every_rank_is_reported() -> None:
    assert "DDP006" in pretrained_codes('f"{name}_lora".replace("/", "_")')


def test_an_edited_value_that_is_no_path_is_not_judged() -> None:
    assert "DDP006" not in pretrained_codes('make_repo(name).replace("/", "_")')


_PER_NODE = """
import os
import socket
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2))


def make_logdir(name):
    return os.path.join("runs", name + "_" + socket.gethostname())


if local_rank == 0:
    log_dir = {folder}
    torch.save(model.module.state_dict(), os.path.join(log_dir, "model.pt"))
"""


def per_node_codes(folder: str) -> list[str]:
    return [f.code for f in check_source(_PER_NODE.format(folder=folder), "t.py")]


def test_a_per_node_save_into_a_folder_named_for_the_host_writes_no_shared_file() -> None:
    assert "DDP006" not in per_node_codes('make_logdir("gpt")')
    assert "DDP006" not in per_node_codes('"runs/" + socket.gethostname()')


def test_a_per_node_save_into_one_folder_is_still_reported() -> None:
    assert "DDP006" in per_node_codes('"runs/gpt"')


_METHOD_PATH = """
import io
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self):
        self.model = DDP(torch.nn.Linear(2, 2))

    def target(self, num):
        return {target}

    def save(self, num):
        torch.save(self.model.module.state_dict(), self.target(num))


dist.init_process_group("nccl")
Trainer().save(3)
"""


def method_codes(target: str) -> list[str]:
    return [f.code for f in check_source(_METHOD_PATH.format(target=target), "t.py")]


def test_a_path_a_method_of_the_file_returns_is_a_path() -> None:
    assert "DDP006" in method_codes('str(f"models/model_{num}.pt")')


def test_a_buffer_a_method_returns_is_not_judged() -> None:
    assert "DDP006" not in method_codes("io.BytesIO()")


def test_a_path_a_method_builds_from_a_rank_is_each_ranks_own() -> None:
    assert "DDP006" not in method_codes('f"models/model_{num}_rank{self.rank}.pt"')


_WRAPPER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2))
{resume}
for step in range(100):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "ckpt.pth")
"""


def wrapper_codes(resume: str) -> list[str]:
    return [f.code for f in check_source(_WRAPPER.format(resume=resume), "t.py")]


def test_a_wrapper_saved_and_loaded_back_into_the_wrapper_is_still_reported() -> None:
    assert "DDP006" in wrapper_codes('model.load_state_dict(torch.load("ckpt.pth"))')  # as the DDP tutorial does
    assert "DDP006" not in wrapper_codes('sd = {k.replace("module.", ""): v for k, v in torch.load("c").items()}')


def test_a_wrapper_saved_and_loaded_into_the_module_is_reported() -> None:
    assert "DDP006" in wrapper_codes('model.module.load_state_dict(torch.load("ckpt.pth"))')
    assert "DDP006" in wrapper_codes("")
