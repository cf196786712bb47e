"""source/configfiles: the config file a script's value comes from: a literal path from the script's folder or
above it, else the project's files that hold the keys read (one, or several that agree; a section must hold one of
the keys asked), from the script's folder or, when none is there, a folder above it."""

from __future__ import annotations

from pathlib import Path

from orchestrator.source.configfiles import lookup, project_config

_LAYOUT = frozenset({"devices", "num_nodes", "gpus"})


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder / next(iter(files))


def test_a_literal_path_is_found_from_a_folder_above_the_script(tmp_path: Path) -> None:
    script = write(tmp_path, {"tools/train.py": "", "cfg.json": '{"trainer": {"num_nodes": 1}}'})
    found = lookup(script, ["trainer", "num_nodes"], "cfg.json")
    assert found is not None and (found.value, found.by_default, found.agreed) == (1, True, True)
    assert lookup(script, ["trainer", "devices"], "cfg.json") is None


def test_the_project_config_is_looked_for_at_the_root_above_the_script_only_when_none_is_beside_it(
        tmp_path: Path) -> None:
    script = write(tmp_path, {"src/pkg/pretrain/train.py": "", "configs/pretrain.yaml": "trainer:\n  num_nodes: 1\n",
                              "configs/data.yaml": "trainer:\n  max_epochs: 3\n"})
    assert project_config(script, ["trainer"], _LAYOUT, above=3) is None  # no project root marked above
    write(tmp_path, {"LICENSE": "MIT"})
    found = project_config(script, ["trainer"], _LAYOUT, above=3)
    assert found is not None and (found.value, found.file.name, found.line) == ({"num_nodes": 1}, "pretrain.yaml", 1)
    assert project_config(script, ["trainer"], _LAYOUT) is None  # not looked for above: none beside the script
    write(tmp_path, {"src/pkg/pretrain/local.yaml": "trainer:\n  devices: -1\n"})
    beside = project_config(script, ["trainer"], _LAYOUT, above=3)
    assert beside is not None and beside.value == {"devices": -1}


def test_a_hydra_folder_the_reader_cannot_spell_is_looked_for_under_the_usual_names(tmp_path: Path) -> None:
    # @hydra.main(config_path=str(constants.HYDRA_CONFIG_PATH), config_name="train"): no string to read the folder by
    (tmp_path / "pkg" / "config" / "trainer").mkdir(parents=True)
    (tmp_path / "pkg" / "config" / "train.yaml").write_text("defaults:\n  - trainer: gpu\nseed: 1\n")
    (tmp_path / "pkg" / "config" / "trainer" / "gpu.yaml").write_text("accelerator: gpu\ndevices: 1\n")
    found = lookup(tmp_path / "pkg" / "train.py", ["trainer", "devices"], hydra=(Path("."), "train"))
    assert found is not None and found.value == 1 and found.file.name == "gpu.yaml"
    assert lookup(tmp_path / "pkg" / "train.py", ["trainer", "devices"], hydra=(Path("elsewhere"), "train")) is None


def test_a_hydra_section_left_to_the_experiment_picked_is_read_from_each_option(tmp_path: Path) -> None:
    """A Hydra app whose main config leaves ``trainer`` null until ``experiment=X`` picks it (OnePose's
    ``+experiment=train_GATsSPG``): the options' values, agreed when every option gives the same, never the config
    run with no argument; an option that gives an instantiable section (``_target_``) is the one shown."""
    write(tmp_path, {"train.py": "", "configs/config.yaml": "defaults:\n  - trainer: null\nseed: 1\n",
                     "configs/experiment/a.yaml": "# @package _global_\ntrainer:\n  devices: 1\n",
                     "configs/experiment/b.yaml": "# @package _global_\ntrainer:\n  _target_: lightning.Trainer\n"
                                                  "  devices: 1\n"})
    found = lookup(tmp_path / "train.py", ["trainer"], hydra=(Path("configs"), "config"))
    assert found is not None and found.value == {"_target_": "lightning.Trainer", "devices": 1}
    assert (found.file.name, found.by_default, found.agreed) == ("b.yaml", False, False)
    (tmp_path / "configs/experiment/b.yaml").unlink()
    found = lookup(tmp_path / "train.py", ["trainer", "devices"], hydra=(Path("configs"), "config"))
    assert found is not None and (found.value, found.by_default, found.agreed) == (1, False, True)
    (tmp_path / "configs/config.yaml").write_text("defaults:\n  - trainer: null\ntrainer:\n  devices: 4\n")
    found = lookup(tmp_path / "train.py", ["trainer", "devices"], hydra=(Path("configs"), "config"))
    assert found is not None and (found.value, found.by_default) == (4, True)
