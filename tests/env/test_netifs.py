"""The interfaces NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME select on a machine (orchestrator/env/netifs.py), by the
libraries' rules: NCCL's prefixes, ``=`` exact names and ``^`` exclusions; gloo's exact names, every one needed."""

from __future__ import annotations

import pytest

from orchestrator.env.netifs import GLOO_IFNAME, NCCL_IFNAME, selects, unselected

LAPTOP = ["lo", "eth0", "docker0"]
NODE = ["lo", "eth0", "ib0", "ib1"]


@pytest.mark.parametrize(("value", "interfaces", "chosen"), [
    ("ib0", NODE, True), ("ib0", LAPTOP, False),
    ("ib", NODE, True), ("ib", LAPTOP, False),  # a prefix: ib0, ib1
    ("=ib", NODE, False), ("=ib0", NODE, True), ("=eth", LAPTOP, False),  # exact names
    ("ib0,eth0", LAPTOP, True), ("ib0, eth", LAPTOP, True),  # any of a list
    ("^docker,lo", LAPTOP, True), ("^lo", ["lo"], False), ("^=lo", ["lo", "lo2"], True), ("^lo", ["lo", "lo2"], False),
    ("", LAPTOP, True), ("  ", [], True),  # empty: NCCL's own choice
])
def test_nccl_socket_ifname(value: str, interfaces: list[str], chosen: bool) -> None:
    assert selects(NCCL_IFNAME, value, interfaces) is chosen


@pytest.mark.parametrize(("value", "interfaces", "chosen"), [
    ("eth0", LAPTOP, True), ("eth", LAPTOP, False), ("ib0", LAPTOP, False),
    ("eth0,lo", LAPTOP, True), ("eth0,ib0", LAPTOP, False),  # gloo opens a device on each: one missing fails
    ("", LAPTOP, True),
])
def test_gloo_socket_ifname(value: str, interfaces: list[str], chosen: bool) -> None:
    assert selects(GLOO_IFNAME, value, interfaces) is chosen


def test_unselected_names_only_the_socket_variables_that_choose_nothing() -> None:
    env = {NCCL_IFNAME: "ib0", GLOO_IFNAME: "eth0", "NCCL_IB_HCA": "mlx5", "OMP_NUM_THREADS": "1"}
    assert unselected(env, LAPTOP) == {NCCL_IFNAME: "ib0"}
    assert unselected(env, NODE) == {}
