"""A function a self-running script defines and never names never runs (XProNet's ``setup()``, which writes a
``localhost`` address and rank 0 that nothing uses): a warning inside it is only possible (``orch doctor --all``). A
script that runs nothing of its own (its ``main`` named from outside, by a console entry point) is not judged so."""

from __future__ import annotations

from pathlib import Path

from orchestrator.doctor import check_file

_SCRIPT = """import os
import torch
import torch.distributed as dist


def setup(world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12345"


def main():
    {call}
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
{tail}"""
_RUNS = 'if __name__ == "__main__":\n    main()\n'


def _addresses(tmp_path: Path, call: str = "pass", tail: str = _RUNS) -> set[str]:
    script = tmp_path / "main.py"
    script.write_text(_SCRIPT.format(call=call, tail=tail))
    return {f.confidence for f in check_file(script) if f.code == "DDP008" and f.file == str(script)}


def test_a_function_the_script_never_names_is_off_the_run_path(tmp_path: Path) -> None:
    assert _addresses(tmp_path) == {"possible"}


def test_a_function_the_script_calls_keeps_its_confidence(tmp_path: Path) -> None:
    assert "possible" not in _addresses(tmp_path, call="setup(2)")


def test_a_script_that_runs_nothing_of_its_own_is_not_judged(tmp_path: Path) -> None:
    # `main` (and what it may call) is named from outside: a console entry point, a caller's import
    assert "possible" not in _addresses(tmp_path, tail="")
    assert _addresses(tmp_path, tail="main()\n") == {"possible"}  # a top-level call of its own function runs itself
