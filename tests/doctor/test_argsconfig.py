"""The node count a script's arguments give a framework layout read from a config file (``argsconfig.py``): the
file its ``--config`` (or ``argv[1]``) names and an override decide a DDP023 across nodes once the arguments are
known (``orch submit JOB --nodes 2 -- --config configs/x.yaml``); a script that sets the count some other way, or
arguments that may set it, are left to the warning; a LightningCLI's files merge in order (``CLI_ARGS``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import TEST_CLUSTER

from orchestrator.cli import main
from orchestrator.doctor import Finding, check_file
from orchestrator.doctor.argsconfig import CLI_ARGS, node_count, parallel_options
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.findings import ArgsConfig

_NAMED = """
import argparse
from omegaconf import OmegaConf
import lightning.pytorch as pl
p = argparse.ArgumentParser()
p.add_argument("--config", "-c", {default})
args = p.parse_args()
cfg = OmegaConf.load(args.config)
{extra}
trainer = pl.Trainer(**cfg.trainer)
trainer.fit(object())
"""
_ONE = "trainer:\n  strategy: ddp\n  devices: 8\n"
_TWO = _ONE + "  num_nodes: 2\n"


def _found(folder: Path, script: str, configs: dict[str, str] | None = None) -> list[Finding]:
    for name, text in {"train.py": script, **(configs or {"configs/one.yaml": _ONE, "configs/two.yaml": _TWO})}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return [f for f in check_file(folder / "train.py") if f.code == "DDP023"]


def _severities(found: Finding, args: list[str] | None, nodes: int = 2) -> list[str]:
    return [f.severity for f in across_nodes([found], nodes, 8, args)]


def test_the_config_file_the_arguments_name_decides_the_node_count(tmp_path: Path) -> None:
    [found] = _found(tmp_path, _NAMED.format(default="required=True", extra=""))
    assert found.args_config == ArgsConfig(("--config", "-c"), ("trainer", "num_nodes"), missing=1, unnamed=None)
    one, two = (str(tmp_path / "configs" / name) for name in ("one.yaml", "two.yaml"))
    [refused] = across_nodes([found], 2, 8, ["--config", one])
    assert refused.severity == "error" and f"trainer.num_nodes left out of {one}: 1" in refused.message
    assert _severities(found, [f"-c={two}"]) == ["warning"]
    assert _severities(found, ["-c", one, "trainer.num_nodes=2"]) == ["warning"]  # an OmegaConf override
    assert _severities(found, ["-c", one, "--trainer.num_nodes", "2"]) == ["warning"]
    assert _severities(found, ["--config", one, "--num_nodes", "2"]) == ["warning"]  # may set it: not known
    assert _severities(found, []) == ["warning"]  # no file named: the script's own error, not a node count
    assert _severities(found, None) == ["warning"]  # orch doctor: the arguments are not known
    assert _severities(found, ["--config", one], nodes=1) == ["warning"]


def test_a_flags_default_file_decides_when_the_arguments_name_none(tmp_path: Path) -> None:
    [found] = _found(tmp_path, _NAMED.format(default='default="configs/one.yaml"', extra=""))
    assert _severities(found, ["--lr", "0.1"]) == ["error"]
    assert _severities(found, ["--config", str(tmp_path / "configs" / "two.yaml")]) == ["warning"]


def test_a_positional_config_file_is_read_from_the_first_argument(tmp_path: Path) -> None:
    [found] = _found(tmp_path, """
import sys
import yaml
import lightning.pytorch as pl
cfg = yaml.safe_load(open(sys.argv[1]))
trainer = pl.Trainer(**cfg["trainer"])
trainer.fit(object())
""")
    assert found.args_config is not None and found.args_config.options == ("argv[1]",)
    assert _severities(found, [str(tmp_path / "configs" / "one.yaml")]) == ["error"]
    assert _severities(found, [str(tmp_path / "configs" / "two.yaml")]) == ["warning"]


def test_a_count_read_straight_from_the_file_needs_the_key_there(tmp_path: Path) -> None:
    script = _NAMED.format(default="required=True", extra="").replace(
        "pl.Trainer(**cfg.trainer)", 'pl.Trainer(num_nodes=cfg.trainer.num_nodes, devices=8, strategy="ddp")')
    [found] = _found(tmp_path, script, {"configs/one.yaml": _ONE + "  num_nodes: 1\n", "configs/bare.yaml": _ONE})
    assert _severities(found, ["--config", str(tmp_path / "configs" / "one.yaml")]) == ["error"]
    assert _severities(found, ["--config", str(tmp_path / "configs" / "bare.yaml")]) == ["warning"]


def test_a_script_that_sets_the_count_itself_is_not_judged_by_the_file(tmp_path: Path) -> None:
    extra = "cfg.trainer.num_nodes = int(args.nodes) if args.nodes else cfg.trainer.num_nodes"
    found = _found(tmp_path, _NAMED.format(default="required=True", extra=extra))
    assert [f.args_config for f in found] == [None]
    assert _severities(found[0], ["--config", str(tmp_path / "configs" / "one.yaml")]) == ["warning"]


def test_a_cli_takes_the_flags_then_the_last_config_then_lightnings_default(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "train.yaml").write_text("trainer:\n  devices: 8\n", encoding="utf-8")
    (tmp_path / "configs" / "two.yaml").write_text("trainer:\n  num_nodes: 2\n", encoding="utf-8")
    script = tmp_path / "train.py"

    def count(*args: str) -> int | None:
        return node_count(CLI_ARGS, list(args), script)[0]

    assert count() == 1
    assert count("--config", "configs/train.yaml") == 1
    assert count("-c", "configs/two.yaml", "--trainer.max_epochs", "3") == 2
    assert count("--config=configs/two.yaml", "--config", "configs/train.yaml") == 2  # kept: train.yaml has none
    assert count("--trainer.num_nodes=4", "--config", "configs/two.yaml") == 2  # the later wins
    assert count("--config", "configs/two.yaml", "--trainer.num_nodes", "4") == 4
    assert count("--config", "configs/absent.yaml") is None
    assert count("--trainer.num_nodes", "${NNODES}") is None


def _submit(tmp_path: Path) -> list[str]:
    """``orch submit train.py --nodes 2 --gpus 2 --dry-run --`` on a test cluster whose jobs land in ``tmp_path``."""
    data = json.loads(json.dumps(TEST_CLUSTER))
    data.setdefault("launcher", {})["job_root"] = str(tmp_path / "jobs")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(data), encoding="utf-8")
    return ["submit", str(tmp_path / "train.py"), "--cluster", str(cluster), "--nodes", "2", "--gpus", "2",
            "--dry-run", "--"]

def test_submit_refuses_the_config_named_after_the_script_and_runs_the_override(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _found(tmp_path, _NAMED.format(default="required=True", extra=""))
    submit = _submit(tmp_path)
    assert main([*submit, "--config", "configs/one.yaml"]) == 0
    err = capsys.readouterr().err
    assert "DDP023" in err and "cannot work on 2 nodes" in err
    assert "trainer.num_nodes left out of configs/one.yaml" in err
    assert "orch submit would refuse this script" in err
    assert main([*submit, "--config", "configs/one.yaml", "trainer.num_nodes=2"]) == 0
    assert "would refuse" not in capsys.readouterr().err


_HYDRA = """
import hydra
import lightning.pytorch as pl
@hydra.main(version_base=None, config_path="configs", config_name="train")
def main(cfg):
    trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.fit(object())
main()
"""
_HYDRA_CONFIGS = {
    "configs/train.yaml": "defaults:\n  - _self_\n  - trainer: ddp\n  - experiment: null\nseed: 1\n",
    "configs/trainer/ddp.yaml": "_target_: lightning.pytorch.Trainer\nstrategy: ddp\ndevices: 8\nnum_nodes: 1\n",
    "configs/trainer/multi.yaml": "defaults:\n  - ddp\nnum_nodes: 2\n",
    "configs/experiment/pre.yaml": "# @package _global_\nseed: 2\n",
    "configs/experiment/big.yaml": "# @package _global_\ndefaults:\n  - override /trainer: multi\nseed: 3\n"}


def test_a_hydra_apps_command_line_composes_the_config_that_decides(tmp_path: Path) -> None:
    [found] = _found(tmp_path, _HYDRA, _HYDRA_CONFIGS)
    assert found.args_config is not None and found.args_config.hydra == ((tmp_path / "configs").resolve(), "train")
    assert found.args_config.options == () and found.args_config.keys == ("trainer", "num_nodes")
    [refused] = across_nodes([found], 2, 8, ["experiment=pre"])
    assert refused.severity == "error" and "trainer.num_nodes=1 in the Hydra config with experiment=pre" in (
        refused.message)
    assert _severities(found, []) == ["error"]  # the config composed with no override
    assert _severities(found, ["experiment=big", "hydra.run.dir=/jobs/j/hydra"]) == ["warning"]  # its trainer
    assert _severities(found, ["experiment=pre", "trainer.num_nodes=2"]) == ["warning"]  # the override wins
    assert _severities(found, ["experiment=pre", "trainer=multi"]) == ["warning"]  # a group chosen
    assert _severities(found, ["experiment=big", "trainer=ddp"]) == ["error"]  # the command line's group wins
    assert _severities(found, ["trainer=multi", "~trainer.num_nodes"]) == ["error"]  # Lightning's 1
    assert _severities(found, ["trainer.num_nodes=2,4", "-m"]) == ["warning"]  # a sweep: not read
    assert _severities(found, ["trainer=absent"]) == ["warning"]  # Hydra stops on its own
    assert _severities(found, ["experiment=pre"], nodes=1) == ["warning"]
    assert node_count(found.args_config, ["trainer.num_nodes=${oc.env:NNODES}"], tmp_path / "train.py")[0] is None


def test_submit_refuses_a_hydra_apps_one_node_trainer_chosen_on_its_command_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _found(tmp_path, _HYDRA, _HYDRA_CONFIGS)
    submit = _submit(tmp_path)
    assert main([*submit, "experiment=big", "trainer=ddp"]) == 0
    err = capsys.readouterr().err
    assert "DDP023" in err and "trainer.num_nodes=1 in the Hydra config with experiment=big trainer=ddp" in err
    assert "orch submit would refuse this script" in err
    assert main([*submit, "experiment=big"]) == 0
    assert "would refuse" not in capsys.readouterr().err


# the Lightning-Hydra template's way: a one-process default trainer, and trainer options (over it) to choose
_TRAINERS = {"gpu": "accelerator: gpu\ndevices: 1\n",
             "ddp": "accelerator: gpu\nstrategy: ddp\ndevices: 4\nnum_nodes: 1\n",
             "multi": "accelerator: gpu\ndevices: [0, 1]\nnum_nodes: 2\n"}
_CPU_DEFAULT = {"configs/train.yaml": "defaults:\n  - _self_\n  - trainer: default\nseed: 1\n",
                "configs/trainer/default.yaml": "_target_: lightning.pytorch.Trainer\naccelerator: cpu\n",
                **{f"configs/trainer/{name}.yaml": f"defaults:\n  - default\n{text}"
                   for name, text in _TRAINERS.items()},
                }


def test_a_hydra_apps_parallel_options_are_the_ones_that_run_several_processes(tmp_path: Path) -> None:
    [found] = _found(tmp_path, _HYDRA, _CPU_DEFAULT)
    assert found.args_config is not None
    assert parallel_options(found.args_config) == ["ddp", "multi"]  # not the one-process default, nor gpu
    assert parallel_options(ArgsConfig(("--config",), ("trainer", "num_nodes"))) == []  # not a Hydra app


def test_a_one_process_default_with_a_parallel_option_is_judged_by_the_option_chosen(tmp_path: Path) -> None:
    [found] = _found(tmp_path, _HYDRA, _CPU_DEFAULT)
    assert (found.confidence, found.severity) == ("possible", "warning")  # the default runs one process
    assert "trainer=ddp, trainer=multi" in found.message
    [refused] = across_nodes([found], 2, 4, ["trainer=ddp"])
    assert (refused.severity, refused.confidence) == ("error", "certain")
    assert "trainer.num_nodes=1 in the Hydra config with trainer=ddp" in refused.message
    assert _severities(found, []) == ["warning"]  # the default: one process, not a layout that stops at start-up
    assert _severities(found, ["trainer=gpu"]) == ["warning"]
    assert _severities(found, ["trainer=multi"]) == ["warning"]  # two nodes, as asked
    assert _severities(found, ["trainer=ddp", "trainer.num_nodes=2"]) == ["warning"]
    assert _severities(found, None) == ["warning"]


def test_a_one_process_default_without_parallel_options_has_no_finding(tmp_path: Path) -> None:
    configs = {name: text for name, text in _CPU_DEFAULT.items() if "ddp" not in name and "multi" not in name}
    assert _found(tmp_path, _HYDRA, configs) == []
