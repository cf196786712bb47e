"""A project that reads its rank, its node's index or its world size from an MPI launcher's variables alone
(mpirun's ``OMPI_COMM_WORLD_RANK``, PMI's ``PMI_RANK``, MVAPICH's ``MV2_COMM_WORLD_RANK``) as a fact
(orchestrator/launchstyles/facts.py), and what the doctor makes of it across nodes (a DDP016 error, with the fix:
orch's launcher and torchrun set none of them); nothing where the script falls back to the launcher's variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor.feasibility import across_nodes
from orchestrator.doctor.launchstyle import answered
from orchestrator.launchstyles import read
from orchestrator.spec.launch import Launch

_SPAWNER = """\
import os
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(index, args):
    dist.init_process_group("nccl", init_method=args.url, rank=args.node * 8 + index, world_size=args.world)


def main(args):
    {reading}
    mp.spawn(worker, nprocs=8, args=(args,))
"""


@pytest.mark.parametrize("reading", [
    'args.node = int(os.environ["OMPI_COMM_WORLD_RANK"])',
    'args.node = int(os.getenv("PMI_RANK", 0))',
    'args.node = int(os.environ.get("MV2_COMM_WORLD_RANK", "0"))'])
def test_a_node_index_from_an_mpi_launcher_alone_is_refused_across_nodes(tmp_path: Path, reading: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SPAWNER.format(reading=reading), encoding="utf-8")
    facts = read(script)
    assert facts.mpi_only is not None and facts.mpi_only[:2] == (str(script), 11)
    [error] = across_nodes(answered(Launch(style="per-node"), [], 2, script), 2, 8)
    assert (error.code, error.severity, error.line) == ("DDP016", "error", 11)
    assert "MPI launcher" in error.message and "os.environ.get('RANK'" in error.fix
    assert answered(Launch(style="per-node"), [], 1, script) == []  # one node: facts are not read for it


@pytest.mark.parametrize("fallback", [
    'args.node = int(os.environ.get("NODE_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", 0)))',
    'args.node = int(os.environ["OMPI_COMM_WORLD_RANK"]) if "OMPI_COMM_WORLD_RANK" in os.environ else '
    'int(os.environ["SLURM_NODEID"])'])
def test_a_fallback_to_the_launchers_variables_is_no_fact(tmp_path: Path, fallback: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(_SPAWNER.format(reading=fallback), encoding="utf-8")
    assert read(script).mpi_only is None
    assert answered(Launch(style="per-node"), [], 2, script) == []


def test_a_helper_reading_rank_beside_the_mpi_variables_is_no_fact(tmp_path: Path) -> None:
    (tmp_path / "dist_utils.py").write_text(
        "import os\n\n\ndef ranks():\n    if 'OMPI_COMM_WORLD_RANK' in os.environ:\n"
        "        return int(os.environ['OMPI_COMM_WORLD_RANK'])\n    return int(os.environ['RANK'])\n",
        encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\nfrom dist_utils import ranks\n\n"
                      "dist.init_process_group('nccl', rank=ranks())\n", encoding="utf-8")
    assert read(script).mpi_only is None


def test_another_branch_whose_group_reads_rank_itself_is_no_fact(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import os\nimport torch.distributed as dist\n\n\ndef setup(args):\n"
                      "    if args.platform == 'mpi':\n        rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
                      "        dist.init_process_group('nccl', init_method=args.url, rank=rank, world_size=2)\n"
                      "    else:\n        dist.init_process_group('nccl')\n", encoding="utf-8")
    assert read(script).mpi_only is None
    script.write_text(script.read_text().replace("dist.init_process_group('nccl')\n", "pass\n"), encoding="utf-8")
    assert read(script).mpi_only is not None


_MPI4PY = """import os
import torch
import torch.distributed as dist
from mpi4py import MPI


def setup(args):
    rank = MPI.COMM_WORLD.Get_rank()
    {export}
    torch.cuda.set_device(rank % 8)
    dist.init_process_group("nccl", init_method="env://")
"""


@pytest.mark.parametrize(("export", "refused"), [
    # VDVAE's way: mpi4py's world written over the launcher's RANK/WORLD_SIZE, the group reads the script's values
    ('os.environ["RANK"] = str(rank)\n    os.environ["WORLD_SIZE"] = str(MPI.COMM_WORLD.Get_size())', True),
    # the launcher's RANK read too: the group joins with the launcher's ranks
    ('rank = int(os.environ.get("RANK", rank))', False),
])
def test_a_world_from_mpi4py_alone_is_refused_across_nodes(tmp_path: Path, export: str, refused: bool) -> None:
    script = tmp_path / "train.py"
    script.write_text(_MPI4PY.format(export=export), encoding="utf-8")
    facts = read(script)
    assert (facts.mpi_only is not None) is refused
    errors = across_nodes(answered(Launch(), [], 2, script), 2, 8)
    assert [(e.code, e.severity, e.line) for e in errors] == ([("DDP016", "error", 8)] if refused else [])


def test_the_mpi_backends_own_branch_is_no_fact(tmp_path: Path) -> None:
    """``if args.backend == 'mpi':`` reads mpirun's rank: that backend runs only under mpirun, which sets it; the
    default backend's side takes the rank orch passes (BNS-GCN's ``init_processes``)."""
    script = tmp_path / "train.py"
    script.write_text("import os\nimport torch.distributed as dist\n\n\ndef init_processes(rank, size, args):\n"
                      "    if args.backend == 'mpi':\n        rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
                      "    dist.init_process_group(args.backend, rank=rank, world_size=size)\n", encoding="utf-8")
    assert read(script).mpi_only is None
    script.write_text(script.read_text().replace("args.backend == 'mpi'", "args.launcher == 'mpi'"), encoding="utf-8")
    assert read(script).mpi_only is not None


@pytest.mark.parametrize("reading", [
    "    is_rank_zero = args.mpi_plugin and int(os.environ.get('PMI_RANK')) == 0\n",
    "    if args.use_mpi:\n        rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n",
    "    rank = int(os.environ['OMPI_COMM_WORLD_RANK']) if args.mpi else 0\n"])
def test_a_switch_named_for_mpi_keeps_its_side_out(tmp_path: Path, reading: str) -> None:
    """A read behind a switch named for MPI (OpenFold's ``args.mpi_plugin and int(os.environ.get("PMI_RANK")) ==
    0``, a store_true flag) happens only when the switch is on, under mpirun: no fact, so no refusal across nodes;
    the same read behind another switch (``args.verbose``) is one."""
    script = tmp_path / "train.py"
    script.write_text("import os\nimport torch.distributed as dist\n\n\ndef main(args, rank):\n" + reading
                      + "    dist.init_process_group('nccl', rank=rank, world_size=8)\n", encoding="utf-8")
    assert read(script).mpi_only is None
    errors = across_nodes(answered(Launch(), [], 2, script), 2, 8)
    assert not [e for e in errors if e.code == "DDP016"]
    for switch in ("args.mpi_plugin", "args.use_mpi", "args.mpi"):
        script.write_text(script.read_text().replace(switch, "args.verbose"), encoding="utf-8")
    assert read(script).mpi_only is not None


def test_the_other_side_of_an_mpi_switch_is_still_read(tmp_path: Path) -> None:
    """``if not args.use_mpi:`` reads on the side where the switch is off, the side orch's run takes."""
    script = tmp_path / "train.py"
    script.write_text("import os\nimport torch.distributed as dist\n\n\ndef main(args, rank):\n"
                      "    if not args.use_mpi:\n        rank = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
                      "    dist.init_process_group('nccl', rank=rank, world_size=8)\n", encoding="utf-8")
    assert read(script).mpi_only is not None
