"""Is this job folder's checkpoint one its job can resume from? Checked before any rank starts.

When rank 0 saves ``checkpoints/latest.pt`` it writes, as atomically, a small JSON sidecar beside
it, ``latest.pt.json`` (rotated to ``previous.pt.json`` with the file it describes): the job that
wrote it (name, job file and a digest of both), its counters (epoch, step, world size, batch size,
grad_accum, rank records), a digest of the model's state_dict keys and shapes and of the
parameters, and the checkpoint file's size and a digest of its zip directory (every member's name,
CRC-32 and size: any re-saved or swapped file differs, and reading it costs milliseconds for a
checkpoint of any size, since only the directory at the end of the file is read).

``check_resume_folder`` (the edge: reads a few KiB, never torch) runs in ``orch run --resume``
before job.json changes and any rank starts, and in the batch script before srun (``python -m
orchestrator.runtime.launch --master-port``); ``choose``/``check_sidecar`` are the pure rules. A
checkpoint without a sidecar (written by an older orch) is left to the check every rank makes as it
loads it (``runtime.identity``), which stays the second line of defence: it also compares the model
itself, which needs the job's ``build``.

Which file is checked follows the ranks' own choice (``runtime.checkpoint``): ``latest.pt``, or
``previous.pt`` when ``latest.pt`` is missing or not a readable zip (the ranks fall back out loud).
A save interrupted between its two renames leaves ``latest.pt.json`` equal to ``previous.pt.json``;
that case is recognised and ``latest.pt`` is left to the ranks' check.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.errors import ConfigError
from orchestrator.spec.runconfig import CHECKPOINT_DIR, RunConfig

LATEST = "latest.pt"
PREVIOUS = "previous.pt"
SIDECAR_SUFFIX = ".json"
SIDECAR_GLOB = f"*.pt{SIDECAR_SUFFIX}"
SIDECAR_FORMAT: Literal[1] = 1
MAX_SIDECAR_BYTES = 64 * 1024  # a real one is about 700 bytes
_BIG = 2**62  # counters beyond this are damage, not training
_DIGEST = r"^[0-9a-f]{64}$"
RESUME_HINT = "resume the job that wrote it, or move checkpoints/ away to start this job from scratch"


class ResumeError(ConfigError):
    """A job folder's checkpoint that its job.json cannot resume from (exit 2, before any rank starts)."""


def sidecar_path(checkpoint: Path) -> Path:
    return checkpoint.with_name(checkpoint.name + SIDECAR_SUFFIX)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def job_digest(job: str, job_file: str) -> str:
    """What names the job a checkpoint belongs to: job.json's job_name and job_file."""
    return _sha(json.dumps([job, job_file]))


def params_digest(params: Mapping[str, Any]) -> str:
    return _sha(json.dumps(dict(params), sort_keys=True, default=str))


def model_digest(shapes: Iterable[tuple[str, Sequence[int]]]) -> str:
    """The state_dict's keys and shapes, in order (the values are the checkpoint's business)."""
    return _sha(json.dumps([[key, list(shape)] for key, shape in shapes]))


def zip_members_digest(path: Path) -> str | None:
    """Name, CRC-32 and size of every member of a torch.save zip (None: not a readable zip).

    zipfile reads only the central directory at the end of the file: cheap for any size."""
    import zipfile  # here: the CLI imports this module on every orch run

    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, OverflowError):
        return None
    return _sha("".join(f"{i.filename}\0{i.CRC}\0{i.file_size}\n" for i in infos))


@dataclass(frozen=True)
class JobIdentity:
    """The job a checkpoint is written for (from job.json)."""

    name: str
    job_file: str

    @classmethod
    def of(cls, cfg: RunConfig) -> JobIdentity:
        return cls(cfg.job_name, cfg.job_file)


class Sidecar(BaseModel):
    """``latest.pt.json``: what orch wrote about the checkpoint beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    format: Literal[1]
    job: str = Field(max_length=4096)
    job_file: str = Field(max_length=4096)
    job_digest: str = Field(pattern=_DIGEST)
    epoch: int = Field(ge=0, le=_BIG)
    step: int = Field(ge=0, le=_BIG)
    world_size: int = Field(ge=1, le=_BIG)
    batch_size: int = Field(ge=1, le=_BIG)
    grad_accum: int = Field(ge=1, le=_BIG)
    ranks: int = Field(ge=0, le=_BIG, description="rank records (RNG states) in the checkpoint")
    params_digest: str = Field(pattern=_DIGEST)
    model_digest: str = Field(pattern=_DIGEST)
    model_tensors: int = Field(ge=0, le=_BIG)
    size: int = Field(ge=0, le=_BIG, description="the checkpoint file's size in bytes")
    members: str = Field(pattern=_DIGEST, description="zip_members_digest of the checkpoint file")


def make_sidecar(job: JobIdentity, *, epoch: int, step: int, world_size: int, batch_size: int, grad_accum: int,
                 ranks: int, params: Mapping[str, Any], shapes: Sequence[tuple[str, Sequence[int]]], size: int,
                 members: str) -> str:
    """The sidecar's JSON text (validated by the same model that reads it back)."""
    sidecar = Sidecar(format=SIDECAR_FORMAT, job=job.name, job_file=job.job_file,
                      job_digest=job_digest(job.name, job.job_file), epoch=epoch, step=step, world_size=world_size,
                      batch_size=batch_size, grad_accum=grad_accum, ranks=ranks, params_digest=params_digest(params),
                      model_digest=model_digest(shapes), model_tensors=len(shapes), size=size, members=members)
    return json.dumps(sidecar.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class CheckpointFacts:
    """What the edge measured about one checkpoint file: all the pure rules need."""

    name: str  # latest.pt or previous.pt
    folder: str  # the checkpoint folder, for messages
    size: int
    members: str | None  # zip_members_digest; None: not a readable zip (the ranks fall back from it)
    sidecar: bytes | None  # the sidecar's first MAX_SIDECAR_BYTES + 1 bytes; None: it has none

    @property
    def path(self) -> str:
        return _where(self.folder, self.name)

    @property
    def side(self) -> str:
        return self.path + SIDECAR_SUFFIX

    def matches(self, sidecar: Sidecar) -> bool:
        return self.size == sidecar.size and self.members == sidecar.members


def _where(folder: str, name: str) -> str:
    return f"{folder.rstrip('/')}/{name}"


def parse_sidecar(raw: bytes, name: str, folder: str = CHECKPOINT_DIR) -> Sidecar:
    """The sidecar of checkpoint ``name``, or a ResumeError naming the file and the field."""
    where = _where(folder, name + SIDECAR_SUFFIX)
    hint = (f"the file beside the checkpoint is damaged: delete {where} (the ranks then check {name} as they "
            "load it), or move checkpoints/ away")
    if len(raw) > MAX_SIDECAR_BYTES:
        raise ResumeError(f"{where} is larger than {MAX_SIDECAR_BYTES // 1024} KiB: not one orch wrote", hint=hint)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # RecursionError: absurd nesting
        raise ResumeError(f"{where} is not valid JSON: {str(exc)[:160] or type(exc).__name__}", hint=hint) from None
    try:
        return Sidecar.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe(dict(e)) for e in exc.errors()[:3])
        raise ResumeError(f"{where} is invalid: {problems}", hint=hint) from None
    except RecursionError:
        raise ResumeError(f"{where} is nested too deeply", hint=hint) from None


def _describe(error: Mapping[str, Any]) -> str:
    """``field: message (got value)`` of one pydantic error, the value cut short."""
    field = ".".join(map(str, error["loc"])) or "(top level)"
    value = error.get("input")
    shown = "" if isinstance(value, (dict, list)) else f" (got {repr(value)[:60]})"
    return f"{field}: {error['msg']}{shown}"


# --- the rules: each returns the problem (message, hint) or None ---------------------------------------------

Rule = Callable[[Sidecar, CheckpointFacts, RunConfig], "tuple[str, str] | None"]


def _file(s: Sidecar, f: CheckpointFacts, cfg: RunConfig) -> tuple[str, str] | None:
    if f.matches(s):
        return None
    what = f"its size is {f.size} bytes, not {s.size}" if f.size != s.size else "its contents differ"
    return (f"{f.path} is not the checkpoint orch wrote there: {what} (as recorded in "
            f"{f.side}); it was replaced, edited or copied from another job folder",
            f"put this job's own checkpoint back, or move checkpoints/ away to start from scratch (if you replaced "
            f"it on purpose, delete {f.side}: the ranks then check it as they load it)")


def _digest(s: Sidecar, f: CheckpointFacts, cfg: RunConfig) -> tuple[str, str] | None:
    if s.job_digest == job_digest(s.job, s.job_file):
        return None
    return (f"{f.side} is damaged: its job_digest does not match its job and job_file",
            f"delete {f.side} (the ranks then check {f.name} as they load it), or move "
            "checkpoints/ away")


def _job(s: Sidecar, f: CheckpointFacts, cfg: RunConfig) -> tuple[str, str] | None:
    if s.job == cfg.job_name:
        return None
    return f"the checkpoint {f.path} was written by job {s.job!r}, not by {cfg.job_name!r} (job_name)", RESUME_HINT


def _job_file(s: Sidecar, f: CheckpointFacts, cfg: RunConfig) -> tuple[str, str] | None:
    if s.job_file == cfg.job_file:
        return None
    return (f"the checkpoint {f.path} was written for the job file {s.job_file}, but job.json's job_file "
            f"is {cfg.job_file}", RESUME_HINT + " (or put job_file back in job.json)")


def _ranks(s: Sidecar, f: CheckpointFacts, cfg: RunConfig) -> tuple[str, str] | None:
    if s.ranks == s.world_size:
        return None
    return (f"the checkpoint's ranks hold {s.ranks} entries, expected one RNG record for each of its "
            f"{s.world_size} ranks ({f.path})", RESUME_HINT)


MID_EPOCH_HINT = "resume with the same number of ranks (--nproc), batch_size and grad_accum, or start a new job"


def mid_epoch_problem(*, epoch: int, step: int, saved: tuple[int, int, int], now: tuple[int, int, int]) -> str | None:
    """The one rule, checked here before ranks start and again on the ranks (``runtime.state``): between
    epochs the world size, batch size and grad_accum may change; in the middle of one they may not.
    ``saved``/``now``: (world size, batch size, grad_accum). The problem (with :data:`MID_EPOCH_HINT`), or None."""
    if step == 0 or saved == now:
        return None
    return (f"the checkpoint stopped in the middle of epoch {epoch + 1} (step {step}) with world size "
            f"{saved[0]}, batch size {saved[1]} and grad_accum {saved[2]}; this run has world size "
            f"{now[0]}, batch size {now[1]} and grad_accum {now[2]}")


def _mid_epoch(s: Sidecar, f: CheckpointFacts, cfg: RunConfig) -> tuple[str, str] | None:
    batch, accum = cfg.params.get("batch_size", s.batch_size), cfg.params.get("grad_accum", 1)
    problem = mid_epoch_problem(epoch=s.epoch, step=s.step, saved=(s.world_size, s.batch_size, s.grad_accum),
                                now=(cfg.world_size, batch, accum))
    return None if problem is None else (problem, MID_EPOCH_HINT)


RULES: tuple[Rule, ...] = (_file, _digest, _job, _job_file, _ranks, _mid_epoch)


def check_sidecar(sidecar: Sidecar, facts: CheckpointFacts, cfg: RunConfig) -> None:
    """Raise ResumeError for the first rule the checkpoint breaks (pure)."""
    for rule in RULES:
        problem = rule(sidecar, facts, cfg)
        if problem is not None:
            raise ResumeError(problem[0], hint=problem[1])


def _interrupted_save(latest: CheckpointFacts, previous: CheckpointFacts | None) -> bool:
    """A save killed between renaming latest.pt and its sidecar: the sidecar is still previous.pt's."""
    if previous is None or previous.sidecar is None or latest.sidecar != previous.sidecar:
        return False
    try:
        return previous.matches(parse_sidecar(previous.sidecar, previous.name, previous.folder))
    except ResumeError:
        return False


def choose(latest: CheckpointFacts | None, previous: CheckpointFacts | None, cfg: RunConfig) -> Sidecar | None:
    """Check the checkpoint the ranks will load (pure); its sidecar, or None when only they can check it."""
    if cfg.script is not None:
        return None  # a script keeps its own checkpoints
    for facts in (latest, previous):
        if facts is None or facts.members is None:
            continue  # missing, or not a readable zip: the ranks move on to the next, out loud
        if facts.sidecar is None:
            return None  # written by an older orch: the ranks check it
        sidecar = parse_sidecar(facts.sidecar, facts.name, facts.folder)
        if facts is latest and not facts.matches(sidecar) and _interrupted_save(facts, previous):
            return None
        check_sidecar(sidecar, facts, cfg)
        return sidecar
    return None


# --- the edge --------------------------------------------------------------------------------------------------

def read_facts(path: Path) -> CheckpointFacts | None:
    """Size, zip directory digest and sidecar bytes of one checkpoint file (None: no such file)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ResumeError(f"cannot read {path}: {exc.strerror}", hint="check its permissions") from None
    side = sidecar_path(path)
    raw: bytes | None
    try:
        with side.open("rb") as fh:
            raw = fh.read(MAX_SIDECAR_BYTES + 1)
    except FileNotFoundError:
        raw = None
    except OSError as exc:
        raise ResumeError(f"cannot read {side}: {exc.strerror}",
                          hint=f"delete or move away {side} (it should be a small file orch writes)") from None
    return CheckpointFacts(name=path.name, folder=str(path.parent), size=size, members=zip_members_digest(path),
                           sidecar=raw)


def check_resume_folder(job_dir: Path, cfg: RunConfig) -> Sidecar | None:
    """The whole check of a job folder's checkpoints against ``cfg`` before any rank starts."""
    folder = job_dir / CHECKPOINT_DIR
    if not folder.is_dir():
        return None
    return choose(read_facts(folder / LATEST), read_facts(folder / PREVIOUS), cfg)
