"""The tables of names that say "rank" (source/ranknames.py), as the rank reader uses them."""

from __future__ import annotations

import pytest

from orchestrator.source import ranks
from orchestrator.source.ranknames import GLOBAL_ENV, LOCAL_ENV, NODES_ENV, WORLD_ENV, by_name, is_main_flag


def test_the_launchers_variables_are_each_of_one_kind() -> None:
    tables = [GLOBAL_ENV, LOCAL_ENV, NODES_ENV, WORLD_ENV]
    assert all(not (a & b) for i, a in enumerate(tables) for b in tables[i + 1:])
    assert {"RANK", "SLURM_PROCID"} <= GLOBAL_ENV and {"LOCAL_RANK", "SLURM_LOCALID"} <= LOCAL_ENV


@pytest.mark.parametrize(("name", "kind"), [
    ("local_rank", "local"), ("_local_rank", "local"), ("gpu", "local"), ("rank", "rankish"),
    ("process_index", "global"), ("loss", None),
    # a config's capitalised rank (Seg_model's cfg.ddp.LOCAL_RANK, CurricularFace's cfg["RANK"]); not cfg.GPU, as
    # often a list of devices as an index
    ("LOCAL_RANK", "local"), ("RANK", "rankish"), ("GPU", None), ("Rank", None),
])
def test_a_name_says_the_rank_it_holds(name: str, kind: str | None) -> None:
    assert by_name(name) == kind


@pytest.mark.parametrize(("name", "main"), [
    ("is_master", True), ("get_is_master", True), ("is_root_worker", True), ("is_world_process_zero", True),
    ("master", False), (None, False),
])
def test_a_main_process_flag_or_its_getter(name: str | None, main: bool) -> None:
    assert is_main_flag(name) is main


def test_the_rank_reader_reads_the_same_tables() -> None:
    assert ranks.GLOBAL_ENV is GLOBAL_ENV and ranks.is_main_flag is is_main_flag
