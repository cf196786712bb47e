"""source/hydraoverrides: a Hydra app's command line as Hydra reads it: group options, values set or deleted, the
config named instead, and what is not followed (a sweep, another config folder, an argument Hydra refuses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.source.hydraoverrides import DELETE, apply_values, read_overrides


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for group in ("trainer", "experiment"):
        (tmp_path / group).mkdir()
    return tmp_path


def test_a_key_with_a_folder_is_a_group_option_and_a_dotted_key_a_value(folder: Path) -> None:
    read = read_overrides(["experiment=pretraining", "+trainer=ddp", "trainer.devices=8", "++seed=3",
                           "~trainer.num_nodes", "model.name=gpt"], folder)
    assert read.choices == {"experiment": "pretraining", "trainer": "ddp"}
    assert read.values == [(("trainer", "devices"), 8), (("seed",), 3), (("trainer", "num_nodes"), DELETE),
                           (("model", "name"), "gpt")]
    assert read.name is None and read.unfollowed == ""


def test_null_drops_a_group_and_hydras_own_keys_leave_the_config_alone(folder: Path) -> None:
    read = read_overrides(["experiment=null", "hydra.run.dir=/jobs/x/hydra", "+hydra.job.name=r1"], folder)
    assert read.choices == {"experiment": None} and read.values == []


@pytest.mark.parametrize("args", [["--config-name", "train_big"], ["--config-name=train_big"], ["-cn", "train_big"]])
def test_the_config_named_on_the_command_line(folder: Path, args: list[str]) -> None:
    assert read_overrides([*args, "trainer=ddp"], folder).name == "train_big"


@pytest.mark.parametrize(("args", "unfollowed"), [
    (["--multirun", "trainer.devices=4"], "--multirun"), (["trainer.devices=4,8"], "trainer.devices=4,8"),
    (["--config-path", "/elsewhere"], "--config-path"), (["-cd=/extra", "x=1"], "-cd=/extra"),
    (["trainer"], "trainer")])
def test_what_the_reading_cannot_follow_is_named(folder: Path, args: list[str], unfollowed: str) -> None:
    assert read_overrides(args, folder).unfollowed == unfollowed


def test_a_flow_list_is_one_value_not_a_sweep(folder: Path) -> None:
    read = read_overrides(["trainer.devices=[0,1]", "--cfg", "job"], folder)
    assert read.values == [(("trainer", "devices"), [0, 1])] and read.unfollowed == ""


def test_values_are_set_and_deleted_in_order_in_the_composed_config() -> None:
    data: dict[str, object] = {"trainer": {"devices": 8, "num_nodes": 1}, "seed": 1}
    apply_values(data, [(("trainer", "num_nodes"), 2), (("trainer", "devices"), DELETE), (("new", "key"), "v"),
                        (("seed", "below"), 1)])  # seed is not a mapping: nothing set under it
    assert data == {"trainer": {"num_nodes": 2}, "seed": 1, "new": {"key": "v"}}
