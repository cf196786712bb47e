"""orch doctor judges a Lightning/Fabric layout as orch run and orch submit do (one judge): with ``--nproc`` or
``--nodes/--gpus`` what they would refuse is an error here, in their words; without a layout, the options that
give the call's layout are said. The pure part (doctor/layouts.py) and the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT, run_cli

from orchestrator.doctor.layouts import Asked, layout_lines
from orchestrator.spec.framework import Framework, Layout

SCRIPT = ROOT / "tests" / "scripts" / "lightning_layout.py"  # Trainer(accelerator="cpu", devices=2, num_nodes=1)


def lightning(devices: int | str = 2, num_nodes: int | None = 1) -> list[Framework]:
    layout = Layout(where="train.py:9: Trainer(...)", devices=devices, num_nodes=num_nodes)  # type: ignore[arg-type]
    return [Framework(name="lightning", why="train.py:1: import lightning", layouts=[layout])]


def test_without_a_layout_the_options_that_give_the_calls_layout_are_said() -> None:
    [line] = layout_lines("train.py", lightning(), "env", Asked())
    assert not line.error
    assert "asks for 1 node(s) x 2 process(es): orch run --nproc 2, or orch submit --nodes 1 --gpus 2" in line.text
    [line] = layout_lines("train.py", lightning(4, 2), "env", Asked())
    assert "asks for 2 node(s) x 4 process(es): orch submit --nodes 2 --gpus 4" in line.text
    assert "orch run" not in line.text.split("(")[0]  # one node only: not said for two


@pytest.mark.parametrize("frameworks", [lightning("auto"), lightning(2, None), []])
def test_what_is_not_a_literal_layout_says_nothing(frameworks: list[Framework]) -> None:
    assert layout_lines("train.py", frameworks, "env", Asked()) == []


@pytest.mark.parametrize(("asked", "refused"), [
    (Asked(nproc=2), None), (Asked(nproc=3), "orch run --nproc 3 would refuse it"),
    (Asked(nodes=1, gpus=2), None), (Asked(nodes=2, gpus=2), "orch submit --nodes 2 --gpus 2 would refuse it"),
])
def test_an_asked_layout_is_judged_by_the_planners_own_check(asked: Asked, refused: str | None) -> None:
    lines = layout_lines("train.py", lightning(), "env", asked)
    if refused is None:
        assert lines == []
    else:
        [line] = lines
        assert line.error and refused in line.text and "\nHINT: " in line.text, line.text


def test_a_per_node_script_is_not_judged() -> None:
    assert layout_lines("train.py", lightning(), "per-node", Asked(nproc=3)) == []


def test_the_cli_refuses_what_orch_run_would_and_says_what_to_run_with(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["doctor", str(SCRIPT)], capsys)
    assert code == 0 and "orch run --nproc 2, or orch submit --nodes 1 --gpus 2" in err, err
    code, out, err = run_cli(["doctor", str(SCRIPT), "--nproc", "2"], capsys)
    assert (code, out.strip()) == (0, "orch doctor: no findings"), err
    code, out, err = run_cli(["doctor", str(SCRIPT), "--nproc", "3"], capsys)
    assert code == 1 and "orch run --nproc 3 would refuse it" in err and "HINT: run it with --nproc 2" in err, err
    assert "the layout asked for would be refused" in out
    code, out, err = run_cli(["doctor", str(SCRIPT), "--nodes", "2", "--gpus", "2"], capsys)
    assert code == 1 and "HINT: submit it with --nodes 1 --gpus 2" in err, err


@pytest.mark.parametrize("argv", [["--nproc", "2", "--nodes", "2"], ["--nproc", "0"], ["--nodes", "-1"]])
def test_a_layout_that_is_no_layout_is_refused_with_a_hint(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["doctor", str(SCRIPT), *argv], capsys)
    assert code == 2 and "HINT:" in err, err


def test_across_nodes_the_doctor_makes_the_layout_errors_the_gate_makes(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "one_node.py"
    script.write_text("import torch\nimport torch.distributed as dist\n\n\ndef main():\n"
                      "    dist.init_process_group('nccl')\n    world_size = dist.get_world_size()\n"
                      "    assert world_size == torch.cuda.device_count()\n    dist.destroy_process_group()\n\n\n"
                      "main()\n")
    code, out, _ = run_cli(["doctor", str(script)], capsys)
    assert code == 0 and "DDP022" in out, out  # a warning alone
    code, out, _ = run_cli(["doctor", str(script), "--nodes", "2", "--gpus", "4"], capsys)
    assert code == 1 and "DDP022" in out and "cannot work" in out, out
