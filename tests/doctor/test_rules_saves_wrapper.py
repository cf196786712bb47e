"""DDP006 on the DDP wrapper's state saved where the save does not name the wrapper (rules_saves ``_saved_wrapper``):
through the names the saved value is built from (``sd = net.state_dict()``, ``state = {"model": sd}``,
``torch.save(state, path)``), and in a project helper whose parameter the script fills with its wrapper (the lane
detector's ``save_model(net, optimizer, epoch, work_dir)`` after ``net = DDP(net)``): the file holds ``module.``
keys that only a wrapper loads. Silent where the script hands over ``net.module``."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor import check_file

_HELPER = """import os
import torch
import torch.distributed as dist


def save_model(net, optimizer, epoch, save_path):
    if dist.get_rank() == 0:
        model_state_dict = net.state_dict()
        state = {"model": model_state_dict, "optimizer": optimizer.state_dict()}
        torch.save(state, os.path.join(save_path, "ep%03d.pth" % epoch))
"""

_SCRIPT = """import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import save_model

dist.init_process_group("nccl")
net = torch.nn.Linear(2, 2).cuda()
net = DDP(net, device_ids=[int(os.environ["LOCAL_RANK"])])
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(3):
    save_model({net}, optimizer, epoch, "runs")
"""


def _ddp006(tmp_path: Path, passed: str) -> list[tuple[str, int]]:
    (tmp_path / "common.py").write_text(_HELPER)
    (tmp_path / "train.py").write_text(_SCRIPT.format(net=passed))
    return [(Path(f.file).name, f.line) for f in check_file(tmp_path / "train.py") if f.code == "DDP006"]


def test_the_wrapper_handed_to_a_helpers_save_is_reported_at_the_save(tmp_path: Path) -> None:
    assert _ddp006(tmp_path, "net") == [("common.py", 10)]


def test_the_wrapped_module_handed_over_is_silent(tmp_path: Path) -> None:
    assert _ddp006(tmp_path, "net.module") == []


_UNWRAPPED_BY_A_HELPER = """import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def get_module(model, distributed):
    return model.module if distributed else model


dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2).cuda(), device_ids=[int(os.environ["LOCAL_RANK"])])
if dist.get_rank() == 0:
    torch.save({saved}, "checkpoint.pth")
"""


def test_the_wrapper_handed_to_an_unwrapping_function_is_silent(tmp_path: Path) -> None:
    """Panoptic-DeepLab's ``get_module(model, distributed).state_dict()``: what the function returns is saved."""
    script = tmp_path / "train.py"
    for saved in ("get_module(model, True).state_dict()", "{'state_dict': get_module(model, True).state_dict()}"):
        script.write_text(_UNWRAPPED_BY_A_HELPER.format(saved=saved), encoding="utf-8")
        assert [f for f in check_file(script) if f.code == "DDP006"] == [], saved
    for saved in ("model", "model.state_dict()", "dict(model=model)", "[model]"):
        script.write_text(_UNWRAPPED_BY_A_HELPER.format(saved=saved), encoding="utf-8")
        assert [f.line for f in check_file(script) if f.code == "DDP006"] == [14], saved
