"""Process group setup and teardown, reductions that return floats, stop votes, sync checks."""

from __future__ import annotations

import datetime
import hashlib
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import torch
import torch.distributed as dist
from torch import nn

from orchestrator.env.devices import DeviceChoice
from orchestrator.errors import DistEnvError, OrchError, RendezvousTimeout
from orchestrator.runtime.rendezvous import is_loopback, loopback_store
from orchestrator.task.outcome import COLLECTIVE_TIMEOUT, INIT_TIMEOUT, RECORDER
from orchestrator.task.preempt import PreemptFlag

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Dist:
    """This rank's place in the job and the groups it talks through."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    choice: DeviceChoice
    timeout: int  # seconds: rendezvous, start-up and checkpoints (launcher.init_timeout)
    collective_timeout: int  # seconds: collectives while training (launcher.collective_timeout)
    # Control traffic (stop votes, objects, barriers) goes through a CPU gloo group, so it never
    # forces a GPU synchronisation; on CPU that is simply the default group.
    control: Any = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def set_timeout(self, seconds: int, setting: str = COLLECTIVE_TIMEOUT) -> None:
        """The wait of every later collective, on the default and the control group (``setting``:
        the launcher setting it comes from, for the task's outcome record)."""
        RECORDER.timeout_in_force(seconds, setting)
        delta = datetime.timedelta(seconds=seconds)
        for group in (None, self.control) if self.control is not None else (None,):
            _SET_TIMEOUT(delta, group)

    @contextmanager
    def patient(self) -> Iterator[None]:
        """Within: the long start-up timeout (e.g. while rank 0 writes a checkpoint and the others
        wait at the barrier); after: the short training timeout again, so a stuck rank is found fast."""
        self.set_timeout(self.timeout, INIT_TIMEOUT)
        try:
            yield
        finally:
            self.set_timeout(self.collective_timeout)


# torch >= 2.6 has the public name; older releases only the private one.
_SET_TIMEOUT = getattr(dist.distributed_c10d, "set_timeout", None) or dist.distributed_c10d._set_pg_timeout


@contextmanager
def process_group(*, rank: int, world_size: int, local_rank: int, master_addr: str, master_port: int,
                  choice: DeviceChoice, timeout: int, collective_timeout: int, store: Any = None) -> Iterator[Dist]:
    """``init_process_group`` on entry, ``destroy_process_group`` exactly once on exit.

    Collectives start with ``timeout`` (start-up is slow and uneven across ranks); the trainer
    switches to ``collective_timeout`` when training starts (``Dist.set_timeout``/``patient``). ``store``:
    the generation's store of an in-process restart (restarts/worker.py) instead of MASTER_PORT's own."""
    device = torch.device(choice.name)
    if choice.kind == "cuda":
        # Before init_process_group and before any other CUDA call: no rank touches GPU 0 by accident.
        torch.cuda.set_device(device)
    delta = datetime.timedelta(seconds=timeout)
    try:
        # one machine: the store listens on loopback only (orch.runtime.rendezvous); else tcp:// as usual
        where: dict[str, Any] = (
            {"store": loopback_store(master_addr, master_port, rank=rank, world_size=world_size, timeout=delta)}
            if is_loopback(master_addr) else {"init_method": f"tcp://{_host_for_url(master_addr)}:{master_port}"}
        ) if store is None else {"store": store}
        dist.init_process_group(
            backend=choice.backend, rank=rank, world_size=world_size, timeout=delta,
            device_id=device if choice.kind == "cuda" else None, **where,
        )
    except (dist.DistError, OSError) as exc:
        raise init_error(exc, rank=rank, master_addr=master_addr, master_port=master_port,
                         timeout=timeout) from None
    aborted = False
    try:
        control = dist.new_group(backend="gloo", timeout=delta) if choice.backend != "gloo" else None
        # init_process_group returns on a rank once its own side of the mesh is up; a rank leaving right
        # after (a job refused at build) would close it under a peer still connecting, which then fails
        # with "Connection closed by peer" instead of its own refusal. One barrier: every rank is in.
        dist.barrier(group=control if isinstance(control, dist.ProcessGroup) else None)
        yield Dist(rank=rank, world_size=world_size, local_rank=local_rank, device=device, choice=choice,
                   timeout=timeout, collective_timeout=collective_timeout, control=control)
    except BaseException:
        # an in-process restart leaves a failed NCCL world without waiting on its collectives in flight
        aborted = store is not None and choice.backend == "nccl" and abort_world()
        raise
    finally:
        if not aborted:
            dist.destroy_process_group()


def abort_world() -> bool:
    """Abort every process group (NCCL: its communicators), forgotten as ``destroy_process_group`` would;
    False when this torch has no ``_abort_process_group`` or it failed (then the caller destroys them)."""
    abort = getattr(dist.distributed_c10d, "_abort_process_group", None)
    if abort is None:
        return False
    try:
        abort()
    except Exception as exc:  # a failed world: destroy_process_group is the way out left
        log.warning("aborting the process groups failed: %s", exc)
        return False
    return True


def _host_for_url(addr: str) -> str:
    return f"[{addr}]" if ":" in addr and not addr.startswith("[") else addr


def init_error(exc: BaseException, *, rank: int, master_addr: str, master_port: int,
               timeout: int) -> OrchError:
    """A rendezvous failure, said plainly: port taken on rank 0, or rank 0 unreachable."""
    text = str(exc)
    where = f"{master_addr}:{master_port}"
    if "EADDRINUSE" in text or "address already in use" in text.lower():
        return DistEnvError(
            f"rank {rank} cannot listen on {where}: the port is already in use",
            hint="another job on this node uses the same MASTER_PORT; resubmit (the port is derived "
                 "from the job id) or change launcher.port_range in cluster.yaml",
        )
    if "timed out" in text.lower() or "timeout" in text.lower():
        return RendezvousTimeout(
            f"rank {rank} could not reach rank 0 at {where} within {timeout} s",
            hint="check that rank 0 started (its log) and that MASTER_ADDR resolves from every node; "
                 "launcher.init_timeout in cluster.yaml sets the wait",
            timeout_s=timeout,
        )
    return DistEnvError(f"rank {rank} failed to join the process group at {where}: {text.splitlines()[0]}",
                        hint="check MASTER_ADDR/MASTER_PORT and the network between the nodes")


_TIMEOUT_MS_RE = re.compile(r"(?:timed out waiting |timeout\(ms\)=|timeout of |after )(\d+)\s*ms", re.IGNORECASE)


def applied_timeout(text: str) -> int | None:
    """The timeout (seconds) a collective error names: gloo "Timed out waiting 20000ms", NCCL's
    watchdog "Timeout(ms)=600000"; None when it names none."""
    match = _TIMEOUT_MS_RE.search(text)
    return max(1, round(int(match.group(1)[:12]) / 1000)) if match else None


def describe_failure(exc: BaseException, timeout: int) -> tuple[str, str] | None:
    """(what happened, hint) for a failed collective, or None when the error is about something else."""
    lower = str(exc).lower()
    if "timed out" in lower or "timeout" in lower:
        applied = applied_timeout(str(exc))  # the error says which timeout fired (init or collective)
        return (f"a collective timed out after {applied if applied is not None else timeout} s",
                "another rank crashed, hangs, or skipped a collective (e.g. a barrier() under "
                "`if rank == 0`): see the other ranks' logs; launcher.collective_timeout (--collective-timeout) "
                "sets the wait in training and in a script's process group, launcher.init_timeout at start-up "
                "and around checkpoints")
    if any(s in lower for s in ("connection closed", "connection reset", "broken pipe", "closed by peer")):
        return ("lost the connection to another rank in a collective",
                "another rank exited in the middle of training; its log says why")
    return None


# --- reductions ---------------------------------------------------------------------------------

def sum_floats(values: Sequence[float | torch.Tensor], ctx: Dist) -> list[float]:
    """Element-wise sum over ranks of a few numbers (floats or 0-d tensors), as Python floats."""
    parts = [v.detach().reshape(()).to(ctx.device, torch.float64) if isinstance(v, torch.Tensor)
             else torch.tensor(float(v), dtype=torch.float64, device=ctx.device) for v in values]
    stacked = torch.stack(parts)
    dist.all_reduce(stacked, op=dist.ReduceOp.SUM)
    return [float(x) for x in stacked.tolist()]


def gather_objects(obj: T, ctx: Dist) -> list[T]:
    """Every rank's ``obj`` (picklable), in rank order, through the CPU control group."""
    out: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(out, obj, group=ctx.control)
    return out


def broadcast_object(obj: T, ctx: Dist, src: int = 0) -> T:
    box: list[Any] = [obj]
    dist.broadcast_object_list(box, src=src, group=ctx.control)
    result: T = box[0]
    return result


def barrier(ctx: Dist) -> None:
    dist.barrier(group=ctx.control)


class ControlGroup(Protocol):
    """What a stop vote needs of its place: the group its all-reduce goes through (``Dist``, or a
    script's group: ``integrations.preempt``)."""

    @property
    def control(self) -> Any: ...


class StopVote:
    """All ranks agree on the step at which to stop after a preemption signal on any of them.

    Every rank calls ``should_stop()`` at every step boundary. Each call starts an asynchronous
    all-reduce (MAX) of the local flag and returns the result of the previous call's reduction,
    so the vote overlaps the step's compute instead of adding a round trip to it. All ranks see
    the same results in the same calls, so they stop after the same number of steps (one step
    after the signal reached the last of them).

    ``problem`` (a non-negative code, 0 for none) rides along: after a vote that says stop,
    ``self.problem`` is the largest code any rank sent (the trainer encodes a non-finite loss).

    A periodic checkpoint rides along too: ``due`` (rank 0's clock; None on the other ranks) adds
    rank 0's "a checkpoint is due" to the vote, so every rank learns it from the same reduction, never
    from its own clock. When it is due, ``should_stop`` starts no new vote (nothing is in flight on the
    control group while the checkpoint gathers over it) and ``take_checkpoint()`` says so once.
    """

    def __init__(self, flag: PreemptFlag, ctx: ControlGroup, due: Callable[[], bool] | None = None) -> None:
        self.flag = flag
        self.ctx = ctx
        self.due = due
        self.problem = 0
        self._checkpoint = False
        self._pending: tuple[Any, torch.Tensor] | None = None

    def should_stop(self, problem: int = 0) -> bool:
        if self._pending is not None and self._collect():
            return True
        if self._checkpoint:
            return False  # the caller checkpoints now; its next call starts the next vote
        due = 1 if self.due is not None and self.due() else 0
        vote = torch.tensor([1 if self.flag.requested else 0, problem, due], dtype=torch.int64)
        work = dist.all_reduce(vote, op=dist.ReduceOp.MAX, group=self.ctx.control, async_op=True)
        self._pending = (work, vote)
        return False

    def take_checkpoint(self) -> bool:
        """Whether the last vote said a periodic checkpoint is due (the same on every rank); once."""
        due, self._checkpoint = self._checkpoint, False
        return due

    def _collect(self) -> bool:
        assert self._pending is not None
        work, vote = self._pending
        self._pending = None
        work.wait()
        self.problem = max(self.problem, int(vote[1].item()))
        self._checkpoint = self._checkpoint or bool(vote[2].item())
        return bool(vote[0].item()) or self.problem > 0

    def settle(self, problem: int) -> int:
        """Blocking (every rank, e.g. at the end of an epoch): the largest problem code of all ranks,
        including the vote in flight; a preemption request is left for the next ``should_stop``."""
        self.drain()
        vote = torch.tensor([problem], dtype=torch.int64)
        dist.all_reduce(vote, op=dist.ReduceOp.MAX, group=self.ctx.control)
        self.problem = max(self.problem, int(vote.item()))
        return self.problem

    def drain(self) -> None:
        """Finish the vote in flight (at the end of training; its result no longer matters)."""
        if self._pending is not None:
            self._collect()


# --- parameter checks ---------------------------------------------------------------------------

def state_digest(module: nn.Module) -> str:
    """SHA-256 over the names and exact bytes of every parameter and buffer."""
    digest = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        digest.update(name.encode())
        digest.update(str(tensor.dtype).encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def check_sync(module: nn.Module, ctx: Dist, when: str) -> str:
    """Compare the parameter digest across ranks; a mismatch is an error naming the ranks."""
    digests = gather_objects(state_digest(module), ctx)
    groups: dict[str, list[int]] = {}
    for rank, value in enumerate(digests):
        groups.setdefault(value, []).append(rank)
    if len(groups) > 1:
        parts = [f"ranks {', '.join(map(str, ranks))} have {value[:12]}" for value, ranks in groups.items()]
        raise OrchError(f"parameters differ across ranks {when}: " + "; ".join(parts),
                        hint="something changed parameters on some ranks only (rank-dependent "
                             "initialisation or updates outside DDP); every rank must run the same steps")
    log.debug("parameters in sync %s: %s", when, digests[0])
    return digests[0]
