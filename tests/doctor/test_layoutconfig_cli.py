"""A LightningCLI's node count is the one its command line gives (``argsconfig.CLI_ARGS``): a
``--trainer.num_nodes`` passed, else the last ``--config`` file's ``trainer.num_nodes``, else Lightning's 1. In front
of a launch across nodes (feasibility.py) that count refuses or lets through the CLI's DDP023; ``orch doctor``, which
knows no arguments, keeps the warning; a CLI with default config files of its own is not judged
so. A CLI (the file's own subclass too) whose own defaults set no layout runs Lightning's one node unless its arguments
say otherwise: a warning, refused across nodes only where the arguments give another count (a flag's default); so does
one whose ``trainer_defaults`` alone set it, with their values."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor import Finding, check_file
from orchestrator.doctor.argsconfig import CLI_ARGS
from orchestrator.doctor.feasibility import across_nodes

CLI = """
from pytorch_lightning.cli import LightningCLI
if __name__ == "__main__":
    cli = LightningCLI({arguments})
    cli.trainer.fit(model=cli.model, datamodule=cli.datamodule)
"""
CONFIG = "trainer:\n  strategy: ddp\n  devices: 8\n"


def _found(folder: Path, arguments: str = "run=False") -> list[Finding]:
    (folder / "configs").mkdir(parents=True)
    (folder / "configs" / "train.yaml").write_text(CONFIG, encoding="utf-8")
    (folder / "configs" / "two.yaml").write_text(CONFIG + "  num_nodes: 2\n", encoding="utf-8")
    (folder / "train.py").write_text(CLI.format(arguments=arguments), encoding="utf-8")
    return [f for f in check_file(folder / "train.py") if f.code == "DDP023"]


def test_a_launch_across_nodes_is_refused_unless_the_arguments_give_its_node_count(tmp_path: Path) -> None:
    [found] = _found(tmp_path)
    assert found.args_config == CLI_ARGS
    assert [f.severity for f in across_nodes([found], 2, 8, [])] == ["error"]
    assert [f.severity for f in across_nodes([found], 2, 8, ["--config", str(tmp_path / "configs/train.yaml")])] == [
        "error"]
    assert [f.severity for f in across_nodes([found], 2, 8, ["--config", str(tmp_path / "configs/two.yaml")])] == [
        "warning"]
    assert [f.severity for f in across_nodes([found], 2, 8, ["--trainer.num_nodes=2"])] == ["warning"]
    assert [f.severity for f in across_nodes([found], 1, 8, [])] == ["warning"]
    assert [f.severity for f in across_nodes([found], 2, 8)] == ["warning"]  # orch doctor: no arguments known


def test_a_cli_with_default_config_files_is_not_judged_by_its_arguments(tmp_path: Path) -> None:
    arguments = 'run=False, parser_kwargs={"default_config_files": ["configs/two.yaml"]}'
    assert all(f.args_config is None for f in _found(tmp_path / "files", arguments))
    omegaconf = _found(tmp_path / "omegaconf", 'parser_kwargs={"parser_mode": "omegaconf"}')
    assert omegaconf and all(f.args_config == CLI_ARGS for f in omegaconf)


OWN_CLI = """
from lightning.pytorch.cli import LightningCLI


class MyLightningCLI(LightningCLI):
    def add_arguments_to_parser(self, parser):
        parser.add_argument("--watchmodel", action="store_true")


def cli_main(default_config_filename="./configs/default.yaml"):
    cli = MyLightningCLI(trainer_defaults={trainer_defaults},
                         parser_kwargs={{"default_config_files": [default_config_filename]}}, run=False)
    cli.trainer.fit(model=cli.model, datamodule=cli.datamodule)


if __name__ == "__main__":
    cli_main()
"""


def _own(folder: Path, trainer_defaults: str = '{"log_every_n_steps": 10}', trainer: str = "  max_epochs: 3\n") -> list[
        Finding]:
    """satclip's shape: the file's own LightningCLI subclass, a default config file and Trainer defaults of its own."""
    (folder / "configs").mkdir(parents=True)
    (folder / "configs" / "default.yaml").write_text(f"trainer:\n{trainer}", encoding="utf-8")
    (folder / "train.py").write_text(OWN_CLI.format(trainer_defaults=trainer_defaults), encoding="utf-8")
    return [f for f in check_file(folder / "train.py") if f.code == "DDP023"]


def test_a_cli_whose_own_defaults_set_no_layout_runs_lightnings_one_node(tmp_path: Path) -> None:
    [found] = _own(tmp_path)
    assert (found.line, found.confidence) == (11, "likely")
    assert "configs/default.yaml, trainer_defaults set none" in found.message
    # a flag's default: refused across nodes only where the arguments give another count
    assert [f.severity for f in across_nodes([found], 2, 8, [])] == ["warning"]
    assert [f.severity for f in across_nodes([found], 2, 8, ["--trainer.num_nodes", "1"])] == ["error"]
    assert [f.severity for f in across_nodes([found], 2, 8, ["--trainer.num_nodes=2"])] == ["warning"]


def test_a_cli_whose_own_defaults_set_a_layout_is_not_read_as_lightnings(tmp_path: Path) -> None:
    assert _own(tmp_path / "defaults", trainer_defaults='{"devices": 1}') == []  # the CLI's own: not known here
    found = _own(tmp_path / "file", trainer="  num_nodes: 2\n  devices: 8\n")  # the default file's (cli_trainer)
    assert found and all("Lightning's default" not in f.message for f in found)


def test_a_cli_whose_trainer_defaults_set_a_layout_reports_it(tmp_path: Path) -> None:
    """point2vec's ``LightningCLI(Point2Vec, trainer_defaults={"devices": 1, ...})``: one device and Lightning's one
    node unless the command line says otherwise (refused across nodes only where the arguments give another count)."""
    (tmp_path / "train.py").write_text(CLI.format(arguments='trainer_defaults={"devices": 1, "max_epochs": 800}'),
                                       encoding="utf-8")
    [found] = [f for f in check_file(tmp_path / "train.py") if f.code == "DDP023"]
    assert "devices=1 (trainer_defaults)" in found.message and "num_nodes=1" in found.message
    assert [f.severity for f in across_nodes([found], 2, 8, [])] == ["warning"]
    assert [f.severity for f in across_nodes([found], 2, 8, ["--trainer.num_nodes", "1"])] == ["error"]
    assert [f.severity for f in across_nodes([found], 2, 8, ["--trainer.num_nodes=2"])] == ["warning"]
    (tmp_path / "train.py").write_text(CLI.format(arguments='trainer_defaults={"max_epochs": 800}'), encoding="utf-8")
    assert [f.message for f in check_file(tmp_path / "train.py") if f.code == "DDP023"] != [found.message]
