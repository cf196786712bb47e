"""DDP021 (a file rendezvous in a temporary or local folder, or a file one rank writes there and every rank reads)
and DDP022 (a check that the run is on one node): read from the script, warnings as read (the layout decides:
``test_feasibility.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

MULTINODE = Path(__file__).resolve().parent / "fixtures" / "multinode"
_HEAD = "import os\nimport tempfile\nimport torch\nimport torch.distributed as dist\n"


def found(name: str) -> list[tuple[str, str, int]]:
    return [(f.code, f.severity, f.line) for f in check_file(MULTINODE / name) if f.code in ("DDP021", "DDP022")]


def codes(source: str) -> list[str]:
    return [f.code for f in check_source(_HEAD + source, "t.py") if f.code in ("DDP021", "DDP022")]


@pytest.mark.parametrize(("name", "expected"), [
    ("rdzv_tempdir_spawn.py", [("DDP021", "warning", 13)]),  # mkdtemp() in main, passed through mp.spawn's args
    ("rdzv_tmp_env.py", [("DDP021", "warning", 11)]),
    ("rdzv_shared_env.py", []),
    ("nnodes_raise.py", [("DDP022", "warning", 11)]),
    ("own_count_spawner.py", []),  # world_size = torch.cuda.device_count(): equal by construction
    ("weights_tmp_handoff.py", [("DDP021", "warning", 20)]),  # the load every rank runs of rank 0's /tmp save
])
def test_the_fixtures_read_as_expected(name: str, expected: list[tuple[str, str, int]]) -> None:
    assert found(name) == expected


def test_a_spawner_that_asserts_its_world_is_this_nodes_gpus() -> None:
    assert found("one_node_spawner.py") == [("DDP022", "warning", 23)]


@pytest.mark.parametrize("method", [
    'f"file://{tempfile.gettempdir()}/rdzv"',
    '"file://" + os.path.join(tempfile.mkdtemp(), "rdzv")',
    '"file:///dev/shm/rdzv"',
])
def test_a_file_rendezvous_in_a_local_folder(method: str) -> None:
    assert codes(f"dist.init_process_group('gloo', init_method={method})\n") == ["DDP021"]


def test_a_temporary_directory_entered_with_with() -> None:
    src = ("with tempfile.TemporaryDirectory() as tmp:\n"
           "    dist.init_process_group('gloo', init_method=f'file://{tmp}/rdzv', rank=0, world_size=1)\n")
    assert codes(src) == ["DDP021"]


@pytest.mark.parametrize("method", ['"env://"', '"tcp://10.0.0.1:23456"', 'f"file://{os.environ[\'SHARED\']}/r"',
                                    'tempfile.mkdtemp()'])
def test_other_rendezvous_are_not_ddp021(method: str) -> None:
    assert codes(f"dist.init_process_group('gloo', init_method={method})\n") == []


@pytest.mark.parametrize("check", [
    "assert nnodes == 1",
    "assert 1 == args.num_nodes",
    "assert int(os.environ['SLURM_NNODES']) < 2",
    "assert dist.get_world_size() == torch.cuda.device_count()",
    "assert int(os.environ['WORLD_SIZE']) <= torch.cuda.device_count()",
    "if world_size > torch.cuda.device_count():\n    raise ValueError('one node')",
    "if args.nnodes != 1:\n    sys.exit('single node only')",
    "assert args.local_rank == torch.distributed.get_rank()",  # the local rank is the global one on node 1 only
    "local_rank = int(os.environ['LOCAL_RANK'])\nassert dist.get_rank() == local_rank",
    "if int(os.environ['LOCAL_RANK']) != int(os.environ['RANK']):\n    raise RuntimeError('one node')",
    # MicroNet's: the GPUs this machine's CUDA_VISIBLE_DEVICES lists, through a name
    "devices = os.environ.get('CUDA_VISIBLE_DEVICES')\nn_gpus = len(devices.split(','))\n"
    "assert int(os.environ['WORLD_SIZE']) == n_gpus",
    # GenPercept's: Accelerate's num_processes is the world, whatever the Accelerator was made with
    "from accelerate import Accelerator\nnum_gpu = torch.cuda.device_count()\n"
    "accelerator = Accelerator(gradient_accumulation_steps=8 // num_gpu)\nassert num_gpu == accelerator.num_processes",
])
def test_a_one_node_check(check: str) -> None:
    assert codes(f"{check}\n") == ["DDP022"], check


@pytest.mark.parametrize("check", [
    "assert nnodes >= 1",
    "assert torch.cuda.device_count() >= args.gpus",
    "world_size = torch.cuda.device_count()\nassert world_size == torch.cuda.device_count()",
    "if nnodes > 1:\n    print('several nodes')",
    "assert world_size % torch.cuda.device_count() == 0",
    "assert args.local_rank == dist.get_rank() % torch.cuda.device_count()",  # the local rank from the global one
    "assert int(os.environ['LOCAL_RANK']) < torch.cuda.device_count()",
    "if args.local_rank == dist.get_rank():\n    raise RuntimeError('equal')",  # raises only when they are equal
    "assert int(os.environ['WORLD_SIZE']) == len(args.gpus.split(','))",  # a flag's list, not this machine's
    "assert args.num_processes == torch.cuda.device_count()",  # a flag of that name: a spawner's own count
])
def test_checks_that_hold_on_many_nodes_are_not_ddp022(check: str) -> None:
    assert codes(f"{check}\n") == [], check


def test_a_file_rendezvous_for_windows_only_is_not_ddp021() -> None:
    src = ("import sys\nif sys.platform == 'win32':\n"
           "    dist.init_process_group('gloo', init_method=f'file:///{tempfile.gettempdir()}/rdzv')\n"
           "else:\n    dist.init_process_group('nccl')\n")
    assert codes(src) == []


def test_a_file_rendezvous_on_the_linux_side_of_a_platform_test_is_ddp021() -> None:
    """StyleGAN-XL: ``if os.name == 'nt':`` a Windows ``file:///`` init, ``else:`` the Linux one, in a temporary
    folder: the cluster runs the ``else``."""
    src = ("import os\nif os.name == 'nt':\n    dist.init_process_group('gloo', init_method='file:///C:/rdzv')\n"
           "else:\n    dist.init_process_group('nccl', init_method=f'file://{tempfile.mkdtemp()}/rdzv')\n")
    assert codes(src) == ["DDP021"]


_HANDOFF = """\
def main(out):
    dist.init_process_group("nccl")
    model = torch.nn.Linear(2, 2)
    path = {path}
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
    dist.barrier()
    model.load_state_dict(torch.load(path, map_location="cpu"))
"""


@pytest.mark.parametrize(("path", "expected"), [
    ('os.path.join(tempfile.gettempdir(), "init.pt")', ["DDP021"]),
    ('"/dev/shm/init.pt"', ["DDP021"]),
    ('os.path.join(out, "init.pt")', []),  # the user's folder: may be shared
])
def test_a_file_one_rank_writes_in_a_local_folder_and_every_rank_reads(path: str, expected: list[str]) -> None:
    assert codes(_HANDOFF.format(path=path)) == expected


def test_a_file_every_rank_writes_itself_or_only_rank_zero_reads_is_no_handoff() -> None:
    source = _HANDOFF.format(path='"/tmp/init.pt"')
    guarded = "    if dist.get_rank() == 0:\n"
    assert codes(source.replace(f"{guarded}        torch.save", "    if True:\n        torch.save")) == []
    assert codes(source.replace("    model.load_state_dict", f"{guarded}        model.load_state_dict")) == []
