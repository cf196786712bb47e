"""Which frameworks a script is written with, read from small sources (orchestrator/doctor/frameworks.py): the
imports name each call's module, the literal layout arguments of Trainer/Fabric are kept, the rest is not judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor.frameworks import frameworks_of, read_frameworks
from orchestrator.spec.pysource import parse_source


def _read(source: str) -> list[tuple[str, str, list[dict[str, object]]]]:
    found = frameworks_of(parse_source(source, "t.py"), source.splitlines(), "t.py")
    return [(f.name, f.why, [layout.model_dump(exclude={"where"}) for layout in f.layouts]) for f in found]


DEFAULTS = {"devices": "auto", "num_nodes": 1, "strategy": "auto", "accelerator": "auto"}


@pytest.mark.parametrize("source", [
    "import lightning as L\nL.Trainer()\n", "import lightning.pytorch as pl\npl.Trainer()\n",
    "import pytorch_lightning as pl\npl.Trainer()\n", "from lightning import Trainer\nTrainer()\n",
    "from lightning.pytorch import Trainer as T\nT()\n", "import lightning\nlightning.pytorch.Trainer()\n"])
def test_every_spelling_of_lightnings_trainer(source: str) -> None:
    assert _read(source) == [("lightning", f"t.py:2: {source.splitlines()[1]}", [DEFAULTS])]


def test_literal_layouts_and_their_normal_form() -> None:
    source = ("from lightning.fabric import Fabric\nFabric(devices='0,1', num_nodes=2, strategy='ddp_spawn')\n"
              "Fabric(devices=[0, 1, 2], accelerator='cpu')\nFabric(devices=-1)\nFabric(devices='4')\n")
    [(name, why, layouts)] = _read(source)
    assert (name, why) == ("fabric", "t.py:2: Fabric(devices='0,1', num_nodes=2, strategy='ddp_spawn')")
    assert layouts == [{**DEFAULTS, "devices": 2, "num_nodes": 2, "strategy": "ddp_spawn"},
                       {**DEFAULTS, "devices": 3, "accelerator": "cpu"}, DEFAULTS, {**DEFAULTS, "devices": 4}]


@pytest.mark.parametrize(("call", "layout"), [
    ("L.Trainer(devices=n, num_nodes=2)", {**DEFAULTS, "devices": None, "num_nodes": 2}),
    ("L.Trainer(strategy=DDPStrategy(), devices=0)", {**DEFAULTS, "devices": None, "strategy": None}),
    ("L.Trainer(num_nodes=True)", {**DEFAULTS, "num_nodes": None}),
    ("L.Trainer(**cfg)", dict.fromkeys(DEFAULTS)), ("L.Trainer(cfg)", dict.fromkeys(DEFAULTS))])
def test_what_is_not_a_literal_is_not_judged(call: str, layout: dict[str, object]) -> None:
    assert _read(f"import lightning as L\n{call}\n")[0][2] == [layout]


def test_the_other_frameworks_in_the_order_they_show() -> None:
    source = ("import hydra\nfrom accelerate import Accelerator\nimport transformers\n"
              "from torch.distributed.elastic.multiprocessing.errors import record\n"
              "@record\n@hydra.main(config_path=None)\ndef main(cfg):\n    a = Accelerator()\n"
              "    transformers.Seq2SeqTrainer(model=None)\n")
    assert [(n, w) for n, w, _ in _read(source)] == [
        ("torchelastic", "t.py:5: @record"), ("hydra", "t.py:6: @hydra.main(config_path=None)"),
        ("accelerate", "t.py:8: a = Accelerator()"), ("hf-trainer", "t.py:9: transformers.Seq2SeqTrainer(model=None)")]


def test_names_that_only_look_alike_are_no_framework() -> None:
    assert _read("from mylib import Trainer, Accelerator\nTrainer(devices=4)\nAccelerator()\n") == []
    assert _read("def record(f):\n    return f\n@record\ndef main():\n    Trainer()\n") == []


def test_an_unreadable_script_has_none(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import lightning as L\nL.Trainer(\n", encoding="utf-8")
    assert read_frameworks(bad) == [] and read_frameworks(tmp_path / "missing.py") == []


@pytest.mark.parametrize(("source", "name"), [
    # TRL's trainers are transformers.Trainer subclasses
    ("from trl import SFTTrainer\nSFTTrainer(model)\n", "hf-trainer"),
    # pytorch-accelerated's Trainer runs on an Accelerator it makes (a project's subclass of it, set 38's Faster R-CNN)
    ("from pytorch_accelerated import Trainer\nclass FRCNNTrainer(Trainer):\n    pass\nFRCNNTrainer(model)\n",
     "accelerate"),
    # the project's own subclass of a framework's class
    ("import transformers\nclass MyTrainer(transformers.Trainer):\n    pass\nMyTrainer(model)\n", "hf-trainer"),
    # a Trainer made by its class method
    ("from pytorch_lightning.trainer import Trainer\nTrainer.from_argparse_args(opt)\n", "lightning"),
    # an Accelerator made by a helper the doctor cannot read, used by its methods
    ("from accelerate.utils import set_seed\nimport helpers\nacc = helpers.make(args)\nmodel = acc.prepare(model)\n"
     "acc.backward(loss)\n", "accelerate"),
    ("from accelerate.utils import set_seed\nacc = make()\nacc.wait_for_everyone()\n", "accelerate"),
])
def test_a_framework_shown_by_a_subclass_a_class_method_or_its_objects_methods(source: str, name: str) -> None:
    assert [f for f, _, _ in _read(source)] == [name]


def test_no_accelerate_from_method_names_alone() -> None:
    assert _read("import torch\nmodel = opt.prepare(model)\nengine.backward(loss)\n") == []


_HYDRA_APP = "import hydra\n{imports}\n@hydra.main(config_path='configs')\ndef main(config):\n    {body}\n"


def _hydra_app(tmp_path: Path, target: str, body: str, imports: str = "") -> Path:
    """A Hydra app at ``tmp_path/main.py`` whose ``configs/config.yaml`` builds its trainer from ``target``."""
    (tmp_path / "configs").mkdir(exist_ok=True)
    (tmp_path / "configs" / "config.yaml").write_text(f"trainer:\n  _target_: {target}\n  num_nodes: 1\n")
    script = tmp_path / "main.py"
    script.write_text(_HYDRA_APP.format(imports=imports, body=body))
    return script


def test_a_trainer_hydra_instantiates_from_a_config(tmp_path: Path) -> None:
    script = _hydra_app(tmp_path, "lightning.Trainer", "trainer = hydra.utils.instantiate(config.trainer)")
    assert {f.name: f.why for f in read_frameworks(script)}["lightning"] == (
        "configs/config.yaml:2: _target_: lightning.Trainer")
    script = _hydra_app(tmp_path, "lightning.Trainer", "pass")
    assert "lightning" not in {f.name for f in read_frameworks(script)}


def test_a_project_trainer_subclass_a_config_names_in_a_module_never_imported(tmp_path: Path) -> None:
    """ProFam's ``_target_: profam.utils.trainer.ProFamTrainer``: a ``lightning.Trainer`` subclass in a module the
    script does not import, found from the script's folder or one above it."""
    (tmp_path / "proj" / "utils").mkdir(parents=True)
    (tmp_path / "proj" / "utils" / "trainer.py").write_text(
        "from lightning import Trainer\nclass ProjTrainer(Trainer):\n    pass\nclass Helper:\n    pass\n")
    script = _hydra_app(tmp_path / "proj", "proj.utils.trainer.ProjTrainer",
                        "trainer = hydra.utils.instantiate(config.trainer)")
    assert {f.name: f.why for f in read_frameworks(script)}["lightning"] == (
        "configs/config.yaml:2: _target_: proj.utils.trainer.ProjTrainer")
    script = _hydra_app(tmp_path / "proj", "proj.utils.trainer.OtherTrainer",  # not a class of that module
                        "trainer = hydra.utils.instantiate(config.trainer)")
    assert "lightning" not in {f.name for f in read_frameworks(script)}


@pytest.mark.parametrize(("builder", "key"), [
    ("from iglovikov_helper_functions.config_parsing.utils import object_from_dict", "type"),
    ("from ldm.util import instantiate_from_config", "target")])
def test_a_trainer_another_builder_makes_from_a_config(tmp_path: Path, builder: str, key: str) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "run.yaml").write_text(f"model:\n  {key}: unet.UNet\ntrainer:\n  {key}: "
                                                   "pytorch_lightning.Trainer\n  gpus: 4\n")
    script = tmp_path / "train.py"
    build = builder.rsplit(" ", 1)[-1]
    script.write_text(f"import yaml\n{builder}\ncfg = yaml.safe_load(open('configs/run.yaml'))\n"
                      f"trainer = {build}(cfg['trainer'])\ntrainer.fit({build}(cfg['model']))\n")
    assert {f.name: f.why for f in read_frameworks(script)} == {
        "lightning": f"configs/run.yaml:4: {key}: pytorch_lightning.Trainer"}
    script.write_text("import yaml\ncfg = yaml.safe_load(open('configs/run.yaml'))\n")  # nothing builds it
    assert read_frameworks(script) == []


def test_a_project_trainer_built_on_lightnings_that_a_config_names_is_lightning(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "trainer.py").write_text("from lightning import Trainer\n\n\nclass RoutingTrainer(Trainer):\n"
                                                 "    pass\n")
    script = _hydra_app(tmp_path, "pkg.trainer.RoutingTrainer",
                        "trainer: RoutingTrainer = hydra.utils.instantiate(config.trainer)",
                        imports="from pkg.trainer import RoutingTrainer\n")
    assert {f.name: f.why for f in read_frameworks(script)}["lightning"] == (
        "configs/config.yaml:2: _target_: pkg.trainer.RoutingTrainer")


STRUCTURED = """from dataclasses import dataclass, field


@dataclass
class TrainerConf:
    _target_: str = "pytorch_lightning.trainer.Trainer"
    devices: int = 1


@dataclass
class Config:
    trainer: TrainerConf = field(default_factory=TrainerConf)
"""


@pytest.mark.parametrize(("builds", "shown"), [
    # the Trainer comes from a structured config (a dataclass in the project, stored in Hydra's ConfigStore)
    ("    trainer = hydra.utils.instantiate(config.trainer)\n    trainer.fit(None)\n", True),
    # the same config read for its values only: nothing is built from it
    ("    print(config.trainer.devices)\n", False),
])
def test_a_trainer_hydra_instantiates_from_a_structured_config(tmp_path: Path, builds: str, shown: bool) -> None:
    (tmp_path / "conf.py").write_text(STRUCTURED)
    script = tmp_path / "train.py"
    script.write_text("import hydra\nfrom hydra.core.config_store import ConfigStore\n\nfrom conf import Config\n\n"
                      "ConfigStore.instance().store(name='config', node=Config)\n\n\n"
                      "@hydra.main(config_path=None, config_name='config')\ndef main(config):\n" + builds)
    found = {f.name: f.why for f in read_frameworks(script)}
    assert found.get("lightning") == ('conf.py:6: _target_: str = "pytorch_lightning.trainer.Trainer"' if shown
                                      else None)


def _project(tmp_path: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return [f.name for f in read_frameworks(tmp_path / "train.py")]


def test_the_projects_own_trainer_class_in_another_module(tmp_path: Path) -> None:
    # class MyTrainer(transformers.Trainer) in pkg/trainers.py, a subclass of it in pkg/custom.py, called by the entry
    files = {"pkg/__init__.py": "",
             "pkg/trainers.py": "from transformers import Trainer\nclass MyTrainer(Trainer):\n    pass\n",
             "pkg/custom.py": "from .trainers import MyTrainer\nclass CustomTrainer(MyTrainer):\n    pass\n",
             "train.py": "from pkg.custom import CustomTrainer\n\ndef main():\n    CustomTrainer(model=None).train()\n"}
    assert _project(tmp_path, files) == ["hf-trainer"]


def test_a_project_class_not_built_on_a_framework_is_none(tmp_path: Path) -> None:
    files = {"trainers.py": "class Trainer:\n    pass\nclass MyTrainer(Trainer):\n    pass\n",
             "train.py": "from trainers import MyTrainer\nimport lightning\nMyTrainer()\n"}
    assert _project(tmp_path, files) == []


@pytest.mark.parametrize(("loop", "names"), [
    # an Accelerator asked only for its process index beside a Trainer: the Trainer runs on Accelerate itself
    ("device_map = {'': Accelerator().process_index}\n", ["hf-trainer"]),
    # an Accelerator that trains a model of its own beside it
    ("acc = Accelerator()\nmodel = acc.prepare(model)\n", ["accelerate", "hf-trainer"]),
])
def test_an_accelerator_beside_a_trainer(tmp_path: Path, loop: str, names: list[str]) -> None:
    source = ("from accelerate import Accelerator\nfrom transformers import Trainer\n"
              f"{loop}Trainer(model=model).train()\n")
    assert sorted(_project(tmp_path, {"train.py": source})) == names


@pytest.mark.parametrize(("config_path", "names"), [
    ("../configs", ["hydra", "lightning"]),  # the configs beside the script's folder, as @hydra.main names them
    (None, ["hydra"]),  # a folder no config_path names is not read
])
def test_a_trainer_from_the_configs_hydra_main_names(tmp_path: Path, config_path: str | None,
                                                    names: list[str]) -> None:
    (tmp_path / "configs" / "trainer").mkdir(parents=True)
    (tmp_path / "configs" / "trainer" / "default.yaml").write_text(
        "_target_: lightning.pytorch.trainer.Trainer\ndevices: 1\n")
    (tmp_path / "src").mkdir()
    script = tmp_path / "src" / "train.py"
    where = f"config_path={config_path!r}, " if config_path else ""
    script.write_text(f"import hydra\n\n@hydra.main({where}config_name='train.yaml')\ndef main(cfg):\n"
                      "    trainer = hydra.utils.instantiate(cfg.trainer)\n")
    found = {f.name: f.why for f in read_frameworks(script)}
    assert sorted(found) == names
    if "lightning" in found:
        assert found["lightning"] == "../configs/trainer/default.yaml:1: _target_: lightning.pytorch.trainer.Trainer"


@pytest.mark.parametrize(("config_path", "names"), [
    # a root the script computes, then a literal folder (MatterGen: str(MODELS_PROJECT_ROOT / "conf")), one folder up
    ('str(PROJECT_ROOT / "conf")', ["hydra", "lightning"]),
    ('os.path.join(PROJECT_ROOT, "conf")', ["hydra", "lightning"]),
    ("str(PROJECT_ROOT)", ["hydra"]),  # no literal part: nothing named, the folders above are not read
    ('str(PROJECT_ROOT / "missing")', ["hydra"]),  # no such folder from the script's or those above it
])
def test_a_trainer_from_a_config_folder_built_from_a_root(tmp_path: Path, config_path: str,
                                                           names: list[str]) -> None:
    (tmp_path / "pkg" / "conf" / "trainer").mkdir(parents=True)
    (tmp_path / "pkg" / "conf" / "trainer" / "default.yaml").write_text("_target_: pytorch_lightning.Trainer\n")
    (tmp_path / "pkg" / "scripts").mkdir()
    script = tmp_path / "pkg" / "scripts" / "run.py"
    script.write_text("import os\nimport hydra\nfrom pkg.globals import PROJECT_ROOT\n\n"
                      f"@hydra.main(config_path={config_path}, config_name='default')\ndef main(cfg):\n"
                      "    trainer = hydra.utils.instantiate(cfg.trainer)\n")
    found = {f.name: f.why for f in read_frameworks(script)}
    assert sorted(found) == names
    if "lightning" in found:
        assert found["lightning"] == "../conf/trainer/default.yaml:1: _target_: pytorch_lightning.Trainer"


_COPY = ("from transformers.trainer_callback import TrainerState\n"
         "from transformers.training_args import TrainingArguments\n\nclass Trainer:\n    pass\n")


@pytest.mark.parametrize(("trainer_module", "names"), [
    # a copy of transformers' Trainer in the project (its own trainer modules imported), subclassed and called
    (_COPY, ["hf-trainer"]),
    # a training loop of the project's own that uses a transformers model: not the framework's Trainer
    ("from transformers import AutoModel, get_scheduler\n\nclass Trainer:\n    pass\n", []),
])
def test_a_copy_of_the_frameworks_trainer_in_the_project(tmp_path: Path, trainer_module: str,
                                                        names: list[str]) -> None:
    files = {"trainer.py": trainer_module,
             "trainer_seq2seq.py": "from trainer import Trainer\nclass Seq2SeqTrainer(Trainer):\n    pass\n",
             "train.py": "from trainer_seq2seq import Seq2SeqTrainer\n\ndef main():\n    Seq2SeqTrainer().train()\n"}
    assert _project(tmp_path, files) == names
