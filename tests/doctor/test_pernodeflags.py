"""A per-node script whose node flags get no placeholder (orchestrator/doctor/pernodeflags.py): the warning and the
exact ``-- ...`` to pass, from the gate that ``orch run``, ``orch submit`` and ``orch exec`` call first; silent
once an argument names a placeholder, for the other styles, and for a script that declares no such flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT

from orchestrator.doctor.gate import check_script
from orchestrator.doctor.pernodeflags import filled_args, node_flags, placeholder_warning
from orchestrator.spec.launch import Launch
from orchestrator.spec.pysource import parse_source
from orchestrator.spec.script import ScriptTarget

SPAWNER = ROOT / "tests" / "scripts" / "spawn_per_node.py"
PER_NODE = Launch(style="per-node")


@pytest.mark.parametrize(("args", "hint"), [
    ([], "-- -n {nnodes} -g {nproc_per_node} -nr {node_rank}"),
    (["--out", "x y"], "-- --out 'x y' -n {nnodes} -g {nproc_per_node} -nr {node_rank}"),
    (["-n", "2", "--out", "x"], "-- -n {nnodes} --out x -g {nproc_per_node} -nr {node_rank}"),
    (["--nodes=2", "-g", "4"], "-- --nodes={nnodes} -g {nproc_per_node} -nr {node_rank}"),
])
def test_the_warning_gives_the_whole_argument_line_to_pass(args: list[str], hint: str) -> None:
    warning = placeholder_warning(SPAWNER, PER_NODE, args)
    assert warning is not None
    head, tail = warning.splitlines()
    assert head.startswith("orch: warning: spawn_per_node.py starts its own processes on each node")
    assert "-n/--nodes, -g/--gpus, -nr/--nr" in head and "world of its own" in head and "EADDRINUSE" in head
    assert tail == f"HINT: let orch fill them on each node: {hint}"


def test_the_defaults_named_are_those_of_the_flags_not_given() -> None:
    warning = placeholder_warning(SPAWNER, PER_NODE, ["-g", "2"]) or ""
    assert "(the defaults where not given: -n 1 -nr 0)" in warning


@pytest.mark.parametrize("args", [["-n", "{nnodes}"], ["--out", "run-{node_rank}"], ["--world={world_size}"]])
def test_any_placeholder_in_the_arguments_silences_it(args: list[str]) -> None:
    assert placeholder_warning(SPAWNER, PER_NODE, args) is None


@pytest.mark.parametrize("style", ["env", "local-rank-arg", "slurm"])
def test_other_styles_are_not_warned(style: str) -> None:
    assert placeholder_warning(SPAWNER, Launch(style=style), []) is None  # type: ignore[arg-type]


def test_a_per_node_script_without_node_flags_is_not_warned(tmp_path: Path) -> None:
    script = tmp_path / "spawn.py"
    script.write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\n"
                      "p.add_argument('--master_addr', default='localhost')\n")
    assert placeholder_warning(script, PER_NODE, []) is None


def test_flags_are_read_by_their_long_name_or_dest_and_a_device_list_is_not_a_count() -> None:
    source = ("import argparse\np = argparse.ArgumentParser()\n"
              "p.add_argument('--gpus', type=str, default='0,1')\n"          # the devices, not a count
              "p.add_argument('-N', dest='num_nodes', type=int, default=1)\n"
              "p.add_argument('--node-rank', type=int, default=0)\n"
              "p.add_argument('--nproc_per_node', type=int)\n"
              "p.add_argument('--world-size', default=1, type=int)\n"
              "p.add_argument('-n', type=int)\n")                             # a bare -n says nothing
    flags = node_flags(parse_source(source, "x.py"))
    assert [(f.options, f.placeholder) for f in flags] == [
        (("-N",), "nnodes"), (("--node-rank",), "node_rank"), (("--nproc_per_node",), "nproc_per_node"),
        (("--world-size",), "world_size")]
    assert filled_args(["--world-size", "8"], flags) == [
        "--world-size", "{world_size}", "-N", "{nnodes}", "--node-rank", "{node_rank}",
        "--nproc_per_node", "{nproc_per_node}"]


def test_the_gate_prints_it_for_a_script_run_without_placeholders(capsys: pytest.CaptureFixture[str]) -> None:
    target = ScriptTarget(kind="script", target=str(SPAWNER), args=["--out", "x"], cwd=str(ROOT))
    _, launch = check_script(target, refuse=True)
    assert launch.style == "per-node"
    assert "HINT: let orch fill them on each node: -- --out x -n {nnodes} -g {nproc_per_node} -nr {node_rank}" \
        in capsys.readouterr().err
    filled = target.model_copy(update={"args": ["-n", "{nnodes}", "-g", "{nproc_per_node}", "-nr", "{node_rank}"]})
    check_script(filled, refuse=True)
    assert "placeholder" not in capsys.readouterr().err
