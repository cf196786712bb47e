"""DDP023 (a framework layout that cannot follow the launcher): a Trainer/Fabric/detectron2 ``launch`` whose node
or device count is fixed (written in, left out, a flag's or a parameter's default), in a script meant to run on
several GPUs or nodes; silent on a layout that follows the launch and on a script with no distributed intent."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.frameworks import read_frameworks
from orchestrator.doctor.rules_layout import flag_owned, without_judged_layouts
from orchestrator.spec.framework import Framework, Layout


def layout(source: str) -> list[Finding]:
    return [f for f in check_source(source, "t.py") if f.code == "DDP023"]


def said(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.confidence) for f in layout(source)]


_FABRIC = "import lightning as L\n"
_PL = "import pytorch_lightning as pl\n"


@pytest.mark.parametrize(("source", "expected"), [
    # written in: the device count, and num_nodes left out (1)
    (_FABRIC + 'fabric = L.Fabric(devices=4, strategy="ddp")\nfabric.launch()\n', [(2, "certain")]),
    (_PL + 'trainer = pl.Trainer(gpus=1, sync_batchnorm=True)\nx = trainer.is_global_zero\n', [(2, "certain")]),
    # devices follow the node, num_nodes left out: stuck at one node
    (_FABRIC + 'fabric = L.Fabric(devices="auto", strategy="fsdp")\n', [(2, "certain")]),
    (_PL + 'trainer = pl.Trainer(devices=-1, num_nodes=1, strategy="ddp")\n', [(2, "certain")]),
], ids=["literal-devices", "literal-gpus", "nodes-left-out", "nodes-written"])
def test_a_layout_written_in_the_call(source: str, expected: list[tuple[int, str]]) -> None:
    assert said(source) == expected


def test_a_flags_default_is_likely_and_named() -> None:
    source = (_PL + "import argparse\np = argparse.ArgumentParser()\n"
              'p.add_argument("--gpus", type=int, default=1)\np.add_argument("--nodes", type=int, default=1)\n'
              "args = p.parse_args()\n"
              "trainer = pl.Trainer(devices=args.gpus, num_nodes=args.nodes)\n")
    [finding] = layout(source)
    assert (finding.line, finding.confidence, finding.severity) == (7, "likely", "warning")
    assert "--nodes defaults to 1" in finding.message and "--gpus defaults to 1" in finding.message


def test_lightnings_own_flags_through_from_argparse_args() -> None:
    source = (_PL + "from argparse import ArgumentParser\np = ArgumentParser()\np = pl.Trainer.add_argparse_args(p)\n"
              'p.add_argument("--lr", type=float, default=0.1)\nargs = p.parse_args()\n'
              "trainer = pl.Trainer.from_argparse_args(args)\n")
    assert said(source) == [(7, "likely")]


def test_a_cli_functions_parameter_default() -> None:
    source = (_FABRIC + "from jsonargparse import CLI\n"
                        "def setup(devices: int = 8, num_nodes: int = 1):\n"
                        '    fabric = L.Fabric(devices=devices, num_nodes=num_nodes, strategy="fsdp")\n'
                        "    fabric.launch()\n"
                        "CLI(setup)\n")
    [finding] = layout(source)
    assert (finding.line, finding.confidence) == (4, "likely")
    assert "setup's num_nodes defaults to 1" in finding.message


def test_detectron2_launch_with_its_parsers_defaults() -> None:
    source = ("from detectron2.engine import default_argument_parser, launch\n"
              "def main(args):\n    pass\n"
              "args = default_argument_parser().parse_args()\n"
              "launch(main, args.num_gpus, num_machines=args.num_machines, machine_rank=args.machine_rank,\n"
              "       dist_url=args.dist_url, args=(args,))\n")
    assert said(source) == [(5, "likely")]


@pytest.mark.parametrize("source", [
    # the layout follows the launch: every device, num_nodes from the environment or computed from it
    _FABRIC + 'import os\nfabric = L.Fabric(devices="auto", num_nodes=int(os.environ["SLURM_NNODES"]), '
              'strategy="ddp")\n',
    _PL + 'import os\nnodes = int(os.environ.get("WORLD_SIZE", 1)) // int(os.environ.get("LOCAL_WORLD_SIZE", 1))\n'
          'trainer = pl.Trainer(devices=-1, num_nodes=nodes, strategy="ddp")\n',
    # no distributed intent at all: a one-GPU script
    _PL + "trainer = pl.Trainer(gpus=1, max_epochs=3)\ntrainer.fit(model)\n",
    # arguments the reader cannot follow
    _PL + 'trainer = pl.Trainer(**cfg.trainer, strategy="ddp")\n',
    _PL + 'trainer = pl.Trainer(devices=cfg.devices, num_nodes=cfg.num_nodes, strategy="ddp")\n',
], ids=["env-nodes", "computed-nodes", "no-intent", "kwargs", "config-object"])
def test_silent_where_the_layout_follows_or_is_not_known(source: str) -> None:
    assert layout(source) == []


def test_an_error_across_nodes_only_for_a_certain_node_count() -> None:
    written = layout(_FABRIC + 'fabric = L.Fabric(devices=8, strategy="ddp")\n')
    flag = layout(_PL + "import argparse\np = argparse.ArgumentParser()\n"
                        'p.add_argument("--num_nodes", type=int, default=1)\nargs = p.parse_args()\n'
                        'trainer = pl.Trainer(devices="auto", num_nodes=args.num_nodes, strategy="ddp")\n')
    two = layout(_FABRIC + 'fabric = L.Fabric(devices=8, num_nodes=2, strategy="ddp")\n')
    assert [f.severity for f in across_nodes(written, 2, 8)] == ["error"]
    assert [f.severity for f in across_nodes(written, 1, 8)] == ["warning"]
    assert [f.severity for f in across_nodes(flag, 2, 8)] == ["warning"]  # the gate's flag warning says what to pass
    assert [f.severity for f in across_nodes(two, 2, 8)] == ["warning"]  # two nodes written, two asked


def test_ignored_on_the_calls_line() -> None:
    source = _FABRIC + 'fabric = L.Fabric(devices=4, strategy="ddp")  # orch: ignore[DDP023]\n'
    assert layout(source) == []


def test_fabric_with_no_layout_argument_is_left_to_its_launcher() -> None:
    # Fabric() takes devices and num_nodes from `fabric run --devices 8 --num-nodes 2`
    assert layout(_FABRIC + "fabric = L.Fabric()\nfabric.launch()\nx = fabric.all_gather(1)\n") == []


def test_once_per_file_at_the_first_call() -> None:
    source = (_PL + "import argparse\np = argparse.ArgumentParser()\n"
                    'p.add_argument("--num_nodes", type=int, default=1)\nargs = p.parse_args()\n'
                    "if pl.__version__[0] == '2':\n"
                    '    trainer = pl.Trainer(devices="auto", num_nodes=args.num_nodes, strategy="ddp")\n'
                    "else:\n    trainer = pl.Trainer.from_argparse_args(args)\n")
    assert said(source) == [(7, "likely")]


def test_the_gate_leaves_a_flags_default_to_its_flag_warning() -> None:
    flag = layout(_PL + "import argparse\np = argparse.ArgumentParser()\n"
                        'p.add_argument("--num_nodes", type=int, default=1)\nargs = p.parse_args()\n'
                        'trainer = pl.Trainer(devices="auto", num_nodes=args.num_nodes, strategy="ddp")\n')
    written = layout(_PL + 'trainer = pl.Trainer(devices="auto", strategy="ddp")\n')
    cli = layout(_FABRIC + 'def setup(num_nodes: int = 1):\n    L.Fabric(devices="auto", num_nodes=num_nodes, '
                           'strategy="ddp")\n')
    assert [flag_owned(f, "env") for f in (*flag, *written, *cli)] == [True, False, False]
    assert [flag_owned(f, "per-node") for f in flag] == [False]


def test_with_a_layout_asked_the_planners_judge_a_literal_layout(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(_FABRIC + 'import argparse\np = argparse.ArgumentParser()\n'
                                'p.add_argument("--devices", type=int, default=1)\nargs = p.parse_args()\n'
                                'fabric = L.Fabric(devices=args.devices, strategy="ddp")\n')
    found = [f for f in check_file(script) if f.code == "DDP023"]
    assert [f.line for f in found] == [6]
    # num_nodes left out: a literal 1 that spec.framework.check_layout accepts or refuses for the layout asked
    assert without_judged_layouts(found, read_frameworks(script)) == []
    other = Framework(name="fabric", why="x", layouts=[Layout(where="other.py:6: L.Fabric()")])
    assert without_judged_layouts(found, [other]) == found


def test_a_device_count_above_one_written_in_is_a_sign_of_several_gpus() -> None:
    assert said(_PL + "NUM_GPUS = 2\ntrainer = pl.Trainer(gpus=NUM_GPUS, sync_batchnorm=True)\n") == [(3, "certain")]
    assert said(_PL + "trainer = pl.Trainer(gpus=1, max_epochs=3)\n") == []  # one GPU, no other sign: not judged


_SPREAD = _PL + """import argparse
p = argparse.ArgumentParser()
p.add_argument("--num_nodes", type=int, default=1)
p.add_argument("--precision", type=str, default="bf16")
args = p.parse_args()
{kwargs}
trainer = pl.Trainer(**kwargs, strategy="ddp")
"""


@pytest.mark.parametrize(("kwargs", "expected"), [
    ("kwargs = vars(args)", [(8, "likely")]),
    ("names = ['num_nodes', 'precision']\nkwargs = {k: v for k, v in vars(args).items() if k in names}",
     [(9, "likely")]),
    ("kwargs = {k: v for k, v in vars(args).items() if k in ('precision',)}", []),  # num_nodes not passed
    ("kwargs = {k: v for k, v in vars(args).items() if k.startswith('p')}", []),  # which flags: not known
], ids=["all-flags", "listed-flags", "layout-not-listed", "unknown-filter"])
def test_a_trainer_given_the_flags_takes_their_layout_defaults(kwargs: str, expected: list[tuple[int, str]]) -> None:
    found = layout(_SPREAD.format(kwargs=kwargs))
    assert [(f.line, f.confidence) for f in found] == expected
    assert all("--num_nodes defaults to 1" in f.message for f in found)


_ARGPARSE = _PL + """import argparse
p = argparse.ArgumentParser({parents})
p.add_argument("--gpus", type=int, default=1)
args = {args}
trainer = pl.Trainer.from_argparse_args(args, gpus=args.gpus, accelerator="ddp")
"""


@pytest.mark.parametrize(("parents", "args", "expected"), [
    ("", "p.parse_args()", "certain"),  # the namespace has no num_nodes: Lightning's one node
    ("parents=[base]", "p.parse_args()", "likely"),  # a parent parser may declare --num_nodes: --gpus's default only
    ("", "get_args()", "likely"),  # parsed elsewhere: the node count is not known
], ids=["plain-parser", "parent-parser", "parsed-elsewhere"])
def test_from_argparse_args_on_a_parser_without_lightnings_flags(parents: str, args: str, expected: str) -> None:
    [found] = layout(_ARGPARSE.format(parents=parents, args=args))
    assert (found.line, found.confidence, "num_nodes=1" in found.message) == (6, expected, expected == "certain")
    assert [f.severity for f in across_nodes([found], 2, 8)] == ["error" if expected == "certain" else "warning"]
    # the namespace given a node count somewhere in the file: not known
    [found] = layout(_ARGPARSE.format(parents="", args="p.parse_args()") + "args.num_nodes = 2\n")
    assert found.confidence == "likely"


_SPREAD_DICT = _PL + """import sys
if len(sys.argv) > 1:
    gpu_args = dict(gpus=1, val_check_interval=250)
else:
    gpu_args = {{"gpus": -1, "accelerator": "ddp"{more}}}
{after}
trainer = pl.Trainer(max_epochs=3, **gpu_args)
x = trainer.is_global_zero
"""


@pytest.mark.parametrize(("more", "after", "expected"), [
    ("", "", [(8, "certain")]),  # no branch gives num_nodes: one node
    ("", 'gpu_args.pop("val_check_interval")', [(8, "certain")]),
    (', "num_nodes": 2', "", []),  # a branch gives it
    ("", 'gpu_args["num_nodes"] = 2', []),
    ("", "gpu_args.update(extra)", []),  # what update adds: not known
    ("", "gpu_args[key] = value", []),
], ids=["no-node-count", "popped", "in-a-branch", "stored", "updated", "stored-under-a-name"])
def test_a_dict_of_written_keys_spread_into_the_trainer(more: str, after: str,
                                                        expected: list[tuple[int, str]]) -> None:
    found = layout(_SPREAD_DICT.format(more=more, after=after))
    assert [(f.line, f.confidence) for f in found] == expected
    assert all("neither the call nor gpu_args gives it" in f.message for f in found)


def test_reported_at_the_files_first_call_by_line_not_by_depth() -> None:
    # the training Trainer sits deeper (under an if) than a later one-device Trainer for evaluation: the walk meets
    # the later one first, the file's first call is the training one
    source = (_PL + "from pytorch_lightning.strategies import DDPStrategy\n\n\ndef main(args):\n"
              "    if args.train:\n        trainer = pl.Trainer(gpus=args.gpus, strategy=DDPStrategy())\n"
              "        trainer.fit(None)\n    trainer = pl.Trainer(gpus=1)\n    trainer.test(None)\n")
    assert [line for line, _ in said(source)] == [7]


_TWO_TRAINERS = _PL + """import argparse
p = argparse.ArgumentParser()
p.add_argument("--gpus", type=int, default=1)
args = p.parse_args()
def test(model):
    trainer = pl.Trainer(gpus=args.gpus, limit_val_batches=10)
    trainer.test(model)
def train(model):
    trainer = pl.Trainer({training})
    trainer.fit(model)
"""


@pytest.mark.parametrize(("training", "lines"), [
    ("gpus=args.gpus, max_epochs=3", [10]),  # the Trainer that trains, not the test path's before it
    ("**get_train_params(args)", []),  # the training layout is not read: the test path's says nothing of it
])
def test_the_layout_is_the_one_of_the_trainer_that_trains(training: str, lines: list[int]) -> None:
    assert [f.line for f in layout(_TWO_TRAINERS.format(training=training))] == lines


def test_a_file_whose_only_trainer_tests_is_still_read() -> None:
    source = _PL + 'trainer = pl.Trainer(devices=4, strategy="ddp")\ntrainer.test(model)\n'
    assert said(source) == [(2, "certain")]
