"""source/hydraconfig: a Hydra app's config as it starts without overrides: the main file, its ``defaults:``
groups under their keys (a group file's own defaults read from its folder), each key with the file that set it."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.source.hydraconfig import compose, compose_choices, hydra_main, named_folder
from orchestrator.source.names import Module


def test_the_defaults_groups_are_composed_under_their_keys(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    (configs / "trainer").mkdir(parents=True)
    (configs / "train.yaml").write_text("defaults:\n  - _self_\n  - trainer: ddp\n  - logger: null\nseed: 1\n")
    (configs / "trainer" / "default.yaml").write_text("accelerator: cpu\ndevices: 1\n")
    (configs / "trainer" / "ddp.yaml").write_text("defaults:\n  - default\ndevices: 4\nnum_nodes: 1\n")
    composed = compose(configs, "train.yaml")
    assert composed is not None
    assert composed.data == {"seed": 1, "trainer": {"accelerator": "cpu", "devices": 4, "num_nodes": 1}}
    assert composed.files["trainer"] == configs / "trainer" / "ddp.yaml"
    assert compose(configs, "missing") is None


def test_the_decorated_function_names_its_config() -> None:
    module = Module(ast.parse("import hydra\n@hydra.main(version_base=None, config_path='../conf', "
                              "config_name='cfg')\ndef main(cfg):\n    pass\ndef other(cfg):\n    pass\n"))
    assert hydra_main(module, module.functions["main"]) == (Path("../conf"), "cfg")
    assert hydra_main(module, module.functions["other"]) is None


def test_a_built_config_folder_is_its_string_parts_and_a_missing_name_is_the_users() -> None:
    module = Module(ast.parse("import hydra, os\n@hydra.main(version_base=None, config_path=str(root / 'a/b' / 'conf'),"
                              " config_name='train.yaml')\ndef main(cfg):\n    pass\n"
                              "@hydra.main(config_path=os.path.join(os.path.dirname(__file__), '..', 'conf'))\n"
                              "def other(cfg):\n    pass\n"))
    assert hydra_main(module, module.functions["main"]) == (Path("a/b/conf"), "train.yaml")
    assert hydra_main(module, module.functions["other"]) == (Path("../conf"), "")


def test_the_folder_a_config_path_names_literal_or_built_from_a_root(tmp_path: Path) -> None:
    """``config_path="../conf"`` from the file's folder; ``str(ROOT / "conf")`` by its literal part, from the file's
    folder or one of the two above it; nothing for a root alone, a folder that is not there, or ``None``."""
    (tmp_path / "pkg" / "conf").mkdir(parents=True)
    (tmp_path / "pkg" / "scripts").mkdir()
    here = tmp_path / "pkg" / "scripts"

    def folder(argument: str) -> Path | None:
        call = ast.parse(f"hydra.main(config_path={argument})").body[0].value  # type: ignore[attr-defined]
        return named_folder(here, call, "config_path")

    assert folder('"../conf"') == tmp_path / "pkg" / "conf"
    assert folder('str(ROOT / "conf")') == tmp_path / "pkg" / "conf"
    assert folder('os.path.join(ROOT, "conf")') == tmp_path / "pkg" / "conf"
    assert folder("str(ROOT)") is None and folder('str(ROOT / "missing")') is None and folder("None") is None


def test_a_global_package_group_file_and_a_mapping_merged_key_by_key(tmp_path: Path) -> None:
    """A group file under ``# @package _global_`` (the Lightning-Hydra template's pipelines) gives the config its own
    keys and reads its ``/group: choice`` defaults from the config folder; a mapping over a mapping merges key by key
    (Hydra's merge), so the main file's ``trainer: {devices: 2}`` keeps the group's ``_target_``."""
    configs = tmp_path / "configs"
    for group in ("pipeline", "trainer"):
        (configs / group).mkdir(parents=True)
    (configs / "train.yaml").write_text("defaults:\n  - pipeline: lm\n  - _self_\ntrainer:\n  devices: 2\n")
    (configs / "pipeline" / "lm.yaml").write_text("# @package _global_\ndefaults:\n  - /trainer: default\nseed: 3\n")
    (configs / "trainer" / "default.yaml").write_text("_target_: lightning.Trainer\ndevices: 1\nnum_nodes: 1\n")
    composed = compose(configs, "train.yaml")
    assert composed is not None
    assert composed.data == {"seed": 3, "trainer": {"_target_": "lightning.Trainer", "devices": 2, "num_nodes": 1}}


def test_each_experiment_option_is_composed_over_the_main_config(tmp_path: Path) -> None:
    """``python train.py experiment=hg38/hg38`` (or ``+experiment=X``): each option of the ``experiment`` group, in
    its sub-folders too, over the main config; none where the folder has no such group."""
    configs = tmp_path / "configs"
    (configs / "experiment" / "hg38").mkdir(parents=True)
    (configs / "trainer").mkdir()
    (configs / "train.yaml").write_text("defaults:\n  - trainer: null\n  - experiment: ???\nseed: 1\n")
    (configs / "trainer" / "default.yaml").write_text("_target_: lightning.Trainer\ndevices: 1\n")
    (configs / "experiment" / "hg38" / "hg38.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /trainer: default\ntrainer:\n  devices: 8\n")
    (configs / "experiment" / "small.yaml").write_text("# @package _global_\ntrainer:\n  devices: 2\n")
    chosen = compose_choices(configs, "train.yaml")
    assert [c.data["trainer"] for c in chosen] == [{"_target_": "lightning.Trainer", "devices": 8}, {"devices": 2}]
    assert all(c.data["seed"] == 1 for c in chosen)
    assert compose_choices(configs / "trainer", "default.yaml") == []


def test_a_command_lines_group_options_win_over_every_defaults_list(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    for name, text in {
            "train.yaml": "defaults:\n  - _self_\n  - trainer: cpu\n  - experiment: null\nseed: 1\n",
            "trainer/default.yaml": "accelerator: cpu\n",
            "trainer/ddp.yaml": "defaults:\n  - default\ndevices: 4\nnum_nodes: 1\n",
            "trainer/big.yaml": "devices: 8\nnum_nodes: 4\n",
            "experiment/pre.yaml": "# @package _global_\ndefaults:\n  - override /trainer: ddp\nseed: 7\n"}.items():
        (configs / name).parent.mkdir(parents=True, exist_ok=True)
        (configs / name).write_text(text)
    chosen = compose(configs, "train", {"experiment": "pre"})
    assert chosen is not None and chosen.data == {
        "seed": 7, "trainer": {"accelerator": "cpu", "devices": 4, "num_nodes": 1}}
    assert chosen.files["trainer"] == configs / "trainer" / "ddp.yaml"
    over = compose(configs, "train", {"experiment": "pre", "trainer": "big"})  # the command line's trainer wins
    assert over is not None and over.data["trainer"] == {"devices": 8, "num_nodes": 4}
    appended = compose(configs, "train", {"trainer": "ddp", "logger": None})  # a group no list names, dropped
    assert appended is not None and appended.data["trainer"]["devices"] == 4
    assert compose(configs, "train", {"trainer": "absent"}) is None  # Hydra stops: no such option
