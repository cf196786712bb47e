"""Which sides of an opt-in flag keep a spawn from running under a launcher (orchestrator/launchstyles/spawngates.py):
the flag's own side is asked for (the user passes it), the side the flag left off takes is the default way the script
starts (V-JEPA 2's ``if args.debugmode: one process`` / ``else: a Process per device``), so that spawn is the
script's style."""

from __future__ import annotations

import ast
from pathlib import Path

from orchestrator.launchstyles import detect, read
from orchestrator.launchstyles.facts import read_entry
from orchestrator.launchstyles.spawngates import env_checked

SCRIPT = """\
import argparse

import torch.distributed as dist
import torch.multiprocessing as mp


def process_main(rank, world_size):
    dist.init_process_group("nccl")  # the world from the environment: a launcher could start it


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--{flag}", action="store_true")
    parser.add_argument("--devices", nargs="+", default=["cuda:0", "cuda:1"])
    args = parser.parse_args()
    if args.{flag}:
        {flag_side}
    else:
        {off_side}
"""
ONE = "process_main(0, 1)"
SPAWN = """num_gpus = len(args.devices)
        for rank in range(num_gpus):
            mp.Process(target=process_main, args=(rank, num_gpus)).start()"""


def _write(tmp_path: Path, flag: str, flag_side: str, off_side: str) -> Path:
    script = tmp_path / "main.py"
    script.write_text(SCRIPT.format(flag=flag, flag_side=flag_side, off_side=off_side), encoding="utf-8")
    return script


def test_a_spawn_on_the_side_an_opt_in_flag_leaves_off_is_the_scripts_style(tmp_path: Path) -> None:
    script = _write(tmp_path, "debugmode", ONE, SPAWN)
    launch = detect(read(script))
    assert (launch.style, launch.why.split(":")[:2]) == ("per-node", ["main.py", "21"])


def test_a_spawn_on_the_opt_in_flags_own_side_is_asked_for(tmp_path: Path) -> None:
    script = _write(tmp_path, "multiprocessing_distributed", SPAWN, ONE)
    assert read(script).spawns == ()
    assert detect(read(script)).style == "env"


def test_the_gate_reads_the_side_of_the_call(tmp_path: Path) -> None:
    script = _write(tmp_path, "debugmode", "mp.Process(target=process_main, args=(0, 1)).start()", SPAWN)
    analysis, _ = read_entry(script)
    assert analysis is not None
    calls = {c.lineno: c for c in ast.walk(analysis.module.tree)
             if isinstance(c, ast.Call) and ast.unparse(c.func) == "mp.Process"}
    assert {line: env_checked(analysis, call) for line, call in calls.items()} == {17: True, 21: False}


def test_a_flag_whose_side_reads_the_launchers_variables_is_the_launchers_path(tmp_path: Path) -> None:
    """SuperDiffusion's ``if args.multi_node:`` (torchrun's path: it reads ``RANK``) / ``else: mp.spawn(...)``: the flag
    switches to the launcher, so the one-node spawn on the other side is not the script's style."""
    launched = "process_main(int(os.environ['RANK']), int(os.environ['WORLD_SIZE']))"
    script = _write(tmp_path, "multi_node", launched, SPAWN)
    script.write_text("import os\n" + script.read_text(encoding="utf-8"), encoding="utf-8")
    assert read(script).spawns == ()
    assert detect(read(script)).style == "env"
