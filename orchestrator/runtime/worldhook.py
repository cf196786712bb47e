"""A script's ``init_process_group``, watched: after each successful call, say which world this rank joined.

:func:`watch_world` wraps ``torch.distributed.distributed_c10d.init_process_group`` (the function every
other name of it is bound to: ``torch.distributed.init_process_group``, ``init_device_mesh``'s) with a
function of the same signature and behaviour that, once the call succeeded, calls
``on_join(size, rank, backend, at_orch)``: the default group's world size, this rank's rank in it, its
backend, and whether the rendezvous was orch's (``env://`` or no ``init_method`` with MASTER_ADDR and
MASTER_PORT as orch set them, a ``tcp://`` URL or a TCPStore at that address; None: a store orch cannot
place). ``new_group`` (subgroups) does not go through it. What ``on_join`` raises, the script's call raises.

When torch is not imported yet, nothing is imported now: a finder on ``sys.meta_path`` wraps the function as
soon as ``distributed_c10d`` has been executed, before any module binds its name (the script's own start-up,
its environment variables read at ``import torch``, stay as without orch). :func:`after_exec` is that finder's
door: each hook on the same module (this one, :mod:`orchestrator.runtime.pgtimeout`'s) runs, in the order given.

A per-node script starts its ranks itself (``torch.multiprocessing.spawn``/``start_processes``: fresh
interpreters this process's hooks do not reach). :func:`first_in_spawned` wraps ``start_processes`` so that each
process it starts runs a given set-up (picklable: the bound of pgtimeout, the world watch of a per-node script)
before the script's own function.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import inspect
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from orchestrator.env.taskenv import is_loopback

C10D = "torch.distributed.distributed_c10d"
SPAWN = "torch.multiprocessing.spawn"
OnJoin = Callable[[int, int, str, "bool | None"], None]
WATCHED = "__orch_world_watch__"  # set on the wrapper: a second watch_world does not wrap it again


def watch_world(on_join: OnJoin, *, master_addr: str, master_port: int) -> None:
    """Wrap ``init_process_group`` now (torch is loaded) or as soon as torch loads it."""
    orch = (master_addr, master_port)
    module = sys.modules.get(C10D)
    if module is not None:
        _wrap(module, on_join, orch)
    else:
        after_exec(C10D, lambda loaded: _wrap(loaded, on_join, orch))


def watch_spawned_world(on_join: OnJoin, *, master_addr: str, master_port: int) -> None:
    """Each process ``torch.multiprocessing`` starts from here on watches its own world (``on_join``: picklable)."""
    first_in_spawned(functools.partial(watch_world, on_join, master_addr=master_addr, master_port=master_port),
                     WATCHED)


def first_in_spawned(setup: Callable[[], object], marker: str) -> None:
    """Every process ``torch.multiprocessing`` starts (``spawn`` calls ``start_processes``) runs ``setup()``
    (picklable) before its function; ``marker`` names this set-up on the wrapper, so a second call with the
    same marker does not wrap it again. Now, or as soon as torch loads it."""

    def wrap(spawn: ModuleType) -> None:
        original = spawn.start_processes
        if getattr(original, marker, False):
            return

        @functools.wraps(original)
        def start_processes(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return original(functools.partial(_set_up_first, setup, fn), *args, **kwargs)

        setattr(start_processes, marker, True)
        rebind(original, start_processes, "start_processes")

    module = sys.modules.get(SPAWN)
    if module is not None:
        wrap(module)
    else:
        after_exec(SPAWN, wrap)


def _set_up_first(setup: Callable[[], object], fn: Callable[..., Any], *args: Any) -> Any:
    """A spawned process (picklable: by name): the set-up, then the script's own function."""
    setup()
    return fn(*args)


def after_exec(name: str, then: Callable[[ModuleType], None]) -> None:
    """``then(module)`` right after the module ``name`` is executed (it is not loaded yet): one finder per
    module, which runs every hook given for it (a second finder for the same module would never be asked)."""
    for finder in sys.meta_path:
        if isinstance(finder, AfterExec) and finder.name == name:
            finder.hooks.append(then)
            return
    sys.meta_path.insert(0, AfterExec(name, then))


def _wrap(c10d: ModuleType, on_join: OnJoin, orch: tuple[str, int]) -> None:
    original = c10d.init_process_group
    if getattr(original, WATCHED, False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        try:
            bound = signature.bind(*args, **kwargs).arguments
        except TypeError:  # (the call succeeded, so it bound)
            bound = {}
        at_orch = at_orch_rendezvous(bound.get("init_method"), bound.get("store"), orch)
        on_join(c10d.get_world_size(), c10d.get_rank(), _backend(c10d), at_orch)
        return result

    setattr(init_process_group, WATCHED, True)
    rebind(original, init_process_group, "init_process_group")


def rebind(original: object, wrapper: object, attr: str) -> None:
    """Every torch module's name ``attr`` for ``original`` (torch.distributed's, for one) now means ``wrapper``."""
    for name, module in list(sys.modules.items()):
        if name.startswith("torch") and getattr(module, attr, None) is original:
            setattr(module, attr, wrapper)


def _backend(c10d: ModuleType) -> str:
    """The default group's backend: ``gloo``, or per device (``cpu:gloo,cuda:nccl``) when none was named."""
    name = str(c10d.get_backend())
    if name == "undefined" and hasattr(c10d, "get_backend_config"):
        return str(c10d.get_backend_config())
    return name


def at_orch_rendezvous(init_method: object, store: object, orch: tuple[str, int]) -> bool | None:
    """Whether ``init_process_group``'s rendezvous was orch's MASTER_ADDR:MASTER_PORT (None: unknown)."""
    import os

    if store is not None:
        while hasattr(store, "underlying_store"):  # PrefixStore
            store = store.underlying_store
        host, port = getattr(store, "host", None), getattr(store, "port", None)
        return _same((host, port), orch) if isinstance(host, str) and isinstance(port, int) else None
    text = str(init_method) if init_method is not None else "env://"
    if text.startswith("env://"):
        return _same((os.environ.get("MASTER_ADDR", ""), os.environ.get("MASTER_PORT", "")), orch)
    if text.startswith("tcp://"):
        try:
            parts = urlsplit(text)
            return _same((parts.hostname or "", parts.port), orch)
        except ValueError:  # a port that is no number: not orch's
            return False
    return False  # file:// and the like: a rendezvous of its own


def _same(where: tuple[str, object], orch: tuple[str, int]) -> bool:
    host, port = where
    if str(port).strip() != str(orch[1]):
        return False
    wanted = orch[0].strip().strip("[]").lower()
    host = host.strip().strip("[]").lower()
    return host == wanted or (is_loopback(host) and is_loopback(wanted))


class AfterExec(importlib.abc.MetaPathFinder):
    """Runs its hooks right after the module ``name`` is executed (once; then leaves ``sys.meta_path``)."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.hooks = name, [then]

    def then(self, module: ModuleType) -> None:
        for hook in self.hooks:
            hook(module)

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self.then)
        return spec


class _Loader(importlib.abc.Loader):
    """The module's own loader, and ``then(module)`` after it ran (anything else: the loader's own)."""

    def __init__(self, loader: importlib.abc.Loader, then: Callable[[ModuleType], None]) -> None:
        self.loader, self.then = loader, then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.then(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... (inspect, linecache)
        return getattr(self.loader, name)
