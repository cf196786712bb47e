"""A Slurm job's MASTER_PORT: one number that every rank computes alike from the job id and the
restart count, without talking (:func:`master_port`). Pure; :func:`orchestrator.env.distenv.job_master_port`
reads the job id and the restart count from a task's environment. The agents of a script's warm restarts
on several nodes meet at their own port beside it (:func:`agents_port`).
"""

from __future__ import annotations

import functools
import math
import re
import zlib

from orchestrator.errors import ConfigError, DistEnvError

DEFAULT_PORT_RANGE: tuple[int, int] = (20000, 32767)  # below Linux's ephemeral ports (32768-60999): none lent out
# The restart count is Slurm's (SLURM_RESTART_COUNT): the hint distenv gives for a Slurm variable.
_RESTART_HINT = ("these variables come from Slurm; do not set, copy or --export them by hand, "
                 "and start each task with srun in the allocation")


def master_port(job_id: str | int, restart_count: int, port_range: tuple[int, int]) -> int:
    """A port in ``port_range`` (inclusive) that every rank computes alike, without talking.

    ``low + (n + restart_count * K) % span`` where n is the job number and K ~ 0.618 * span is
    coprime with span. So any two jobs whose numbers differ by less than the span (jobs running
    side by side) get different ports, and a requeued job moves far away from its old port (which
    may linger in TIME_WAIT). Array task ids ``123_4`` count as 123 + 4, heterogeneous ``123+1`` as
    124; other non-numeric ids use CRC-32 (stable across processes, unlike ``hash()``).
    """
    low, high = port_range
    if not 1 <= low <= high <= 65535:
        raise ConfigError(f"port range {low}-{high} is invalid",
                          hint="launcher.port_range must be [low, high] with 1 <= low <= high <= 65535")
    if isinstance(restart_count, bool) or restart_count < 0:
        raise DistEnvError(f"restart count {restart_count!r} is not a non-negative integer",
                           hint=_RESTART_HINT)
    span = high - low + 1
    return low + (_job_number(job_id) + restart_count * _restart_stride(span)) % span


def agents_port(master_port_: int, port_range: tuple[int, int]) -> int:
    """Where the agents of a script's warm restarts meet when the script's own rendezvous is MASTER_PORT
    (``restarts/protocol.py``'s ``agents_apart``): half the port range away from it, so that no job whose
    MASTER_PORT is near (jobs submitted close together) takes it; a range of one port: the port above it
    (below it at 65535). Every rank computes it alike from MASTER_PORT, without talking."""
    low, high = port_range
    span = high - low + 1
    if span < 2:
        return master_port_ + 1 if master_port_ < 65535 else master_port_ - 1
    return low + (master_port_ - low + span // 2) % span


def _job_number(job_id: str | int) -> int:
    if isinstance(job_id, int) and not isinstance(job_id, bool):
        if job_id < 0:
            raise DistEnvError(f"job id {job_id} is negative", hint="pass the SLURM_JOB_ID of the job")
        return job_id
    text = str(job_id).strip()
    if not text:
        raise DistEnvError("the job id is empty", hint="pass the SLURM_JOB_ID of the job")
    if len(text) > 40:
        raise DistEnvError(f"job id {text[:40]!r}... is {len(text)} characters long",
                           hint="pass the SLURM_JOB_ID of the job")
    if text.isascii() and text.isdigit():
        return int(text)
    match = re.fullmatch(r"([0-9]+)[_+]([0-9]+)", text)
    if match:
        return int(match.group(1)) + int(match.group(2))
    return zlib.crc32(text.encode())


@functools.lru_cache(maxsize=16)
def _restart_stride(span: int) -> int:
    stride = max(1, round(span * 0.6180339887498949))
    while math.gcd(stride, span) != 1:
        stride += 1
    return stride
