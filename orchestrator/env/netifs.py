"""Which network interfaces a socket-interface variable selects (pure): NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME.

A cluster's ``env`` names its nodes' interfaces (``NCCL_SOCKET_IFNAME: ib0``). ``orch run`` hands that ``env`` to
ranks on the user's own machine, where every rank meets on 127.0.0.1; where the machine has none of the named
interfaces, the backend stops at its first contact: NCCL with "Bootstrap : no socket interface found", gloo with
"Unable to find address for: ib0". :func:`unselected` names the variables that would do that, so a local run
leaves them out (``orchestrator.local.plan``); the cluster's own tasks still get them.

The rules are the libraries': NCCL takes a comma-separated list of name prefixes, ``=`` before the list for exact
names, ``^`` for names to leave out (the rest are used); gloo takes exact names and opens a device on each, so one
missing name fails.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

NCCL_IFNAME = "NCCL_SOCKET_IFNAME"
GLOO_IFNAME = "GLOO_SOCKET_IFNAME"


def _nccl_selects(value: str, interfaces: Collection[str]) -> bool:
    spec = value.strip()
    exclude = spec.startswith("^")
    spec = spec.removeprefix("^")
    exact = spec.startswith("=")
    spec = spec.removeprefix("=")
    items = [item.strip() for item in spec.split(",") if item.strip()]

    def named(interface: str) -> bool:
        return any(interface == item if exact else interface.startswith(item) for item in items)

    return any(named(i) != exclude for i in interfaces)


def _gloo_selects(value: str, interfaces: Collection[str]) -> bool:
    return all(name.strip() in interfaces for name in value.split(",") if name.strip())


SELECTS: dict[str, Callable[[str, Collection[str]], bool]] = {NCCL_IFNAME: _nccl_selects, GLOO_IFNAME: _gloo_selects}


def selects(name: str, value: str, interfaces: Collection[str]) -> bool:
    """Whether variable ``name`` set to ``value`` leaves the library an interface of ``interfaces`` to use. An empty
    value is the library's default choice (True)."""
    if not value.strip():
        return True
    return SELECTS[name](value, interfaces)


def unselected(env: Mapping[str, str], interfaces: Collection[str]) -> dict[str, str]:
    """The socket-interface variables of ``env`` that select none of ``interfaces`` (a machine's), with their values."""
    return {name: value for name, value in env.items() if name in SELECTS and not selects(name, value, interfaces)}
