"""DDP006 on saves that only rank 0 reaches though no plain rank test sits around them: a project helper's rank test
combined with ``and`` (``def is_first_worker(): return not dist.is_available() or not dist.is_initialized() or
dist.get_rank() == 0``), a value the other ranks unset (``if rank != 0: ckpt_dir = None``) or that only rank 0 sets
(``saver = None; if is_main: saver = Saver()``) tested before the save, a helper's parameter left at its None default
by the one call that runs on every rank (``checkpoint(cfg)`` loads, ``checkpoint(cfg, model=m)`` saves); and on saves
every rank does make: to a path numbered by the local rank alone, or to an ``a if a else b`` path."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

_HEAD = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
"""


def _project(tmp_path: Path, script: str, helper: str, helper_name: str = "dist_helpers.py") -> Path:
    (tmp_path / helper_name).write_text(helper)
    (tmp_path / "train.py").write_text(script)
    return tmp_path / "train.py"


def _ddp006(findings: list) -> list[int]:  # type: ignore[type-arg]
    return [f.line for f in findings if f.code == "DDP006"]


_RANK_HELPER = """\
import torch.distributed as dist


def is_first_worker():
    return not dist.is_available() or not dist.is_initialized() or dist.get_rank() == 0


def is_chosen():
    return dist.is_initialized()
"""

_HELPER_GUARD = _HEAD + """\
from dist_helpers import {helper}

dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2))
for step in range(100):
    if {helper}() and step % 10 == 0:
        torch.save(model.module.state_dict(), os.path.join("out", "ckpt.pt"))
"""


def test_a_project_helper_returning_a_rank_test_guards_the_save(tmp_path: Path) -> None:
    script = _project(tmp_path, _HELPER_GUARD.format(helper="is_first_worker"), _RANK_HELPER)
    assert _ddp006(check_file(script)) == []


def test_a_project_helper_testing_no_rank_guards_nothing(tmp_path: Path) -> None:
    script = _project(tmp_path, _HELPER_GUARD.format(helper="is_chosen"), _RANK_HELPER)
    assert _ddp006(check_file(script)) == [11]


_CHECKPOINT_HELPER = """\
import os
import torch


def checkpoint(cfg, model=None, save_dir="ckpts"):
    path = os.path.join(save_dir, "resume.pth")
    if model is not None:
        torch.save(model.state_dict(), path)
    else:
        if os.path.exists(path):
            return torch.load(path, map_location="cpu")
        return None
"""

_CHECKPOINT_SCRIPT = _HEAD + """\
from dist_helpers import checkpoint

dist.init_process_group("nccl")
rank = dist.get_rank()
model = DDP(torch.nn.Linear(2, 2))
state = checkpoint(None{resume})
for step in range(100):
    if rank == 0 and step % 10 == 0:
        checkpoint(None, model=model.module)
"""


def test_a_call_leaving_the_model_at_none_loads_and_never_saves(tmp_path: Path) -> None:
    script = _project(tmp_path, _CHECKPOINT_SCRIPT.format(resume=""), _CHECKPOINT_HELPER)
    assert _ddp006(check_file(script)) == []


def test_a_call_on_every_rank_that_passes_the_model_saves_on_every_rank(tmp_path: Path) -> None:
    script = _project(tmp_path, _CHECKPOINT_SCRIPT.format(resume=", model.module"), _CHECKPOINT_HELPER)
    assert _ddp006(check_file(script)) == [8]


_UNSET = _HEAD + """\
dist.init_process_group("nccl")
info = {{"rank": dist.get_rank(), "local_rank": int(os.environ["LOCAL_RANK"])}}
ckpt_dir = "ckpts"
if info["rank"] not in [0, -1]:
    ckpt_dir = {value}
model = DDP(torch.nn.Linear(2, 2))
for step in range(100):
    if ckpt_dir is not None and step % 10 == 0:
        torch.save(model.module.state_dict(), os.path.join(ckpt_dir, f"step_{{step}}.pth"))
"""


def test_a_folder_the_other_ranks_unset_guards_the_saves_under_its_test() -> None:
    assert _ddp006(check_source(_UNSET.format(value="None"), "t.py")) == []


def test_a_folder_the_other_ranks_keep_guards_nothing() -> None:
    assert _ddp006(check_source(_UNSET.format(value='"other"'), "t.py")) == [13]


_SAVER = _HEAD + """\
dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2))
saver = None
if {test}:
    saver = dict(path=os.path.join("out", "ckpt.pt"))
for step in range(100):
    if saver is not None:
        torch.save(model.module.state_dict(), saver["path"] + "ckpt.pt")
"""


def test_a_writer_made_on_rank_zero_alone_guards_the_saves_under_its_test() -> None:
    assert _ddp006(check_source(_SAVER.format(test="dist.get_rank() == 0"), "t.py")) == []


def test_a_writer_made_on_every_rank_but_zero_guards_nothing() -> None:
    assert _ddp006(check_source(_SAVER.format(test="dist.get_rank() != 0"), "t.py")) == [12]


_LOCAL_INDEX = _HEAD + """\
dist.init_process_group("nccl")
{index} = {value}
model = DDP(torch.nn.Linear(2, 2))
final = os.path.join("out", "final_state{{}}.pth".format({index}))
torch.save(model.module.state_dict(), final)
"""


def test_a_path_numbered_by_the_local_rank_is_shared_across_nodes() -> None:
    source = _LOCAL_INDEX.format(index="local_rank", value='int(os.environ["LOCAL_RANK"])')
    assert _ddp006(check_source(source, "t.py")) == [9]


def test_a_path_numbered_by_the_global_rank_is_each_ranks_own() -> None:
    source = _LOCAL_INDEX.format(index="rank", value="dist.get_rank()")
    assert _ddp006(check_source(source, "t.py")) == []


def test_a_path_numbered_by_the_spawn_index_on_one_node_is_each_ranks_own() -> None:
    source = _HEAD + """\
import torch.multiprocessing as mp


def worker(gpu, world):
    dist.init_process_group("nccl", rank=gpu, world_size=world)
    model = DDP(torch.nn.Linear(2, 2).cuda(gpu), device_ids=[gpu])
    torch.save(model.module.state_dict(), os.path.join("out", f"final_state{gpu}.pth"))


if __name__ == "__main__":
    mp.spawn(worker, args=(8,), nprocs=8)
"""
    assert _ddp006(check_source(source, "t.py")) == []


_CHOSEN_PATH = _HEAD + """\
from transformers import AutoTokenizer

dist.init_process_group("nccl")
tokenizer = AutoTokenizer.from_pretrained("m")
output_dir = args_dir if (args_dir := os.environ.get("OUT")) else f"{{tokenizer.name_or_path}}-finetuned"
{guard}tokenizer.save_pretrained(output_dir)
"""


def test_a_path_chosen_between_two_by_a_test_is_a_path() -> None:
    assert _ddp006(check_source(_CHOSEN_PATH.format(guard=""), "t.py")) == [10]


def test_the_same_save_on_rank_zero_alone_is_quiet() -> None:
    source = _CHOSEN_PATH.format(guard="if dist.get_rank() == 0:\n    ")
    assert _ddp006(check_source(source, "t.py")) == []


def test_a_checkpointers_save_under_a_local_rank_guard_is_one_writer_per_node() -> None:
    """3D-Speaker's ``checkpointer = build('checkpointer', config)``, then ``if rank == 0:
    checkpointer.save_checkpoint(epoch=epoch)`` with ``rank`` the LOCAL_RANK: every node's first process writes the
    same checkpoint (a possible finding: what the object writes is not read); not the other branch of that guard,
    nor a save under the global rank."""
    source = _HEAD + """
rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2).cuda())
checkpointer = build("checkpointer", {})
for epoch in range(3):
    if rank == 0:
        checkpointer.save_checkpoint(epoch=epoch)
    else:
        checkpointer.save_checkpoint_skipped(epoch=epoch)
"""
    found = [f for f in check_source(source, "train.py") if f.code == "DDP006"]
    assert [(f.line, f.confidence) for f in found] == [(12, "possible")]
    assert "local rank is 0" in found[0].message
    global_rank = source.replace('rank = int(os.environ["LOCAL_RANK"])', 'rank = int(os.environ["RANK"])')
    assert _ddp006(check_source(global_rank, "train.py")) == []


_SELF_SAVE = _HEAD + """
class Task:
    def __init__(self, args):
        self.args = args
        self.model = DDP(torch.nn.Linear(2, 2).cuda())

    def train(self):
        for epoch in range(3):
            if self.args.local_rank <= 0:
                self.{method}("BEST")
        {last}

    def save(self, name):
        {body}


dist.init_process_group("nccl")
Task(None).train()
"""


_WRITES = 'torch.save(self.model.module.state_dict(), name + ".pth")'


@pytest.mark.parametrize(("method", "body", "last", "found"), [
    ("save", _WRITES, 'self.save("LAST")', [(14, "likely")]),
    ("save_best", _WRITES, 'self.save_best("LAST")', [(14, "likely")]),
    ("save", "print(name)", 'self.save("LAST")', []),  # the class's save writes nothing
    # called only under the guard: its own torch.save is the one writer per node reported, not the call too
    ("save", _WRITES, "pass", [(18, "likely")]),
    # the method's own save under the global rank (--fix's form, the PyTorch DDP series' _save_snapshot): one writer
    ("save", f"if dist.get_rank() == 0:\n            {_WRITES}", "pass", []),
    ("save", f"if not dist.is_initialized() or dist.get_rank() == 0:\n            {_WRITES}", "pass", []),
])
def test_a_classs_own_save_method_under_a_local_rank_guard_is_one_writer_per_node(method: str, body: str, last: str,
                                                                                  found: list) -> None:
    """CLIP-ViL's ``if args.local_rank <= 0: self.save("BEST")`` (and ``self.save("LAST")`` on every rank), where
    the class's ``save`` reaches a ``torch.save``: every node's first process writes BEST.pth."""
    source = _SELF_SAVE.format(method=method, body=body, last=last).replace("def save(", f"def {method}(")
    got = [(f.line, f.confidence) for f in check_source(source, "train.py") if f.code == "DDP006"
           and ("local rank is 0" in f.message or "local rank 0 of every node" in f.message)]
    assert got == found


_LOCAL_SIDES = _HEAD + """
local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2).cuda())
if local_rank {op} 0:
    print("saving")
else:
    torch.save(model.module.state_dict(), "model.pt")
"""


def test_a_save_in_the_other_side_of_a_local_rank_test_says_which_ranks_write() -> None:
    """``if local_rank == 0: ... else: torch.save(...)``: every rank but each node's first writes the same file (not
    "local rank 0 of every node writes"); ``if local_rank != 0: ... else:`` puts the save on each node's first."""
    others = [f for f in check_source(_LOCAL_SIDES.format(op="=="), "train.py") if f.code == "DDP006"]
    assert [f.line for f in others] == [12]
    assert "every rank but each node's first" in others[0].message and "local rank 0 of" not in others[0].message
    firsts = [f for f in check_source(_LOCAL_SIDES.format(op="!="), "train.py") if f.code == "DDP006"]
    assert [f.line for f in firsts] == [12]
    assert "local rank 0 of every node writes" in firsts[0].message


_NAMED_LOCAL_GUARD = _HEAD + """\
local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
is_main = {held}
model = DDP(torch.nn.Linear(2, 2).cuda())
for epoch in range(3):
    if is_main:
        torch.save(model.module.state_dict(), "model.pt")
"""


@pytest.mark.parametrize(("held", "found"), [
    ("True if local_rank == 0 else False", [11]),  # SIMPL's: each node's first process, one file
    ("local_rank == 0", [11]),
    ("True if dist.get_rank() == 0 else False", []),  # the global rank: one writer
])
def test_a_guard_named_main_holding_a_local_rank_test_is_one_writer_per_node(held: str, found: list[int]) -> None:
    """The guard's name says main (``is_main``) but what it holds is the local rank's test: every node's first
    process writes the same file; the name alone does not make it the global rank's."""
    assert _ddp006(check_source(_NAMED_LOCAL_GUARD.format(held=held), "train.py")) == found


_MASTER_NODE = _HEAD + """\
rank = int(os.environ["RANK"])
ngpus_per_node = torch.cuda.device_count()
dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(2, 2).cuda())
is_master_node = (not dist.is_initialized()) or (rank % {count} == 0)
for epoch in range(3):
    if is_master_node and epoch % 2 == 0:
        torch.save(model.module.state_dict(), "ckpt.pth")
"""


@pytest.mark.parametrize(("count", "per_node"), [
    ("ngpus_per_node", True),  # SFA3D's is_master_node: each node's first worker
    ("8", True),
    ("torch.cuda.device_count()", True),
    ("dist.get_world_size()", False),  # rank % world_size == 0: rank 0 alone
])
def test_a_rank_modulo_the_nodes_count_is_a_per_node_guard_through_a_name_and_an_and(count: str,
                                                                                      per_node: bool) -> None:
    found = [f for f in check_source(_MASTER_NODE.format(count=count), "train.py") if f.code == "DDP006"]
    assert [f.line for f in found] == ([12] if per_node else [])
    assert all("one shared file system" in f.evidence for f in found)


CONFIG_RANK_SPAWN = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main_worker(gpu, ngpus_per_node, cfg):
    cfg["GPU"] = gpu
    cfg["RANK"] = cfg["RANK"] * ngpus_per_node + gpu
    dist.init_process_group("nccl", init_method=cfg["DIST_URL"], world_size=cfg["WORLD_SIZE"], rank=cfg["RANK"])
    model = torch.nn.Linear(2, 2).cuda(gpu)
    for epoch in range(3):
        if cfg["RANK"] % ngpus_per_node == 0:
            torch.save(model.state_dict(), "backbone.pth")


if __name__ == "__main__":
    cfg = {"RANK": 0, "WORLD_SIZE": 1, "DIST_URL": "tcp://127.0.0.1:23456"}
    ngpus = torch.cuda.device_count()
    cfg["WORLD_SIZE"] = ngpus * cfg["WORLD_SIZE"]
    mp.spawn(main_worker, nprocs=ngpus, args=(ngpus, cfg))
"""


def test_a_config_keys_rank_modulo_the_nodes_gpus_is_every_nodes_first_process() -> None:
    """CurricularFace's ``cfg["RANK"] = cfg["RANK"] * ngpus_per_node + gpu`` spans nodes, so ``cfg["RANK"] %
    ngpus_per_node == 0`` holds on every node's first process: one writer per node, all writing one file."""
    [found] = [f for f in check_source(CONFIG_RANK_SPAWN, "train.py") if f.code == "DDP006"]
    assert found.line == 13 and "local rank 0 of every node" in found.evidence
