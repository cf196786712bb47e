"""The launch style in front of the queue (orchestrator/spec/launch.py): the dry run shows the style and the
line that decided it (text and --json), a per-node script becomes one task per node, --launch overrides,
and a style that cannot work is refused before anything is submitted (the seed wiki's constant MASTER_ADDR)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import ROOT, run_cli

if TYPE_CHECKING:
    from support import Stubs

SCRIPTS = ROOT / "tests" / "scripts"
WIKI = ROOT / "tests" / "doctor" / "fixtures" / "seed002_wiki_mnist_distributed.py"
Capsys = pytest.CaptureFixture[str]


@pytest.fixture
def cluster(clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path]) -> Stubs:
    clean_env.setenv("ORCH_CLUSTER", str(write_cluster()))
    return stubs


def _dry_json(capsys: Capsys, *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(["submit", "--dry-run", "--json", *argv], capsys)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize(("script", "style", "ranks"), [
    ("ddp_train.py", "env", 16), ("spawn_per_node.py", "per-node", 2), ("local_rank_arg.py", "local-rank-arg", 16),
    ("slurm_native.py", "slurm", 16)])
def test_dry_run_json_names_the_style(cluster: Stubs, capsys: Capsys, script: str, style: str, ranks: int) -> None:
    data = _dry_json(capsys, str(SCRIPTS / script), "--nodes", "2", "--gpus", "8", "--", "--out", "x")
    assert data["runs"]["launch"]["style"] == style and len(data["ranks"]) == ranks
    assert (data["runs"]["launch"]["how"] == "default") == (style == "env")
    assert cluster.records("sbatch") == []


def test_per_node_is_one_task_per_node_holding_its_gpus(cluster: Stubs, capsys: Capsys) -> None:
    code, out, err = run_cli(["submit", str(SCRIPTS / "spawn_per_node.py"), "--nodes", "2", "--gpus", "8",
                              "--dry-run", "--", "-n", "{nnodes}", "-g", "{nproc_per_node}", "-nr", "{node_rank}",
                              "--out", "x"], capsys)
    assert code == 0, err
    assert "#SBATCH --ntasks-per-node=1" in out
    assert "#   launch: per-node (detected: spawn_per_node.py:55: mp.spawn(train, nprocs=args.gpus" in out
    assert "each task below starts 8 process(es) itself: 16 ranks in all" in out
    assert "# 2 tasks: 2 node(s) x 1 task(s)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("gpu00")]
    assert [(r[0], r[4], r[5]) for r in rows] == [("gpu001", "gpus", "0,1,2,3,4,5,6,7"),
                                                  ("gpu002", "gpus", "0,1,2,3,4,5,6,7")]
    assert "DDP014" not in err
    assert "names a placeholder" not in err  # the node flags get orch's values: no warning


def test_a_per_node_script_without_placeholders_is_warned_with_the_arguments_to_add(cluster: Stubs,
                                                                                     capsys: Capsys) -> None:
    """Its -n/-g/-nr keep their defaults on every node (a world of 1 per node; EADDRINUSE across nodes): the dry
    run and the submit say so, with the whole line after -- to pass; the submit still goes (a warning)."""
    argv = ["submit", str(SCRIPTS / "spawn_per_node.py"), "--nodes", "2", "--gpus", "8"]
    hint = "HINT: let orch fill them on each node: -- --out x -n {nnodes} -g {nproc_per_node} -nr {node_rank}"
    code, _, err = run_cli([*argv, "--dry-run", "--", "--out", "x"], capsys)
    assert code == 0, err
    assert "orch: warning: spawn_per_node.py starts its own processes on each node" in err and hint in err
    code, _, err = run_cli([*argv, "--", "--out", "x"], capsys)
    assert code == 0 and hint in err and len(cluster.records("sbatch")) == 1


def test_launch_overrides_what_the_script_says(cluster: Stubs, capsys: Capsys) -> None:
    data = _dry_json(capsys, str(SCRIPTS / "spawn_per_node.py"), "--nodes", "2", "--gpus", "8", "--launch", "env")
    assert data["runs"]["launch"] == {"style": "env", "how": "asked", "why": "--launch env", "flag": "--local-rank",
                                      "procs_per_task": 1}
    assert len(data["ranks"]) == 16 and "DDP014" in {f["code"] for f in data["findings"]}
    data = _dry_json(capsys, str(SCRIPTS / "ddp_train.py"), "--nodes", "1", "--gpus", "4", "--launch", "per-node")
    assert (data["runs"]["launch"]["procs_per_task"], len(data["ranks"])) == (4, 1)


def test_the_seed_wiki_as_it_stands_is_refused_before_the_queue(cluster: Stubs, capsys: Capsys) -> None:
    code, _, err = run_cli(["submit", str(WIKI), "--nodes", "2", "--gpus", "8", "--", "-n", "{nnodes}"], capsys)
    assert code == 2 and "nothing was launched" in err
    assert "DDP008" in err and "per-node script that sets MASTER_ADDR to a constant cannot meet the other nodes" in err
    assert "delete the line" in err and "os.environ['MASTER_ADDR'] = '10.57.23.164'" in err
    assert cluster.records("sbatch") == []
    code, out, err = run_cli(["submit", str(WIKI), "--nodes", "2", "--gpus", "8", "--dry-run"], capsys)
    assert code == 0 and "orch submit would refuse this script" in err and "launch: per-node" in out


def test_launch_with_a_job_file_is_refused(cluster: Stubs, capsys: Capsys, write_job: Callable[..., Path]) -> None:
    code, _, err = run_cli(["submit", str(write_job()), "--launch", "per-node", "--dry-run"], capsys)
    assert code == 2 and "--launch per-node: a job file runs orch's own entrypoint" in err


def test_per_node_with_gpus_per_task_is_refused(cluster: Stubs, capsys: Capsys) -> None:
    code, _, err = run_cli(["submit", str(SCRIPTS / "spawn_per_node.py"), "--nodes", "2", "--gpus", "8",
                            "--gpus-per-task", "2", "--dry-run"], capsys)
    assert code == 2 and "a per-node script's one task per node holds all 8 GPUs" in err


def test_an_unknown_style_is_a_usage_error(cluster: Stubs, capsys: Capsys) -> None:
    code, _, err = run_cli(["submit", str(SCRIPTS / "ddp_train.py"), "--launch", "mpirun", "--dry-run"], capsys)
    assert code == 2 and "invalid choice: 'mpirun'" in err


def test_a_single_node_spawner_with_localhost_runs_on_one_node_only(cluster: Stubs, capsys: Capsys,
                                                                   tmp_path: Path) -> None:
    """The PyTorch DDP tutorial's multigpu.py (mp.spawn, MASTER_ADDR='localhost', a fixed port): on one node
    its processes meet; across nodes they cannot, and the submit says so before the queue."""
    script = tmp_path / "multigpu.py"
    script.write_text(WIKI.read_text(encoding="utf-8").replace("'10.57.23.164'", "'localhost'"), encoding="utf-8")
    quiet = ["--ignore", "DDP020"]  # the wiki's fragments never define world_size and train_dataset (own errors)
    code, out, err = run_cli(["submit", str(script), "--nodes", "1", "--gpus", "8", "--dry-run", *quiet], capsys)
    assert code == 0 and "would refuse" not in err and "launch: per-node" in out
    code, _, err = run_cli(["submit", str(script), "--nodes", "2", "--gpus", "8", *quiet], capsys)
    assert code == 2 and "cannot meet the other nodes" in err and cluster.records("sbatch") == []
