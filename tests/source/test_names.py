"""The module reader's calls of the file's own functions: ``f(...)``, ``self.f(...)``, and a method of an instance of
a class of the file (``saver = Saver(); saver.save(...)``), so that a guard around the call guards the method."""

from __future__ import annotations

import ast

from orchestrator.doctor import check_source
from orchestrator.source.names import Module

SAVER = """\
import os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


class Saver:
    def save(self, model):
        torch.save(model.state_dict(), "ckpt.pt")


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    rank = dist.get_rank()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
    saver = Saver()
    data = list(range(10))
    sampler = DistributedSampler(data)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for batch in DataLoader(data, sampler=sampler):
            model(batch).sum().backward()
{save}
"""


def call_of(module: Module, text: str) -> ast.Call:
    return next(n for n in module.nodes if isinstance(n, ast.Call) and ast.unparse(n.func) == text)


def test_a_method_of_an_instance_of_a_class_of_the_file_is_that_method() -> None:
    module = Module(ast.parse(SAVER.format(save="        saver.save(model.module)")))
    method = module.local_function(call_of(module, "saver.save"))
    assert method is not None and method.lineno == 8


def test_an_instance_of_an_imported_class_is_not_followed() -> None:
    text = "from checkpoints import Saver\n" + SAVER.format(save="        saver.save(model.module)").replace(
        "class Saver:", "class Other:")
    module = Module(ast.parse(text))
    assert module.local_function(call_of(module, "saver.save")) is None


def test_a_save_in_a_method_called_under_a_rank_test_is_guarded() -> None:
    guarded = SAVER.format(save="        if rank == 0:\n            saver.save(model.module)")
    every_rank = SAVER.format(save="        saver.save(model.module)")
    assert [f.code for f in check_source(guarded, "train.py") if f.code == "DDP006"] == []
    assert [f.line for f in check_source(every_rank, "train.py") if f.code == "DDP006"] == [9]


def test_a_bare_call_is_the_modules_function_before_a_method_of_the_same_name() -> None:
    text = ("class Trainer:\n    def save_model(self, out):\n        pass\n\n\n"
            "def save_model(model, out):\n    pass\n\n\nsave_model(None, 'out')\n")
    module = Module(ast.parse(text))
    function = module.local_function(call_of(module, "save_model"))
    assert function is not None and function.lineno == 6


def test_the_calls_of_a_function_are_indexed_again_when_a_name_becomes_an_import() -> None:
    module = Module(ast.parse("def f(a):\n    pass\n\nf(1)\nf(a=2)\nprint(3)\n"))
    function = module.top_functions["f"]
    assert [ast.unparse(c) for c in module.calls_of(function)] == ["f(1)", "f(a=2)"]
    assert [ast.unparse(v) for v in module.argument_for(function, "a")] == ["1", "2"]
    module.aliases["f"] = "pkg.f"  # as a project's relative import adds it after the module was read
    assert module.calls_of(function) == [] and module.argument_for(function, "a") == []


def test_the_calls_to_a_qualified_name_follow_the_aliases() -> None:
    module = Module(ast.parse("import torch.multiprocessing as mp\n\nmp.spawn(run, args=(1,))\nmp.spawn(run)\n"))
    spawn = frozenset({"torch.multiprocessing.spawn"})
    assert [ast.unparse(c) for c in module.calls_to(spawn)] == ["mp.spawn(run, args=(1,))", "mp.spawn(run)"]
    module.aliases["mp"] = "multiprocessing"
    assert module.calls_to(spawn) == []


def test_the_assignments_of_a_target_are_each_statement_once_in_order() -> None:
    module = Module(ast.parse("x = 1\nself.ckpt = y = None\nx = x = 2\n"))
    assert [n.lineno for n in module.assignments("x")] == [1, 3]
    assert [n.lineno for n in module.assignments("self.ckpt")] == [2]
    assert module.assignments("z") == []


def test_a_super_method_is_the_imported_bases() -> None:
    """``super().__init__`` in a class whose first base is imported names the base's method (the project's reader
    follows it there, as GeoTransformer's trainers reach the parser their base class builds); a base of the file, a
    class with no base or ``super`` outside a class name nothing."""
    tree = ast.parse("from engine.base_trainer import BaseTrainer\nimport engine\n\n\n"
                     "class Trainer(BaseTrainer):\n    def __init__(self, cfg):\n        super().__init__(cfg)\n\n\n"
                     "class Other(engine.Base, object):\n    def run(self):\n        return super().run()\n\n\n"
                     "class Local:\n    pass\n\n\nclass Child(Local):\n    def go(self):\n        super().go()\n\n\n"
                     "def free():\n    super().x()\n")
    module = Module(tree)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    assert {ast.unparse(c): module.qualname(c.func) for c in calls} == {
        "super().__init__(cfg)": "engine.base_trainer.BaseTrainer.__init__", "super().run()": "engine.Base.run",
        "super().go()": None, "super().x()": None}


def test_a_bare_name_is_the_modules_function_before_a_method_of_the_same_name() -> None:
    module = Module(ast.parse("class Model:\n    def train(self):\n        pass\n\n\ndef train(gpu):\n    pass\n"))
    function = module.named_function("train")
    assert function is not None and function.lineno == 6
    assert Module(ast.parse("class Model:\n    def train(self):\n        pass\n")).named_function("train") is not None


def test_a_function_whose_name_is_also_a_variable_elsewhere_is_not_passed_around() -> None:
    text = "def train(cfg):\n    train = [cfg]\n    print(train)\n\n\ntrain(1)\n"
    module = Module(ast.parse(text))
    assert not module.spawned(module.functions["train"])
    spawning = Module(ast.parse(text + "import torch.multiprocessing as mp\nmp.spawn(train, nprocs=2)\n"))
    assert spawning.spawned(spawning.functions["train"])


def test_a_call_of_a_class_of_the_file_runs_its_init() -> None:
    text = ("class Trainer:\n    def __init__(self, cfg):\n        self.cfg = cfg\n\n\nclass Plain:\n    pass\n\n\n"
            "Trainer(1)\nPlain()\n")
    module = Module(ast.parse(text))
    function = module.constructor(call_of(module, "Trainer"))
    assert function is not None and (function.name, function.lineno) == ("__init__", 2)
    assert module.constructor(call_of(module, "Plain")) is None
    assert module.local_function(call_of(module, "Trainer")) is None  # its value is the instance, not a return


def test_held_is_the_value_in_scope_else_every_value_assigned_in_the_file() -> None:
    module = Module(ast.parse("def a(args):\n    args.rank = 3\n    rank = 1\n    return rank\n\n"
                              "def b(args):\n    return args.rank\n"))
    rank, attribute = (next(n for n in module.nodes if isinstance(n, ast.Return) and n.lineno == line).value
                       for line in (4, 7))
    assert rank is not None and attribute is not None
    assert [ast.unparse(v) for v in module.held("rank", rank)] == ["1"]
    assert [ast.unparse(v) for v in module.held("args.rank", attribute)] == ["3"]  # assigned in another function
    assert module.held("args.rank", attribute, anywhere=False) == []


def test_each_name_of_a_tuple_target_holds_its_own_element() -> None:
    module = Module(ast.parse("import os\nrank, local = int(os.environ['RANK']), int(os.environ['LOCAL_RANK'])\n"
                              "a, *rest = 1, 2, 3\nx, y = pair()\nuse(rank)\n"))
    use = call_of(module, "use")
    assert ast.unparse(module.resolve("rank", use)[1] or ast.Constant(None)) == "int(os.environ['RANK'])"
    assert ast.unparse(module.resolve("local", use)[1] or ast.Constant(None)) == "int(os.environ['LOCAL_RANK'])"
    assert [module.resolve(name, use) for name in ("a", "x", "y")] == [(True, None)] * 3


GLOBAL_DEVICE = """\
import os
import torch
import torch.distributed as dist

rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("nccl", rank=rank, world_size=world_size)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).to(f"cuda:{rank}"), device_ids=[rank])
"""


def test_a_rank_unpacked_from_a_tuple_is_read_as_the_rank_it_holds() -> None:
    assert "DDP010" in {f.code for f in check_source(GLOBAL_DEVICE)}
