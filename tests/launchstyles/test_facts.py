"""The facts a launch style is decided from (orchestrator/launchstyles/facts.py, spawns.py, localrank.py): each
with its file and line, read from the script and the project modules it reaches, never through the doctor."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support import ROOT, TESTS

from orchestrator.launchstyles import detect, read
from orchestrator.launchstyles.spawns import Spawn

SCRIPTS = TESTS / "scripts"
PROJECTS = TESTS / "doctor" / "fixtures" / "projects"
WIKI = TESTS / "doctor" / "fixtures" / "seed002_wiki_mnist_distributed.py"


def test_a_spawn_no_launcher_check_guards_is_a_fact_with_its_line() -> None:
    script = SCRIPTS / "spawn_per_node.py"
    facts = read(script)
    assert facts.spawns == (Spawn(str(script), 55, "mp.spawn(nprocs=args.gpus)", facts.spawns[0].node),)
    assert (facts.local_rank, facts.slurm) == ((), None)


def test_a_guarded_spawn_is_no_fact(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text((SCRIPTS / "spawn_per_node.py").read_text(encoding="utf-8").replace(
        "    mp.spawn(train, nprocs=args.gpus, args=(args,))",
        "    if \"LOCAL_RANK\" in os.environ:\n        train(int(os.environ[\"LOCAL_RANK\"]), args)\n"
        "    else:\n        mp.spawn(train, nprocs=args.gpus, args=(args,))"), encoding="utf-8")
    assert "else:" in script.read_text(encoding="utf-8")
    assert read(script).spawns == ()


def test_a_spawn_in_a_project_module_names_that_file() -> None:
    facts = read(PROJECTS / "helper_spawn" / "main.py")
    assert [(Path(s.file).name, s.line, s.strategy) for s in facts.spawns] == [("launcher.py", 19, None)]


def test_the_legacy_flag_is_a_fact_with_its_spelling() -> None:
    facts = read(SCRIPTS / "local_rank_arg.py")
    assert [(d.line, d.flag_source, d.what) for d in facts.local_rank] == [(21, "'--local_rank'", "defaults to 0")]
    assert facts.flag == "--local_rank" and facts.spawns == ()


def test_slurm_rank_variables_read_and_torchrun_variables_not() -> None:
    facts = read(SCRIPTS / "slurm_native.py")
    assert facts.slurm == 'slurm_native.py:24: proc = int(os.environ["SLURM_PROCID"])'
    assert not facts.torchrun_vars
    assert read(SCRIPTS / "ddp_train.py").torchrun_vars


def test_a_frameworks_spawning_strategy_is_a_fact_but_not_a_per_node_script(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("from lightning.pytorch import Trainer\n\ntrainer = Trainer(strategy=\"ddp_spawn\", devices=2)\n"
                      "trainer.fit(None)\n", encoding="utf-8")
    facts = read(script)
    assert [(s.line, s.call, s.strategy) for s in facts.spawns] == [(3, "Trainer", "ddp_spawn")]
    assert detect(facts).style == "env"


def test_constant_master_addresses_are_facts() -> None:
    assert read(WIKI).masters[str(WIKI)] == {44: ("MASTER_ADDR", "10.57.23.164"), 45: ("MASTER_PORT", "8888")}


def test_an_unreadable_entry_has_no_facts(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("def (:\n", encoding="utf-8")
    facts = read(script)
    assert (facts.files, facts.spawns, facts.local_rank, facts.slurm) == ((), (), (), None)
    assert detect(facts).style == "env"


def test_deciding_a_style_imports_no_doctor() -> None:
    """The facts come from the reader (orchestrator.source), not from the doctor's rules: choosing a style loads no
    module of orchestrator.doctor at all."""
    script = str(SCRIPTS / "spawn_per_node.py")
    code = ("import sys, pathlib; from orchestrator import launchstyles; "
            f"print(launchstyles.choose('auto', pathlib.Path({script!r})).style); "
            "print(sorted(m for m in sys.modules if m.startswith('orchestrator.doctor')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.split("\n")[:2] == ["per-node", "[]"]


def test_a_local_rank_flag_declared_where_an_imported_config_module_runs_is_the_scripts(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "train_configs.py").write_text(
        "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', default=-1, "
        "type=int)\nargs = parser.parse_args()\n", encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text("import torch\n\n\ndef main(args):\n    torch.cuda.set_device(args.local_rank)\n\n\n"
                      "if __name__ == '__main__':\n    from configs.train_configs import *\n    main(args)\n",
                      encoding="utf-8")
    launch = detect(read(script))
    assert (launch.style, launch.why) == ("local-rank-arg", "configs/train_configs.py:3: parser.add_argument("
                                                            "'--local_rank', default=-1, type=int)")
    assert launch.flag == "--local_rank"  # the spelling the module declares, which its parser accepts
    # declared inside a function of the module (a parser another tool builds): importing it declares nothing
    (tmp_path / "configs" / "train_configs.py").write_text(
        "import argparse\n\n\ndef other_parser():\n    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--local_rank', default=-1, type=int)\n    return parser\n\n\nargs = None\n",
        encoding="utf-8")
    assert detect(read(script)).style == "env"


def test_the_flag_passed_is_the_spelling_a_helper_declares(tmp_path: Path) -> None:
    """A parser built in a helper the entry calls: the ranks get the spelling it declares (argparse stops a rank
    given ``--local-rank=0`` when only ``--local_rank`` is declared), the first where it declares both."""
    script = tmp_path / "train.py"
    script.write_text("import torch\n\nfrom opts import get_args\n\n\ndef main():\n    args = get_args()\n"
                      "    torch.cuda.set_device(args.local_rank)\n\n\nif __name__ == '__main__':\n    main()\n",
                      encoding="utf-8")
    for declared, passed in ((["'--local_rank'"], "--local_rank"), (["'--local-rank'"], "--local-rank"),
                             (["'--local_rank'", "'--local-rank'"], "--local_rank"),
                             (["'--local-rank'", "'--local_rank'"], "--local-rank")):
        (tmp_path / "opts.py").write_text(
            "import argparse\n\n\ndef get_args():\n    parser = argparse.ArgumentParser()\n"
            f"    parser.add_argument({', '.join(declared)}, type=int, default=0)\n    return parser.parse_args()\n",
            encoding="utf-8")
        launch = detect(read(script))
        assert (launch.style, launch.flag) == ("local-rank-arg", passed), declared


def test_a_flag_declared_by_the_base_class_a_super_call_reaches(tmp_path: Path) -> None:
    """As in GeoTransformer: the entry's trainer subclasses the project's base trainer, whose ``__init__`` (reached
    through ``super().__init__``) declares ``--local_rank`` and binds the device from it."""
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "engine" / "base_trainer.py").write_text(
        "import argparse\n\nimport torch\n\n\nclass BaseTrainer:\n    def __init__(self, cfg):\n"
        "        parser = argparse.ArgumentParser()\n"
        "        parser.add_argument('--local_rank', type=int, default=-1)\n        self.args = parser.parse_args()\n"
        "        torch.cuda.set_device(self.args.local_rank)\n",
        encoding="utf-8")
    script = tmp_path / "trainval.py"
    script.write_text("from engine.base_trainer import BaseTrainer\n\n\nclass Trainer(BaseTrainer):\n"
                      "    def __init__(self, cfg):\n        super().__init__(cfg)\n\n\n"
                      "if __name__ == '__main__':\n    Trainer({})\n", encoding="utf-8")
    launch = detect(read(script))
    assert (launch.style, launch.flag) == ("local-rank-arg", "--local_rank")
    assert launch.why.startswith("engine/base_trainer.py:9: parser.add_argument('--local_rank'")


def test_a_layout_sized_from_slurms_tasks_per_node_is_written_for_slurm(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    reading = "devices=int(os.environ.get('SLURM_NTASKS_PER_NODE', 1))"
    script.write_text(f"import os\nimport lightning as L\n\ntrainer = L.Trainer(strategy='ddp', {reading},\n"
                      "                    num_nodes=int(os.environ.get('SLURM_NNODES', 1)))\n", encoding="utf-8")
    launch = detect(read(script))
    assert (launch.style, launch.why) == ("slurm", f"train.py:4: trainer = L.Trainer(strategy='ddp', {reading},")
    # the node count alone is any Slurm job's: the devices from the GPUs, the script is torchrun's
    script.write_text(script.read_text().replace(reading, "devices=8"), encoding="utf-8")
    assert detect(read(script)).style == "env"


def test_a_local_rank_flag_whose_value_a_module_of_the_package_reads_is_the_scripts(tmp_path: Path) -> None:
    """As in Pythia (MMF): the parser is built in the package, the trainer that reads the value is imported by name
    from a registry, so no call of the script reaches it; a module of the package that reads ``LOCAL_RANK`` from the
    environment instead makes the script torchrun's."""
    package = tmp_path / "pkg"
    (package / "trainers").mkdir(parents=True)
    (package / "flags.py").write_text(
        "import argparse\n\n\nclass Flags:\n    def get_parser(self):\n        parser = argparse.ArgumentParser()\n"
        "        parser.add_argument('--local_rank', type=int, default=None)\n        return parser\n\n\n"
        "flags = Flags()\n", encoding="utf-8")
    trainer = package / "trainers" / "base.py"
    trainer.write_text("import torch\n\n\nclass Trainer:\n    def __init__(self, config):\n"
                       "        self.local_rank = config.local_rank\n        torch.cuda.set_device(self.local_rank)\n",
                       encoding="utf-8")
    (tmp_path / "tools").mkdir()
    script = tmp_path / "tools" / "run.py"
    script.write_text("import importlib\n\nfrom pkg.flags import flags\n\n\ndef run():\n"
                      "    args = flags.get_parser().parse_args()\n"
                      "    trainer = importlib.import_module('pkg.trainers.' + 'base').Trainer(args)\n\n\n"
                      "if __name__ == '__main__':\n    run()\n", encoding="utf-8")
    launch = detect(read(script))
    assert (launch.style, launch.why) == ("local-rank-arg", "flags.py:7: parser.add_argument('--local_rank', "
                                                            "type=int, default=None)")
    trainer.write_text(trainer.read_text(encoding="utf-8").replace(
        "config.local_rank", "int(os.environ['LOCAL_RANK'])").replace("import torch", "import os\nimport torch"),
        encoding="utf-8")
    assert detect(read(script)).style == "env"


_DIST_UTILS = '''import os


def get_distrib_config():
    if "SLURM_PROCID" not in os.environ:
        return False, 1, 0, 0
    return True, int(os.environ["SLURM_NTASKS"]), int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_LOCALID"])


def local_rank():
    return int(os.environ.get("LOCAL_RANK", 0))
'''

_ENTRY = '''import torch.distributed as dist

from dist_utils import local_rank

# is_distributed, world_size, rank, local = get_distrib_config()
{call}dist.init_process_group("nccl")
print(local_rank())
'''


def test_slurm_read_only_in_a_project_function_nothing_calls_is_no_fact(tmp_path: Path) -> None:
    """The Well's ``get_distrib_config``, whose one call is commented out: its Slurm variables are never read; the
    project module's other function, which the entry calls, still counts."""
    (tmp_path / "dist_utils.py").write_text(_DIST_UTILS, encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(_ENTRY.format(call=""), encoding="utf-8")
    facts = read(script)
    assert facts.slurm is None and facts.torchrun_vars
    script.write_text(_ENTRY.format(call="from dist_utils import get_distrib_config\nget_distrib_config()\n"),
                      encoding="utf-8")
    assert read(script).slurm is not None  # called: read


_ABSL = '''import torch
import torch.distributed as dist
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("local_rank", {default}, "local rank for distributed training.")


def main(argv):
    torch.cuda.set_device(FLAGS.local_rank)
    dist.init_process_group("nccl")


if __name__ == "__main__":
    app.run(main)
'''


def test_an_absl_local_rank_flag_is_the_legacy_flag(tmp_path: Path) -> None:
    """KE-T5's ``flags.DEFINE_integer("local_rank", 0, ...)``: absl parses the ``--local_rank=N`` the old launcher
    (and orch's local-rank-arg style) passes; the default is its second argument."""
    script = tmp_path / "train.py"
    script.write_text(_ABSL.format(default="0"), encoding="utf-8")
    facts = read(script)
    assert [(d.line, d.what) for d in facts.local_rank] == [(6, "defaults to 0")]
    assert facts.flag == "--local_rank" and detect(facts).style == "local-rank-arg"
