"""The frameworks in front of the queue (orchestrator/spec/framework.py, doctor/frameworks.py): the dry run names
each framework and the cluster environment Lightning/Fabric detect under each launch style (text and --json),
and a Trainer/Fabric layout that cannot match --nodes/--gpus, or a spawning strategy inside a launched rank, is
refused before anything is queued (exit 2), with the options or the arguments that match."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from support import run_cli

if TYPE_CHECKING:
    from support import Stubs

Capsys = pytest.CaptureFixture[str]
HEAD = "import lightning as L\nfrom lightning.fabric import Fabric\n\n\ndef main(args):\n"


@pytest.fixture
def cluster(clean_env: pytest.MonkeyPatch, stubs: Stubs, write_cluster: Callable[..., Path]) -> Stubs:
    clean_env.setenv("ORCH_CLUSTER", str(write_cluster()))
    return stubs


def _script(tmp_path: Path, body: str, head: str = HEAD) -> str:
    path = tmp_path / "train.py"
    path.write_text(head + "".join(f"    {line}\n" for line in body.splitlines()), encoding="utf-8")
    return str(path)


def _dry_json(capsys: Capsys, *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(["submit", "--dry-run", "--json", *argv], capsys)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_dry_run_names_the_framework_and_its_environment(cluster: Stubs, capsys: Capsys, tmp_path: Path) -> None:
    script = _script(tmp_path, "trainer = L.Trainer(devices=8, num_nodes=2, strategy='ddp')\ntrainer.fit(args)")
    code, out, err = run_cli(["submit", script, "--nodes", "2", "--gpus", "8", "--dry-run"], capsys)
    assert code == 0, err
    assert ("#   framework: lightning (train.py:6: trainer = L.Trainer(devices=8, num_nodes=2, strategy='ddp')); "
            "under orch it detects TorchElasticEnvironment (ranks from torchrun's variables; Lightning's own Slurm "
            "requeue stays off)\n") in out
    runs = _dry_json(capsys, script, "--nodes", "2", "--gpus", "8")["runs"]
    assert runs["frameworks"] == [{
        "name": "lightning", "why": "train.py:6: trainer = L.Trainer(devices=8, num_nodes=2, strategy='ddp')",
        "layouts": [{"where": "train.py:6: trainer = L.Trainer(devices=8, num_nodes=2, strategy='ddp')",
                     "devices": 8, "num_nodes": 2, "strategy": "ddp", "accelerator": "auto"}],
        "environment": "TorchElasticEnvironment"}]


@pytest.mark.parametrize(("argv", "environment"), [
    (["--launch", "env"], "TorchElasticEnvironment"), (["--launch", "slurm"], "TorchElasticEnvironment"),
    (["--launch", "local-rank-arg"], "TorchElasticEnvironment"), (["--launch", "per-node"], "SLURMEnvironment"),
    (["--launch", "per-node", "--job-name", "interactive"], "LightningEnvironment")])
def test_the_environment_under_each_launch_style(cluster: Stubs, capsys: Capsys, tmp_path: Path, argv: list[str],
                                                  environment: str) -> None:
    script = _script(tmp_path, "L.Trainer(devices=8, num_nodes=2).fit(args)")
    runs = _dry_json(capsys, script, "--nodes", "2", "--gpus", "8", *argv)["runs"]
    assert [f["environment"] for f in runs["frameworks"]] == [environment]


def test_every_framework_is_recognised(cluster: Stubs, capsys: Capsys, tmp_path: Path) -> None:
    head = ("import hydra\nfrom accelerate import Accelerator\nfrom transformers import Trainer\n"
            "from torch.distributed.elastic.multiprocessing.errors import record\n\n\n@record\n"
            "@hydra.main(version_base=None)\ndef main(cfg):\n")
    # the Accelerator prepares what it trains (one that never prepares, backwards or accumulates beside a Trainer
    # is no framework of the run: tests/doctor/test_frameworks.py)
    body = "acc = Accelerator()\nmodel = acc.prepare(cfg.model)\nTrainer(model=model, args=cfg).train()"
    script = _script(tmp_path, body, head=head)
    code, out, err = run_cli(["submit", script, "--nodes", "1", "--gpus", "2", "--dry-run"], capsys)
    assert code == 0, err
    assert "#   framework: torchelastic (train.py:7: @record)\n" in out
    assert "#   framework: hydra (train.py:8: @hydra.main(version_base=None))\n" in out
    assert ("#   framework: accelerate (train.py:10: acc = Accelerator()); under orch it reads torchrun's variables "
            "(RANK, LOCAL_RANK, WORLD_SIZE)\n") in out
    assert "#   framework: hf-trainer (train.py:12: Trainer(model=model, args=cfg).train())" in out


@pytest.mark.parametrize(("body", "argv", "said", "fix"), [
    ("L.Trainer(devices=4).fit(args)", ["--nodes", "1", "--gpus", "8"],
     "Trainer(devices=4, num_nodes=1) asks for 1 node(s) x 4 process(es), but orch submit starts 1 node(s) x 8 "
     "rank(s) (8 in all)", "submit it with --nodes 1 --gpus 4, or change the script: Trainer(devices=8, num_nodes=1)"),
    ("L.Trainer(devices='auto').fit(args)", ["--nodes", "2", "--gpus", "8"],
     "Trainer(devices='auto' (8 per node), num_nodes=1) asks for 1 node(s) x 8 process(es), but orch submit starts "
     "2 node(s) x 8 rank(s) (16 in all)",
     "submit it with --nodes 1 --gpus 8, or change the script: Trainer(devices=8, num_nodes=2)"),
    ("Fabric(devices=[0, 1], num_nodes=4).launch()", ["--nodes", "2", "--gpus", "8"],
     "Fabric(devices=2, num_nodes=4) asks for 4 node(s) x 2 process(es)",
     "submit it with --nodes 4 --gpus 2, or change the script: Fabric(devices=8, num_nodes=2)"),
    ("L.Trainer(devices=16, num_nodes=1).fit(args)", ["--nodes", "2", "--gpus", "8"],
     "Trainer(devices=16, num_nodes=1) asks for 1 node(s) x 16 process(es)", "submit it with --nodes 1 --gpus 16"),
])
def test_a_layout_that_cannot_match_is_refused_before_the_queue(cluster: Stubs, capsys: Capsys, tmp_path: Path,
                                                                 body: str, argv: list[str], said: str,
                                                                 fix: str) -> None:
    script = _script(tmp_path, body)
    code, _, err = run_cli(["submit", script, *argv], capsys)
    assert code == 2 and said in err and fix in err, err
    assert "devices x num_nodes must be the world size" in err
    assert cluster.records("sbatch") == [] and not (tmp_path / "jobs").exists()
    code, _, err = run_cli(["submit", script, *argv, "--dry-run"], capsys)
    assert code == 2 and said in err


@pytest.mark.parametrize(("body", "call", "strategy"), [
    ("L.Trainer(devices=8, strategy='ddp_spawn').fit(args)", "Trainer", "ddp_spawn"),
    ("L.Trainer(devices=8, strategy='ddp_notebook').fit(args)", "Trainer", "ddp_notebook"),
    ("Fabric(devices=8, strategy='ddp_spawn_find_unused_parameters_true').launch()", "Fabric",
     "ddp_spawn_find_unused_parameters_true")])
def test_a_spawning_strategy_inside_a_rank_is_refused(cluster: Stubs, capsys: Capsys, tmp_path: Path, body: str,
                                                      call: str, strategy: str) -> None:
    code, _, err = run_cli(["submit", _script(tmp_path, body), "--nodes", "1", "--gpus", "8"], capsys)
    assert code == 2, err
    assert f"train.py:6: {body}: strategy={strategy!r} starts" in err
    assert "every rank would start a world of its own" in err and f'use {call}(strategy="ddp")' in err
    assert cluster.records("sbatch") == []


@pytest.mark.parametrize("body", ["L.Trainer(devices=args.gpus, num_nodes=args.nodes).fit(args)",
                                  "L.Trainer(**args.trainer).fit(args)",
                                  "L.Trainer(devices=8, num_nodes=2, strategy=args.strategy).fit(args)"])
def test_arguments_that_are_not_literals_are_not_judged(cluster: Stubs, capsys: Capsys, tmp_path: Path,
                                                        body: str) -> None:
    runs = _dry_json(capsys, _script(tmp_path, body), "--nodes", "2", "--gpus", "8")["runs"]
    assert [f["name"] for f in runs["frameworks"]] == ["lightning"]
