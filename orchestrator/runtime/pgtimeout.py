"""A script's process group, bounded: ``init_process_group`` gets ``launcher.collective_timeout`` unless the
script chose its own ``timeout=``, so a rank that stops ends the job in seconds, not in torch's 30 minutes.

:func:`bound_timeout` wraps ``torch.distributed.distributed_c10d.init_process_group`` (every name bound to it,
as :mod:`orchestrator.runtime.worldhook` does, through the same finder when torch is not loaded yet):

- a call without ``timeout=`` (or ``None``, or exactly torch's own default: 30 minutes, NCCL's 10, which
  Lightning's ``DDPStrategy``, Fabric, Accelerate's ``InitProcessGroupKwargs`` and HF's ``ddp_timeout`` pass
  when the user set nothing; orch cannot tell it from a user who chose that value) joins with the longer of
  ``init_timeout`` and ``collective_timeout`` (ranks reach the rendezvous unevenly), then the default group's
  timeout becomes ``collective_timeout`` (``set_timeout``) for every later collective;
- any other ``timeout=`` is the script's and is left alone.

``on_applied(seconds, orchs)`` says which timeout is in force after each successful call (``orchs``: False
when it is the script's own). Subgroups (``new_group``) keep their own timeouts.

A per-node script spawns its ranks itself (``torch.multiprocessing.spawn``/``start_processes``: fresh
interpreters this process's hook does not reach): each process it starts installs the same bound before its
function runs (:func:`orchestrator.runtime.worldhook.first_in_spawned`).
"""

from __future__ import annotations

import datetime
import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from orchestrator.runtime.worldhook import C10D, after_exec, first_in_spawned, rebind

BOUND = "__orch_timeout_bound__"  # set on a wrapper: a second bound_timeout does not wrap it again
OnApplied = Callable[[int, bool], None]


@dataclass(frozen=True)
class Bound:
    """The waits a script's process group gets (seconds): joining, then every collective."""

    init_s: int
    collective_s: int

    @property
    def join_s(self) -> int:
        return max(self.init_s, self.collective_s)


def bound_timeout(bound: Bound, on_applied: OnApplied | None = None) -> None:
    """Bound ``init_process_group`` (and what ``torch.multiprocessing`` spawns) now, or as soon as torch loads it."""
    module = sys.modules.get(C10D)
    if module is not None:
        _wrap_init(module, bound, on_applied)
    else:
        after_exec(C10D, lambda c10d: _wrap_init(c10d, bound, on_applied))
    first_in_spawned(functools.partial(bound_timeout, bound), BOUND)


def torch_default(timeout: object) -> bool:
    """Whether ``timeout`` is torch's own default (what frameworks pass when the user chose none)."""
    from torch.distributed import constants

    return timeout in {constants.default_pg_timeout, getattr(constants, "default_pg_nccl_timeout", None)} - {None}


def _wrap_init(c10d: ModuleType, bound: Bound, on_applied: OnApplied | None) -> None:
    original = c10d.init_process_group
    if getattr(original, BOUND, False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        try:
            call = signature.bind(*args, **kwargs)
        except TypeError:  # torch says what is wrong with the call
            return original(*args, **kwargs)
        given = call.arguments.get("timeout")
        if given is not None and not torch_default(given):  # the script's own choice
            result = original(*args, **kwargs)
            if on_applied is not None:
                on_applied(int(given.total_seconds()) if isinstance(given, datetime.timedelta) else 0, False)
            return result
        call.arguments["timeout"] = datetime.timedelta(seconds=bound.join_s)
        result = original(*call.args, **call.kwargs)
        setter = getattr(c10d, "set_timeout", None) or c10d._set_pg_timeout  # torch < 2.6: the private name
        setter(datetime.timedelta(seconds=bound.collective_s))
        if on_applied is not None:
            on_applied(bound.collective_s, True)
        return result

    setattr(init_process_group, BOUND, True)
    rebind(original, init_process_group, "init_process_group")
