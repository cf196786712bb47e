"""Which style a script is written for, read from its facts (orchestrator/launchstyles/), on the
test scripts that run under each style (tests/local/test_runner_launch_styles.py) and on the seed wiki's
script; the finding a style answers; the per-node refusal of a constant MASTER_ADDR/MASTER_PORT."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT

from orchestrator.doctor.check import check_file as _check_file
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.launchstyle import answered
from orchestrator.launchstyles import choose, detect, read
from orchestrator.launchstyles.localrank import declared_flag
from orchestrator.spec.pysource import parse_source

SCRIPTS = ROOT / "tests" / "scripts"
WIKI = ROOT / "tests" / "doctor" / "fixtures" / "seed002_wiki_mnist_distributed.py"


def check_file(path: Path) -> list[Finding]:
    """The doctor's findings but DDP020: the wiki's fragments never define ``world_size`` and ``train_dataset``
    (errors of their own, tests/doctor/test_rules_names.py); this file is about the per-node rules."""
    return [f for f in _check_file(path) if f.code != "DDP020"]


def _detect(path: Path) -> tuple[str, str, str]:
    launch = detect(read(path))
    return launch.style, launch.how, launch.why


@pytest.mark.parametrize(("script", "style", "why"), [
    ("ddp_train.py", "env", ""),
    ("spawn_per_node.py", "per-node", "spawn_per_node.py:55: mp.spawn(train, nprocs=args.gpus, args=(args,))"),
    ("local_rank_arg.py", "local-rank-arg", "local_rank_arg.py:21: parser.add_argument(\"--local_rank\", "
                                            "\"--local-rank\", type=int, default=0)"),
    ("slurm_native.py", "slurm", "slurm_native.py:24: proc = int(os.environ[\"SLURM_PROCID\"])"),
])
def test_each_test_script_is_read_as_its_style(script: str, style: str, why: str) -> None:
    assert _detect(SCRIPTS / script) == (style, "detected" if why else "default", why)


def test_the_seed_wiki_is_per_node_and_its_constant_master_is_an_error() -> None:
    found = check_file(WIKI)
    launch = detect(read(WIKI))
    assert (launch.style, launch.why) == ("per-node", f"{WIKI.name}:46: mp.spawn(train, nprocs=args.gpus, "
                                                      "args=(args,))")
    left = answered(launch, found, 2)
    assert "DDP014" not in {f.code for f in left}  # running it per node is the answer
    errors = [(f.line, f.code) for f in left if f.severity == "error"]
    assert errors == [(44, "DDP008"), (45, "DDP008")]
    assert all("delete the line" in f.fix for f in left if f.severity == "error")


def test_without_its_two_master_lines_the_wiki_has_no_error(tmp_path: Path) -> None:
    lines = WIKI.read_text(encoding="utf-8").splitlines(keepends=True)
    fixed = tmp_path / "mnist_distributed.py"
    fixed.write_text("".join(line for n, line in enumerate(lines, 1) if n not in (44, 45)), encoding="utf-8")
    found = check_file(fixed)
    launch = detect(read(fixed))
    assert launch.style == "per-node"
    assert not [f for f in answered(launch, found) if f.severity == "error"]


def test_a_fallback_master_is_no_error_per_node(tmp_path: Path) -> None:
    script = tmp_path / "spawn.py"
    script.write_text(WIKI.read_text(encoding="utf-8").replace(
        "    os.environ['MASTER_ADDR'] = '10.57.23.164'", "    os.environ.setdefault('MASTER_ADDR', 'localhost')"
    ).replace("    os.environ['MASTER_PORT'] = '8888'", "    if 'MASTER_PORT' not in os.environ:\n"
              "        os.environ['MASTER_PORT'] = '8888'"), encoding="utf-8")
    found = check_file(script)
    assert not [f for f in answered(detect(read(script)), found) if f.severity == "error"]


def test_other_styles_keep_every_finding() -> None:
    found = check_file(WIKI)
    kept = answered(choose("env", WIKI), found)
    assert {f.code for f in kept} == {f.code for f in found} and not [f for f in kept if f.severity == "error"]


@pytest.mark.parametrize(("declared", "flag"), [
    ('"--local-rank"', "--local-rank"), ('"--local_rank"', "--local_rank"),
    ('"--local-rank", "--local_rank"', "--local-rank"), ('"--gpu"', None)])
def test_the_declared_spelling_is_the_one_passed(declared: str, flag: str | None) -> None:
    source = f"import argparse\np = argparse.ArgumentParser()\np.add_argument({declared}, type=int)\n"
    assert declared_flag(parse_source(source, "x.py")) == flag


def test_a_script_that_reads_rank_and_slurm_procid_is_torchrun_style(tmp_path: Path) -> None:
    script = tmp_path / "both.py"
    script.write_text("import os\nrank = int(os.environ.get('RANK', os.environ.get('SLURM_PROCID', 0)))\n",
                      encoding="utf-8")
    assert _detect(script) == ("env", "default", "")


def test_a_script_that_reads_slurm_procid_and_only_hands_rank_on_is_slurm_style(tmp_path: Path) -> None:
    """HydraGNN's setup_ddp: the rank from SLURM_PROCID, then ``os.environ["RANK"] = str(rank)`` for env://."""
    script = tmp_path / "setup.py"
    script.write_text("import os\nrank = int(os.environ['SLURM_PROCID'])\nos.environ['RANK'] = str(rank)\n"
                      "os.environ['LOCAL_RANK'] = os.environ['SLURM_LOCALID']\n", encoding="utf-8")
    assert _detect(script)[0] == "slurm"


def test_asked_beats_detected_and_keeps_the_spelling() -> None:
    script = SCRIPTS / "local_rank_arg.py"
    launch = choose("local-rank-arg", script)
    assert (launch.style, launch.how, launch.why, launch.flag) == ("local-rank-arg", "asked", "--launch local-rank-arg",
                                                                   "--local_rank")
    assert choose("env", SCRIPTS / "spawn_per_node.py").style == "env"
    assert choose("auto", None).style == "env"  # a module not found here: torchrun's, the default


def _localhost_spawner(tmp_path: Path, address: str = "localhost") -> Path:
    """The PyTorch DDP tutorial's form: mp.spawn on one machine, MASTER_ADDR=localhost and a fixed port."""
    script = tmp_path / "multigpu.py"
    script.write_text(WIKI.read_text(encoding="utf-8").replace("'10.57.23.164'", repr(address)), encoding="utf-8")
    return script


@pytest.mark.parametrize(("nodes", "errors"), [(1, []), (2, [44, 45])])
@pytest.mark.parametrize("address", ["localhost", "127.0.0.1", "tcp://localhost", "tcp://127.0.0.1:29500"])
def test_a_loopback_master_meets_on_one_node_only(tmp_path: Path, nodes: int, errors: list[int], address: str) -> None:
    """Also written as a URL (SuPar's ``os.environ['MASTER_ADDR'] = 'tcp://localhost'``, joined with the port into
    its ``init_method``): this machine's loopback all the same."""
    script = _localhost_spawner(tmp_path, address)
    found = check_file(script)
    left = answered(detect(read(script)), found, nodes)
    assert [f.line for f in left if f.severity == "error"] == errors
    assert {f.line for f in left if f.code == "DDP008"} == {44, 45}  # still said, as the warning it was


def test_a_foreign_master_blocks_even_one_node() -> None:
    found = check_file(WIKI)
    assert [f.line for f in answered(detect(read(WIKI)), found, 1) if f.severity == "error"] == [44]


def test_a_frameworks_spawning_strategy_is_not_a_per_node_script(tmp_path: Path) -> None:
    """``Trainer(strategy="ddp_spawn")`` spawns inside the framework (DDP014 says so): the script is no per-node
    script (the submit refuses the strategy instead, with strategy="ddp" as the fix)."""
    script = tmp_path / "train.py"
    script.write_text("import lightning as L\n\nL.Trainer(devices=2, strategy='ddp_spawn').fit(None)\n",
                      encoding="utf-8")
    found = check_file(script)
    assert "DDP014" in {f.code for f in found}
    assert detect(read(script)).style == "env"


@pytest.mark.parametrize(("reading", "style"), [
    # Slurm's rank read only to offset the seed: no rank is taken from it (the framework reads the launcher's)
    ("seed = 42\nif os.environ.get('SLURM_PROCID') is not None:\n    seed += int(os.environ.get('SLURM_PROCID'))\n"
     "torch.manual_seed(seed)\n", "env"),
    ("torch.manual_seed(int(os.environ['SLURM_PROCID']))\n", "env"),
    # Slurm's rank taken as the rank
    ("rank = int(os.environ['SLURM_PROCID'])\ndist.init_process_group('nccl', rank=rank, world_size=2)\n", "slurm"),
    ("if os.environ.get('SLURM_PROCID') is not None:\n    rank = int(os.environ['SLURM_PROCID'])\n", "slurm"),
])
def test_slurm_variables_read_for_a_seed_decide_no_style(tmp_path: Path, reading: str, style: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(f"import os\nimport torch\nimport torch.distributed as dist\n{reading}", encoding="utf-8")
    assert _detect(script)[0] == style


_OPT_IN = """import argparse
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def training(rank, args):
    if {init_flag}:
        dist.init_process_group("nccl", init_method="env://", world_size=args.world_size, rank=rank)
    torch.nn.Linear(2, 2)


def worker(rank, args):
    if rank == 0:
        training(rank, args)
    else:
        training(rank, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--distributed", action="store_true")
    parser.add_argument("--multiprocessing-distributed", action="store_true")
    args = parser.parse_args()
{world}    args.multi = args.world_size > 1
{stop}    if args.{spawn_flag}:
        mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(args,))
    else:
        worker(0, args)
"""


_STOP = """    gpus = torch.cuda.device_count()
    if gpus > 1 and not args.multiprocessing_distributed:
        raise SystemExit("more than one GPU: pass --multiprocessing-distributed")
"""


_WORLD = """    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ["WORLD_SIZE"])
"""


@pytest.mark.parametrize(("spawn_flag", "init_flag", "world", "stop", "style"), [
    # the flag that spawns is the only way to a process group: the spawn is how the script must be started
    ("distributed", "args.distributed", _WORLD, "", "per-node"),
    # ImageNet's way: the spawn is opt-in, the other branch starts a group under a launcher too (its world size
    # read from the launcher's WORLD_SIZE)
    ("multiprocessing_distributed", "args.multi", _WORLD, "", "env"),
    # NeWCRFs' way: the same, but the script stops on more than one GPU unless the spawn flag is passed
    ("multiprocessing_distributed", "args.multi", _WORLD, _STOP, "per-node"),
    # the other branch never learns the launcher's world (no WORLD_SIZE read, the group given --world-size's value):
    # the spawn is the way to train on several GPUs
    ("multiprocessing_distributed", "args.multi", "", "", "per-node"),
])
def test_an_opt_in_spawn_is_per_node_when_it_is_the_only_way(tmp_path: Path, spawn_flag: str, init_flag: str,
                                                              world: str, stop: str, style: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(_OPT_IN.format(spawn_flag=spawn_flag, init_flag=init_flag, world=world, stop=stop),
                      encoding="utf-8")
    assert _detect(script)[0] == style


@pytest.mark.parametrize(("configured", "style"), [
    ("true", "per-node"),  # the project's config switches the spawn on: it is how the script trains
    ("false", "env"),  # off in the config as on the command line: ImageNet's opt-in
])
def test_a_spawn_flag_the_projects_config_switches_on_is_no_opt_in(tmp_path: Path, configured: str,
                                                                     style: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(_OPT_IN.format(spawn_flag="multiprocessing_distributed", init_flag="args.multi", world=_WORLD,
                                     stop=""), encoding="utf-8")
    (tmp_path / "config" / "data").mkdir(parents=True)
    (tmp_path / "config" / "data" / "model.yaml").write_text(
        f"world_size: 1\nmultiprocessing_distributed: {configured}\n", encoding="utf-8")
    assert _detect(script)[0] == style



_HELPER_INIT = """import argparse
import os
import torch.distributed as dist
import torch.multiprocessing as mp


def setup_distributed(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    dist.init_process_group("nccl", rank=rank, world_size=world_size)


def fit(model, distributed=False, local_rank=-1):
    if {fit_test}:
        dist.init_process_group("nccl")


def main(rank, world_size, args):
    if {setup_test}:
        setup_distributed(rank, world_size)
    fit(None, distributed=args.distributed, local_rank=rank)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--distributed", action="store_true")
    parser.add_argument("--world_size", type=int, default=1)
    args = parser.parse_args()
    if args.distributed:
        mp.spawn(main, args=(args.world_size, args), nprocs=args.world_size)
    else:
        main(-1, 1, args)
"""


@pytest.mark.parametrize(("fit_test", "setup_test", "style"), [
    # NCF's way: every process group is started under the flag, in a helper the worker calls only under it or in a
    # function whose parameter carries it: the flag's spawn is the only way to train distributed
    ("distributed", "args.distributed", "per-node"),
    # a helper called whatever the flag says: the other branch starts a group too (under a launcher)
    ("distributed", "True", "env"),
    ("local_rank != -1", "args.distributed", "env"),
])
def test_a_process_group_started_in_helpers_under_the_spawn_flag_is_its_only_way(
        tmp_path: Path, fit_test: str, setup_test: str, style: str) -> None:
    script = tmp_path / "main.py"
    script.write_text(_HELPER_INIT.format(fit_test=fit_test, setup_test=setup_test), encoding="utf-8")
    assert _detect(script)[0] == style

_SPAWNER = """import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def training(index, args):
    device = index
    dist.init_process_group("nccl", world_size=args.world, rank={rank})
    torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).to(device), device_ids=[device])


def worker(index, args):
    if index == 0:
        training(index, args)
    else:
        training(index, args)


if __name__ == "__main__":
    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(None,))
"""


@pytest.mark.parametrize(("rank", "nodes", "refused"), [
    ("device", 2, True),  # the spawn index, through a call and a copy: every node claims ranks 0..n-1
    ("device", 1, False),  # right on one node
    ("int(os.environ['NODE_RANK']) * 8 + device", 2, False),  # the node's offset added
])
def test_a_spawn_index_passed_as_the_rank_is_refused_across_nodes(tmp_path: Path, rank: str, nodes: int,
                                                                   refused: bool) -> None:
    from orchestrator.doctor.feasibility import across_nodes

    script = tmp_path / "train.py"
    script.write_text(_SPAWNER.format(rank=rank), encoding="utf-8")
    launch = choose("auto", script)
    assert launch.style == "per-node"
    found = across_nodes(answered(launch, [], nodes, script), nodes, 8)
    assert [(f.code, f.line, f.severity) for f in found] == ([("DDP016", 9, "error")] if refused else [])
    if refused:
        assert "cannot work on 2 nodes" in found[0].message and "NODE_RANK" in found[0].fix


_FILLS_IN = """import argparse
import os
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()
{guard}
torch.cuda.set_device(args.local_rank)
"""


@pytest.mark.parametrize(("guard", "style"), [
    # GMFlow's way: the flag's value exported where the launcher set none; the local rank still comes from the flag
    ("if 'LOCAL_RANK' not in os.environ:\n    os.environ['LOCAL_RANK'] = str(args.local_rank)", "local-rank-arg"),
    # the launcher's value read where it set one: the script runs under torchrun as well
    ("if 'LOCAL_RANK' in os.environ:\n    args.local_rank = int(os.environ['LOCAL_RANK'])", "env"),
])
def test_an_export_of_the_flag_is_no_read_of_the_launchers_local_rank(tmp_path: Path, guard: str, style: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(_FILLS_IN.format(guard=guard), encoding="utf-8")
    assert _detect(script)[0] == style


def test_a_flag_only_exported_where_the_launcher_set_none_decides_nothing(tmp_path: Path) -> None:
    """Neural_Koopman_pooling: the flag's value goes into LOCAL_RANK where it is absent, and nothing else reads it:
    under orch or torchrun the launcher's LOCAL_RANK stays, so the script runs in their style (and no DDP015)."""
    script = tmp_path / "train.py"
    guard = "if 'LOCAL_RANK' not in os.environ:\n    os.environ['LOCAL_RANK'] = str(args.local_rank)"
    script.write_text(_FILLS_IN.format(guard=guard).replace("set_device(args.local_rank)", "set_device(0)"),
                      encoding="utf-8")
    assert _detect(script)[0] == "env"
    assert "DDP015" not in [f.code for f in check_file(script)]


@pytest.mark.parametrize(("nodes", "errors"), [(1, []), (2, [45])])
def test_a_master_from_a_flag_is_the_users_to_pass_on_one_node(tmp_path: Path, nodes: int, errors: list[int]) -> None:
    """BabyAI's fork: ``os.environ['MASTER_ADDR'] = args.master_addr`` with ``--master_addr`` defaulting to
    ``localhost``: on one node the user passes the flag or meets on the loopback (a warning); across nodes orch's
    address cannot be handed in as a flag, so it blocks as a constant does."""
    script = tmp_path / "multigpu.py"
    script.write_text(WIKI.read_text(encoding="utf-8").replace("'10.57.23.164'", "args.master_addr").replace(
        "    args = parser.parse_args()", "    parser.add_argument('--master_addr', default='localhost')\n"
        "    args = parser.parse_args()"), encoding="utf-8")
    found = check_file(script)
    left = answered(detect(read(script)), found, nodes)
    assert [f.line for f in left if f.severity == "error" and f.line == 45] == errors
    assert 45 in {f.line for f in left if f.code == "DDP008"}  # still said, as a warning on one node


TORCHRUN_LOOPBACK = """\
import os

import torch
import torch.distributed as dist

os.environ["MASTER_ADDR"] = {address}
os.environ["MASTER_PORT"] = "29500"
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda(), device_ids=[local_rank])
"""


@pytest.mark.parametrize(("address", "nodes", "errors"), [
    ('"127.0.0.1"', 2, [6]), ('"localhost"', 3, [6]), ('"127.0.0.1"', 1, []), ("os.environ['HEAD_NODE']", 2, []),
])
def test_a_loopback_master_written_over_the_launchers_fails_across_nodes_in_any_style(
        tmp_path: Path, address: str, nodes: int, errors: list[int]) -> None:
    """EmotionNet's ``MASTER_ADDR = "127.0.0.1"`` under torchrun: every node's ranks look for rank 0 on their own
    machine. The constant port is torchrun's to clash with, not a node's to miss (a warning); an address from
    elsewhere is not known to be one machine's."""
    script = tmp_path / "main_ddp.py"
    script.write_text(TORCHRUN_LOOPBACK.format(address=address), encoding="utf-8")
    launch = detect(read(script))
    left = answered(launch, check_file(script), nodes, script)
    assert launch.style == "env"
    assert [f.line for f in left if f.severity == "error"] == errors
    assert all(f"cannot work on {nodes} nodes" in f.message and "--nodes 1" in f.fix for f in left
               if f.severity == "error")


def test_a_loopback_master_a_helper_is_handed_fails_across_nodes(tmp_path: Path) -> None:
    """EmotionNet's own form: ``ddp_setup(local_rank, world_size, master_addr="127.0.0.1")``, whose helper writes
    ``os.environ["MASTER_ADDR"] = master_addr`` (``source.passedvalues``); an address from the environment does not."""
    (tmp_path / "utils.py").write_text(
        "import os\n\nimport torch.distributed as dist\n\n\ndef ddp_setup(rank, world_size, master_addr='localhost'):\n"
        "    os.environ['MASTER_ADDR'] = master_addr\n    dist.init_process_group('nccl', rank=rank, "
        "world_size=world_size)\n", encoding="utf-8")
    script = tmp_path / "main_ddp.py"
    for address, errors in (("'127.0.0.1'", [7]), ("os.environ['HEAD_NODE']", [])):
        script.write_text("import os\n\nfrom utils import ddp_setup\n\nddp_setup(int(os.environ['RANK']), "
                          f"int(os.environ['WORLD_SIZE']), master_addr={address})\n", encoding="utf-8")
        left = answered(detect(read(script)), _check_file(script), 2, script)
        assert [(Path(f.file).name, f.line) for f in left if f.severity == "error"] == [
            ("utils.py", line) for line in errors]
