"""The launch styles' pure part (orchestrator/spec/launch.py): the placeholders of a per-node script's
arguments, the --launch value, the dry run's line."""

from __future__ import annotations

import os

import pytest

from orchestrator.env.distenv import DistEnv
from orchestrator.env.taskenv import per_node_env
from orchestrator.errors import ConfigError
from orchestrator.spec.launch import (
    AUTO,
    PLACEHOLDER_VARS,
    PLACEHOLDERS,
    STYLES,
    Launch,
    check_style,
    fill_placeholders,
    local_rank_argument,
    uses_placeholders,
)

VALUES = {"node_rank": "1", "nnodes": "2", "nproc_per_node": "8", "world_size": "16", "master_addr": "gpu001",
          "master_port": "31845"}


def test_the_wiki_command_gets_each_nodes_values() -> None:
    args = ["-n", "{nnodes}", "-g", "{nproc_per_node}", "-nr", "{node_rank}", "--epochs", "2"]
    assert fill_placeholders(args, VALUES) == ["-n", "2", "-g", "8", "-nr", "1", "--epochs", "2"]


def test_placeholders_inside_words_and_several_per_argument() -> None:
    assert fill_placeholders(["--dist-url=tcp://{master_addr}:{master_port}", "run-{node_rank}-of-{nnodes}"],
                             VALUES) == ["--dist-url=tcp://gpu001:31845", "run-1-of-2"]


@pytest.mark.parametrize("arg", ["{lr}", "{}", "{ node_rank }", "{NODE_RANK}", "%j", "{node_rank",
                                 os.fsdecode(b"\xff{x}\x80"), "$(id)", ""])
def test_everything_else_stays_byte_for_byte(arg: str) -> None:
    assert fill_placeholders([arg], VALUES) == [arg]


def test_uses_placeholders_in_order_of_first_use() -> None:
    assert uses_placeholders(["-nr", "{node_rank}", "{nnodes}/{node_rank}", "{lr}"]) == ["node_rank", "nnodes"]
    assert uses_placeholders(["--out", "x"]) == []


def test_each_placeholder_is_a_variable_a_per_node_task_gets() -> None:
    env = DistEnv(rank=1, local_rank=0, world_size=2, local_world_size=1, node_rank=1, num_nodes=2,
                  master_addr="gpu001", master_port=31845)
    exported = per_node_env(env, 8)
    assert set(PLACEHOLDER_VARS.values()) <= set(exported) and tuple(PLACEHOLDER_VARS) == PLACEHOLDERS
    assert {name: exported[var] for name, var in PLACEHOLDER_VARS.items()} == VALUES


def test_local_rank_argument_in_the_declared_spelling() -> None:
    assert local_rank_argument("--local_rank", 3) == "--local_rank=3"
    assert local_rank_argument("--local-rank", 0) == "--local-rank=0"


@pytest.mark.parametrize("asked", [None, AUTO])
def test_auto_reads_the_script(asked: str | None) -> None:
    assert check_style(asked, script=True) == AUTO
    assert check_style(asked, script=False) == AUTO  # a job file without --launch: nothing to say


@pytest.mark.parametrize("style", STYLES)
def test_each_style_is_taken_for_a_script_only(style: str) -> None:
    assert check_style(style, script=True) == style
    with pytest.raises(ConfigError, match=f"--launch {style}: a job file") as err:
        check_style(style, script=False)
    assert "leave out --launch" in err.value.hint


@pytest.mark.parametrize("asked", ["torchrun", "PER-NODE", "", "per_node", "env\n"])
def test_an_unknown_style_names_the_choices(asked: str) -> None:
    with pytest.raises(ConfigError, match="is not a launch style") as err:
        check_style(asked, script=True)
    assert all(style in err.value.hint for style in STYLES)


def test_the_dry_run_line_says_style_reason_and_what_orch_does() -> None:
    line = Launch(style="per-node", how="detected", why="train.py:46: mp.spawn(train)").describe()
    assert line.startswith("per-node (detected: train.py:46: mp.spawn(train)); one task per node")
    assert Launch().describe().startswith("env (the default); one task per rank")


def test_job_json_without_launch_is_the_env_style() -> None:
    assert Launch.model_validate({}) == Launch(style="env", how="default")
    with pytest.raises(ValueError):
        Launch.model_validate({"style": "mpirun"})
    with pytest.raises(ValueError):
        Launch.model_validate({"procs_per_task": 0})
