"""DDP006 for the DDP wrapper's state saved (its keys start with ``module.``), unless the project copes with the
prefix: the file itself, or a project module it imports that names it as a string (Seg_model's ``from
utils.model_utils import *``, whose ``load_weights`` does ``if k.startswith('module.'): k = k[7:]``)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor.check import check_file

TRAIN = """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.model_utils import *

dist.init_process_group("nccl")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(2, 2).cuda())
for epoch in range(3):
    model(torch.randn(4, 2).cuda()).sum().backward()
    if rank == 0:
        torch.save(model.state_dict(), "last.pth")
    dist.barrier()
"""

STRIPS = """\
import torch


def load_weights(model, path):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict({(k[7:] if k.startswith('module.') else k): v for k, v in state.items()})
"""


def _repository(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"LICENSE": "MIT\n", "train.py": TRAIN, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root / "train.py"


def _wrapper_saves(path: Path) -> list[str]:
    return [f.evidence for f in check_file(path) if f.code == "DDP006" and "saves the DDP wrapper" in f.evidence]


def test_the_wrappers_state_is_reported_where_nothing_strips_its_prefix(tmp_path: Path) -> None:
    [evidence] = _wrapper_saves(_repository(tmp_path / "bare", {"utils/model_utils.py": "import os\n"}))
    assert "saves the DDP wrapper model, not model.module" in evidence


def test_a_module_of_the_repository_that_strips_the_prefix_answers_it(tmp_path: Path) -> None:
    assert _wrapper_saves(_repository(tmp_path / "strips", {"utils/model_utils.py": STRIPS})) == []
    double = STRIPS.replace("'module.'", '"module."')
    assert _wrapper_saves(_repository(tmp_path / "double", {"utils/model_utils.py": double})) == []


def test_the_prefix_named_outside_a_string_or_outside_the_imports_is_not_enough(tmp_path: Path) -> None:
    """``model.module.state_dict()``, or a comment about ``module.`` keys, is no loader that strips them; nor is a
    module the script never imports (another tool of the repository)."""
    other = "def unwrap(model):\n    return model.module.state_dict()  # keys without module.\n"
    assert len(_wrapper_saves(_repository(tmp_path / "other", {"utils/model_utils.py": other}))) == 1
    apart = {"utils/model_utils.py": "import os\n", "tools/convert.py": STRIPS}
    assert len(_wrapper_saves(_repository(tmp_path / "apart", apart))) == 1


def test_a_save_that_unwraps_on_its_distributed_side_or_rewrites_the_keys_is_not_the_wrappers(tmp_path: Path) -> None:
    """``model.module.state_dict() if world_size > 1 else model.state_dict()`` saves the bare model's keys (the else
    is the run without a wrapper); a comprehension that rewrites each key drops the prefix itself."""
    bare = {"utils/model_utils.py": "import os\n"}
    for i, saved in enumerate(['model.module.state_dict() if dist.get_world_size() > 1 else model.state_dict()',
                               '{"model": model.state_dict() if rank < 0 else model.module.state_dict()}',
                               '{".".join(k.split(".")[1:]): v for k, v in model.state_dict().items()}']):
        root = tmp_path / str(i)
        _repository(root, bare)
        (root / "train.py").write_text(TRAIN.replace("torch.save(model.state_dict(),", f"torch.save({saved},"))
        assert _wrapper_saves(root / "train.py") == [], saved
    root = tmp_path / "plain"
    _repository(root, bare)
    (root / "train.py").write_text(TRAIN.replace("torch.save(model.state_dict(),",
                                                 "torch.save({k: v for k, v in model.state_dict().items()},"))
    assert len(_wrapper_saves(root / "train.py")) == 1  # the keys kept as they are
