"""Multi-node feasibility before the queue: what certainly fails across nodes (a device from the global rank,
DDP010; a file rendezvous in a local folder, DDP021; a one-node check, DDP022) is refused by ``orch submit
--nodes 2`` (exit 2, a HINT, nothing queued; ``--ignore CODE`` overrules), and stays a warning on one node."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from support import ORCH, clean_environ, cluster_file, expect_refused, once_more_on_teardown_abort

from orchestrator.cli import main
from orchestrator.doctor import check_file
from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.findings import Finding

MULTINODE = Path(__file__).resolve().parent / "fixtures" / "multinode"
TIMEOUT = 180
REFUSED = [("global_rank_device.py", "DDP010"), ("rdzv_tmp_env.py", "DDP021"), ("rdzv_tempdir_spawn.py", "DDP021"),
           ("one_node_spawner.py", "DDP022"), ("nnodes_raise.py", "DDP022"), ("weights_tmp_handoff.py", "DDP021")]
# the codes each script is refused for on two nodes (the spawner also forces MASTER_ADDR: launchstyle's DDP008; both
# spawners pass the spawn index as the rank: DDP016, and the tempdir one joins a world of one node: DDP008)
ALL = {name: code for name, code in REFUSED} | {"one_node_spawner.py": "DDP008, DDP016, DDP022",
                                                "rdzv_tempdir_spawn.py": "DDP008, DDP016, DDP021"}


def _severity(findings: Sequence[Finding], code: str) -> set[str]:
    return {f.severity for f in findings if f.code == code}


@pytest.mark.parametrize(("name", "code"), REFUSED)
def test_an_error_on_two_nodes_a_warning_on_one(name: str, code: str) -> None:
    findings = check_file(MULTINODE / name)
    assert _severity(across_nodes(findings, 1, 2), code) == {"warning"}
    two = [f for f in across_nodes(findings, 2, 2) if f.code == code]
    assert {f.severity for f in two} == {"error"}
    assert "cannot work on 2 nodes" in two[0].message and "--nodes 1" in two[0].fix


def test_the_device_error_names_the_nodes_gpus() -> None:
    [finding] = [f for f in across_nodes(check_file(MULTINODE / "global_rank_device.py"), 2, 4) if f.code == "DDP010"]
    assert "past the node's 4 GPUs (cuda:0..3)" in finding.message


def test_a_possible_finding_stays_a_warning_on_two_nodes() -> None:
    """Only what certainly fails is refused: a finding whose evidence is merely possible is not made an error."""
    [finding] = [f for f in check_file(MULTINODE / "global_rank_device.py") if f.code == "DDP010"]
    [kept] = across_nodes([replace(finding, confidence="possible")], 2, 2)
    assert kept.severity == "warning"


def test_a_rank_modulo_a_count_stays_a_warning_on_two_nodes() -> None:
    """``rank % 8`` is the local rank on nodes of 8 GPUs: not certain to fail."""
    findings = across_nodes(check_file(MULTINODE / "global_rank_modulo.py"), 2, 8)
    assert _severity(findings, "DDP010") == {"warning"}


def test_what_works_across_nodes_is_not_refused() -> None:
    findings = across_nodes(check_file(MULTINODE / "rdzv_shared_env.py"), 4, 8)
    assert not [f for f in findings if f.severity == "error"], findings


def test_a_spawners_own_gpu_count_check_is_no_node_check() -> None:
    """Its world is the GPU count it checks (no DDP022); what refuses it across nodes is its spawn index taken as the
    rank with no node offset (DDP016: every node's processes would claim ranks 0..n-1) and that world of one node's
    processes (DDP008)."""
    findings = across_nodes(check_file(MULTINODE / "own_count_spawner.py"), 4, 8)
    assert sorted((f.code, f.line) for f in findings if f.severity == "error") == [("DDP008", 17), ("DDP016", 9)]


# -- through the real CLI -------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "code"), REFUSED)
def test_submit_on_two_nodes_refuses(name: str, code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = cluster_file(tmp_path)
    err = expect_refused(["submit", str(MULTINODE / name), "--cluster", str(cluster), "--nodes", "2", "--gpus", "2"],
                         capsys, [f"{code} error", "cannot work on 2 nodes", f"orch doctor found errors ({ALL[name]})",
                                  "--ignore CODE"], jobs=tmp_path / "jobs")
    hint = err[err.index("HINT:"):]
    assert "cannot work across nodes" in hint and "run on one node (--nodes 1)" in hint and code in hint


@pytest.mark.parametrize(("name", "code"), REFUSED)
def test_the_dry_run_on_two_nodes_says_submit_would_refuse(name: str, code: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["submit", str(MULTINODE / name), "--cluster", str(cluster_file(tmp_path)), "--nodes", "2", "--gpus", "2",
            "--dry-run"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"{code} error" in err
    assert f"orch submit would refuse this script: orch doctor found errors ({ALL[name]})" in err


@pytest.mark.parametrize(("name", "code"), REFUSED)
def test_on_one_node_it_is_a_warning(name: str, code: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["submit", str(MULTINODE / name), "--cluster", str(cluster_file(tmp_path)), "--nodes", "1", "--gpus", "2",
            "--dry-run"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"{code} warning" in err and "would refuse" not in err, err


@pytest.mark.parametrize(("name", "code"), REFUSED)
def test_ignore_lets_it_through(name: str, code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["submit", str(MULTINODE / name), "--cluster", str(cluster_file(tmp_path)), "--nodes", "2", "--gpus", "2",
            "--dry-run", "--ignore", ALL[name].replace(" ", "")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"{code} " not in err and "would refuse" not in err, err


@pytest.mark.slow
def test_on_one_node_the_script_runs_and_trains(tmp_path: Path) -> None:
    """A real gloo run: ``orch run`` (one node) of the spawner that meets through a file in ``mkdtemp()`` shows
    DDP021 as a warning and trains to the end."""
    argv = [ORCH, "run", str(MULTINODE / "rdzv_tempdir_spawn.py"), "--job-root", str(tmp_path / "runs")]
    done = once_more_on_teardown_abort(lambda: subprocess.run(
        argv, cwd=tmp_path, env=clean_environ(), capture_output=True, text=True, timeout=TIMEOUT, check=False))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "DDP021 warning" in done.stderr and "orch: completed" in done.stdout


def test_a_one_node_spawner_in_a_helper_module_is_refused_on_two_nodes(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The entry calls a helper that asserts one node's GPUs and forces MASTER_ADDR=localhost before mp.spawn: the
    style is per-node (read from the helper), and both are refused on two nodes, warnings on one; its workers' rank is
    the spawn index (DDP016: an error on two nodes, a warning on one)."""
    script = Path(__file__).resolve().parent / "fixtures" / "projects" / "helper_spawn_localhost" / "main.py"
    cluster = str(cluster_file(tmp_path))
    expect_refused(["submit", str(script), "--cluster", cluster, "--nodes", "2", "--gpus", "2"], capsys,
                   ["spawner.py:17: DDP022 error", "spawner.py:18: DDP008 error", "spawner.py:10: DDP016 error",
                    "(DDP008, DDP016, DDP022)"],
                   jobs=tmp_path / "jobs")
    assert main(["submit", str(script), "--cluster", cluster, "--nodes", "1", "--gpus", "2", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "spawner.py:17: DDP022 warning" in captured.err and "would refuse" not in captured.err
    assert "spawner.py:10: DDP016 warning" in captured.err  # one node: it trains, the warning says why not on two
    assert "#   launch: per-node (detected: spawner.py:20: mp.spawn(" in captured.out


# The global rank built from a node-index flag (the old launcher's --rank, default 0) and the launcher's local rank:
# every node takes offset 0, so from the second node on two processes claim each rank (DDP016). Refused across
# nodes, a warning on one; an offset read from the environment is right and not reported.
FLAG_RANK = """\
import argparse
import os
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--rank", type=int, default=0)
args = parser.parse_args()
args.local_rank = int(os.environ["LOCAL_RANK"])
args.rank = args.rank * int(os.environ["LOCAL_WORLD_SIZE"]) + args.local_rank
dist.init_process_group("nccl", rank=args.rank, world_size=int(os.environ["WORLD_SIZE"]))
"""


def test_a_rank_from_a_node_index_flag_is_refused_across_nodes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(FLAG_RANK)
    findings = check_file(script)
    assert [(f.code, f.line) for f in findings if f.code == "DDP016"] == [("DDP016", 9)]
    assert _severity(findings, "DDP016") == {"warning"}
    assert _severity(across_nodes(findings, 2, 8), "DDP016") == {"error"}
    script.write_text(FLAG_RANK.replace('args.rank * int(os.environ["LOCAL_WORLD_SIZE"])',
                                        'int(os.environ["GROUP_RANK"]) * int(os.environ["LOCAL_WORLD_SIZE"])'))
    assert not [f for f in check_file(script) if f.code == "DDP016"]


_CONFIG_SCRIPT = """\
import argparse
import yaml
import lightning.pytorch as pl
p = argparse.ArgumentParser()
p.add_argument("--config", default="configs/train.yaml")
args, overrides = p.parse_known_args()
cfg = yaml.safe_load(open(args.config))
trainer = pl.Trainer(strategy="ddp", **cfg["trainer"])
trainer.fit(object())
"""


@pytest.mark.parametrize(("args", "refused"), [([], True), (["--", "--config", "configs/two.yaml"], False)])
def test_a_config_layout_is_refused_across_nodes_when_the_script_is_given_no_argument(
        args: list[str], refused: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Trainer whose num_nodes comes from the config the script loads by default: ``orch submit --nodes 2`` with
    no script argument runs that config, so it would be refused; given arguments (another config), a warning."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "train.yaml").write_text("trainer:\n  devices: 2\n  num_nodes: 1\n")
    (tmp_path / "train.py").write_text(_CONFIG_SCRIPT)
    argv = ["submit", str(tmp_path / "train.py"), "--cluster", str(cluster_file(tmp_path)), "--nodes", "2", "--gpus",
            "2", "--dry-run", *args]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert ("DDP023 error" in err and "would refuse" in err) is refused, err
    assert ("DDP023 warning" in err) is not refused, err
