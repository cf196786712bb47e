"""Device selection and the duplicate (host, GPU) check: pure functions, tested with tables."""

from __future__ import annotations

import pytest

from orchestrator.env.devices import (
    CPU,
    check_unique_devices,
    find_shared_devices,
    host_name,
    num_threads,
    parse_visible_devices,
    select_device,
    task_has_gpu,
)
from orchestrator.errors import DistEnvError


@pytest.mark.parametrize(("value", "expected"), [
    (None, None),
    ("", []),
    ("-1", []),
    ("0", ["0"]),
    ("0,1,2,3", ["0", "1", "2", "3"]),
    (" 2, 3 ", ["2", "3"]),
    ("GPU-1234abcd,GPU-5678ef00", ["GPU-1234abcd", "GPU-5678ef00"]),
    ("MIG-aaaa", ["MIG-aaaa"]),
])
def test_parse_visible_devices(value: str | None, expected: list[str] | None) -> None:
    assert parse_visible_devices(value) == expected


# (cuda available, device_count, CUDA_VISIBLE_DEVICES, local_rank, local_world_size) -> (name, physical)
SELECTION = [
    # no CUDA: CPU and gloo, whatever the variables say
    (False, 0, None, 0, 1, "cpu", None),
    (False, 0, "0,1", 1, 2, "cpu", None),
    (True, 0, "", 0, 2, "cpu", None),
    # one visible GPU per task (srun --gpus-per-task=1): always cuda:0, physical id from the variable
    (True, 1, "3", 0, 4, "cuda:0", "3"),
    (True, 1, "2", 3, 4, "cuda:0", "2"),
    (True, 1, None, 0, 1, "cuda:0", "0"),
    # all of the node's GPUs visible: the local rank picks
    (True, 4, "0,1,2,3", 0, 4, "cuda:0", "0"),
    (True, 4, "0,1,2,3", 3, 4, "cuda:3", "3"),
    (True, 2, "2,3", 1, 2, "cuda:1", "3"),  # second job on the node got GPUs 2 and 3
    (True, 8, None, 5, 8, "cuda:5", "5"),  # variable unset: indices are physical
    (True, 8, "0,1,2,3,4,5,6,7", 2, 4, "cuda:2", "2"),  # more GPUs than ranks: local rank
    (True, 2, "GPU-a,GPU-b", 1, 2, "cuda:1", "GPU-b"),
]


@pytest.mark.parametrize(("cuda", "count", "visible", "local_rank", "local_world", "name", "physical"),
                         SELECTION)
def test_select_device(cuda: bool, count: int, visible: str | None, local_rank: int, local_world: int,
                       name: str, physical: str | None) -> None:
    choice = select_device(cuda_available=cuda, device_count=count, visible=visible, rank=7,
                           local_rank=local_rank, local_world_size=local_world)
    assert choice.name == name
    assert choice.physical == physical
    assert choice.backend == ("nccl" if name.startswith("cuda") else "gloo")


def test_cpu_choice_is_gloo() -> None:
    assert CPU.backend == "gloo" and CPU.name == "cpu" and "gloo" in CPU.describe()


@pytest.mark.parametrize(("count", "visible", "local_rank", "local_world"), [
    (2, "0,1", 2, 4),  # 2 GPUs, 4 ranks on the node
    (3, "0,1,2", 0, 4),
    (2, None, 1, 8),
])
def test_fewer_gpus_than_local_ranks_is_an_error(count: int, visible: str | None, local_rank: int,
                                                 local_world: int) -> None:
    with pytest.raises(DistEnvError) as info:
        select_device(cuda_available=True, device_count=count, visible=visible, rank=5,
                      local_rank=local_rank, local_world_size=local_world)
    message = info.value.message
    assert "rank 5" in message and f"sees {count} GPUs" in message and f"of {local_world}" in message
    assert info.value.hint and "GPU" in info.value.hint


# placements[rank] = (host, physical GPU or None) -> the shared pairs
DUPLICATES = [
    ([], {}),
    ([("n1", None), ("n1", None)], {}),  # CPU ranks never conflict
    ([("n1", "0"), ("n1", "1"), ("n2", "0"), ("n2", "1")], {}),
    ([("n1", "0"), ("n1", "0")], {("n1", "0"): [0, 1]}),
    ([("n1", "0"), ("n2", "0"), ("n1", "1"), ("n2", "0")], {("n2", "0"): [1, 3]}),
    ([("a", "GPU-x"), ("a", "GPU-x"), ("a", "GPU-x")], {("a", "GPU-x"): [0, 1, 2]}),
]


@pytest.mark.parametrize(("placements", "shared"), DUPLICATES)
def test_find_shared_devices(placements: list[tuple[str, str | None]],
                             shared: dict[tuple[str, str], list[int]]) -> None:
    assert find_shared_devices(placements) == shared


def test_check_unique_devices_names_ranks_host_and_gpu() -> None:
    check_unique_devices([("n1", "0"), ("n1", "1")])
    with pytest.raises(DistEnvError) as info:
        check_unique_devices([("node1", "0"), ("node2", "0"), ("node1", "1"), ("node2", "0")])
    assert info.value.message == "two ranks share a GPU: ranks 1, 3 all use GPU 0 on node2"
    assert info.value.hint


@pytest.mark.parametrize(("environ", "expected"), [
    ({"SLURMD_NODENAME": "node2"}, "node2"),
    ({}, "fallback-host"),
    ({"SLURMD_NODENAME": ""}, "fallback-host"),
])
def test_host_name_prefers_slurm_node_name(environ: dict[str, str], expected: str) -> None:
    assert host_name(environ, "fallback-host") == expected


@pytest.mark.parametrize(("requested", "cpus", "expected"),
                         [(None, 4, 4), (2, 8, 2), (None, 1, 1), (1, 16, 1)])
def test_num_threads(requested: int | None, cpus: int, expected: int) -> None:
    assert num_threads(requested, cpus) == expected


@pytest.mark.parametrize(("environ", "slurm_gpus", "has_nvidia", "expected"), [
    ({"CUDA_VISIBLE_DEVICES": "0"}, None, True, True),
    ({"CUDA_VISIBLE_DEVICES": ""}, None, True, False),  # orch run --cpu
    ({"CUDA_VISIBLE_DEVICES": "0"}, 0, True, False),  # a Slurm job that asked for no GPUs
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, 2, False, False),  # no NVIDIA driver: GPUs announced, none usable
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, 2, True, True),
])
def test_whether_a_task_has_a_gpu(environ: dict[str, str], slurm_gpus: int | None, has_nvidia: bool,
                                   expected: bool) -> None:
    assert task_has_gpu(environ, slurm_gpus=slurm_gpus, has_nvidia=has_nvidia) is expected
