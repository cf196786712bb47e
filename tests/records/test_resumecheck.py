"""The resume check before any rank starts (``orchestrator.records.resumecheck``): the pure rules against hostile
sidecars of our own, and the sidecars ``write_atomic`` writes and rotates with real checkpoints."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.records.resumecheck import (
    LATEST,
    MAX_SIDECAR_BYTES,
    PREVIOUS,
    CheckpointFacts,
    JobIdentity,
    ResumeError,
    Sidecar,
    check_resume_folder,
    choose,
    job_digest,
    make_sidecar,
    parse_sidecar,
    sidecar_path,
)
from orchestrator.spec.runconfig import RunConfig

JOB = JobIdentity("smoke", "/jobs/smoke.py")
SIZE, MEMBERS = 32653, "ab" * 32


def config(**changes: Any) -> RunConfig:
    base: dict[str, Any] = {
        "mode": "local", "job_name": "smoke", "job_file": "/jobs/smoke.py", "nodes": 1, "gpus_per_node": 0,
        "tasks_per_node": 2, "cpus_per_task": 1, "job_dir": "/jobs/x", "created": "2026-01-01T00:00:00",
        "params": {"epochs": 3, "batch_size": 16, "grad_accum": 1}}
    return RunConfig.model_validate({**base, **changes})


def sidecar_dict(**changes: Any) -> dict[str, Any]:
    text = make_sidecar(JOB, epoch=1, step=0, world_size=2, batch_size=16, grad_accum=1, ranks=2,
                        params={"epochs": 2}, shapes=[("weight", (10, 10)), ("bias", (10,))], size=SIZE,
                        members=MEMBERS)
    data: dict[str, Any] = json.loads(text)
    data.update(changes)
    return data


def facts(data: Any = None, *, raw: bytes | None = None, name: str = LATEST, size: int = SIZE,
          members: str | None = MEMBERS) -> CheckpointFacts:
    if raw is None and data is not None:
        raw = json.dumps(data).encode()
    return CheckpointFacts(name=name, folder="/jobs/x/checkpoints", size=size, members=members, sidecar=raw)


def refused(latest: CheckpointFacts | None, cfg: RunConfig | None = None,
            previous: CheckpointFacts | None = None) -> ResumeError:
    with pytest.raises(ResumeError) as info:
        choose(latest, previous, cfg or config())
    assert info.value.exit_code == 2 and info.value.hint, info.value
    return info.value


def test_the_sidecar_orch_writes_passes() -> None:
    sidecar = choose(facts(sidecar_dict()), None, config())
    assert isinstance(sidecar, Sidecar) and sidecar.job == "smoke" and sidecar.epoch == 1


def _retag(job: str, job_file: str = "/jobs/smoke.py") -> dict[str, Any]:
    """A consistent sidecar of another job (its digest recomputed, as orch would have written it)."""
    return sidecar_dict(job=job, job_file=job_file, job_digest=job_digest(job, job_file))


HOSTILE: list[tuple[str, Callable[[], CheckpointFacts], str]] = [
    ("another job", lambda: facts(_retag("mnist")), "written by job 'mnist', not by 'smoke'"),
    ("another job file", lambda: facts(_retag("smoke", "/elsewhere/smoke.py")), "job file /elsewhere/smoke.py"),
    ("job edited, digest not", lambda: facts(sidecar_dict(job="mnist")), "job_digest does not match"),
    ("bad digest text", lambda: facts(sidecar_dict(job_digest="zz")), "job_digest"),
    ("epoch negative", lambda: facts(sidecar_dict(epoch=-1)), "epoch: Input should be greater than or equal to 0"),
    ("step negative", lambda: facts(sidecar_dict(step=-5)), "step"),
    ("epoch text", lambda: facts(sidecar_dict(epoch="1")), "epoch: Input should be a valid integer"),
    ("epoch bool", lambda: facts(sidecar_dict(epoch=True)), "epoch"),
    ("epoch float", lambda: facts(sidecar_dict(epoch=1.0)), "epoch"),
    ("epoch huge", lambda: facts(sidecar_dict(epoch=2**70)), "epoch"),
    ("world size zero", lambda: facts(sidecar_dict(world_size=0)), "world_size"),
    ("ranks empty", lambda: facts(sidecar_dict(ranks=0)), "ranks hold 0 entries"),
    ("ranks too many", lambda: facts(sidecar_dict(ranks=6)), "ranks hold 6 entries"),
    ("unknown key", lambda: facts(sidecar_dict(extra=1)), "extra: Extra inputs are not permitted"),
    ("missing key", lambda: facts({k: v for k, v in sidecar_dict().items() if k != "members"}), "members"),
    ("other format", lambda: facts(sidecar_dict(format=2)), "format"),
    ("not an object", lambda: facts([1, 2]), "(top level)"),
    ("null", lambda: facts(None, raw=b"null"), "(top level)"),
    ("empty file", lambda: facts(None, raw=b""), "is not valid JSON"),
    ("not UTF-8", lambda: facts(None, raw=b"\xff\xfe{}"), "is not valid JSON"),
    ("NaN", lambda: facts(None, raw=json.dumps(sidecar_dict()).replace('"epoch": 1', '"epoch": NaN').encode()),
     "epoch"),
    ("huge integer text", lambda: facts(None, raw=b'{"epoch": ' + b"9" * 5000 + b"}"), "not valid JSON"),
    ("deeply nested", lambda: facts(None, raw=b"[" * 30_000 + b"]" * 30_000), "latest.pt.json"),
    ("nested in a field", lambda: facts(sidecar_dict(job={"a": [[[[1]]]]})), "job: Input should be a valid string"),
    ("oversized", lambda: facts(None, raw=b" " * (MAX_SIDECAR_BYTES + 1)), "larger than 64 KiB"),
    ("file smaller", lambda: facts(sidecar_dict(), size=SIZE - 1), f"its size is {SIZE - 1} bytes, not {SIZE}"),
    ("file re-saved", lambda: facts(sidecar_dict(), members="cd" * 32), "its contents differ"),
]


@pytest.mark.parametrize(("make", "message"), [(m, t) for _, m, t in HOSTILE], ids=[i for i, _, _ in HOSTILE])
def test_hostile_sidecars_are_a_clear_error(make: Callable[[], CheckpointFacts], message: str) -> None:
    error = refused(make())
    assert message in error.message, error.message
    assert "/jobs/x/checkpoints/latest.pt" in error.message or "ranks hold" in error.message


def test_messages_name_the_file_and_the_fix() -> None:
    error = refused(facts(_retag("mnist")))
    assert error.message == ("the checkpoint /jobs/x/checkpoints/latest.pt was written by job 'mnist', not by "
                             "'smoke' (job_name)")
    assert error.hint is not None and "move checkpoints/ away" in error.hint
    swapped = refused(facts(sidecar_dict(), size=1))
    assert swapped.hint is not None and "delete /jobs/x/checkpoints/latest.pt.json" in swapped.hint


@pytest.mark.parametrize(("step", "changes", "ok"), [
    (0, {"tasks_per_node": 4}, True),  # between epochs the world size may change
    (0, {"params": {"batch_size": 8}}, True),
    (7, {}, True),
    (7, {"tasks_per_node": 4}, False),  # in the middle of an epoch it may not
    (7, {"nodes": 2}, False),
    (7, {"params": {"batch_size": 8}}, False),
    (7, {"params": {"batch_size": 16, "grad_accum": 2}}, False),
])
def test_world_size_and_batch_change_only_between_epochs(step: int, changes: dict[str, Any], ok: bool) -> None:
    latest = facts(sidecar_dict(step=step))
    if ok:
        assert choose(latest, None, config(**changes)) is not None
    else:
        assert "stopped in the middle of epoch 2 (step 7)" in refused(latest, config(**changes)).message


def test_which_file_is_checked_follows_the_ranks_choice() -> None:
    good_prev = facts(sidecar_dict(epoch=0), name=PREVIOUS)
    bad_prev = facts(_retag("mnist"), name=PREVIOUS)
    # latest unreadable (not a zip): the ranks fall back to previous.pt, so that is the one checked
    assert choose(facts(_retag("mnist"), members=None), good_prev, config()) is not None
    assert "previous.pt" in refused(facts(sidecar_dict(), members=None), previous=bad_prev).message
    # latest missing: previous
    assert "previous.pt" in refused(None, previous=bad_prev).message
    # a readable latest is the one loaded: a damaged previous does not matter
    assert choose(facts(sidecar_dict()), bad_prev, config()) is not None
    # no sidecar (an older orch): the ranks' own check
    assert choose(facts(None), bad_prev, config()) is None
    assert choose(None, None, config()) is None


def test_a_save_interrupted_between_its_renames_is_left_to_the_ranks() -> None:
    old = sidecar_dict(epoch=1)
    previous = facts(old, name=PREVIOUS)  # previous.pt is the file the old sidecar describes
    latest = facts(old, size=SIZE + 100, members="cd" * 32)  # the new latest.pt, still with the old sidecar
    assert choose(latest, previous, config()) is None
    # the same stale-looking sidecar when previous.pt does not match it: a swapped file, refused
    assert "is not the checkpoint orch wrote" in refused(latest, previous=facts(old, name=PREVIOUS, size=1)).message
    # a different sidecar beside previous.pt: not an interrupted save
    assert "is not the checkpoint" in refused(latest, previous=facts(sidecar_dict(epoch=0), name=PREVIOUS)).message


def test_scripts_keep_their_own_checkpoints() -> None:
    script = {"kind": "script", "target": "/x/train.py", "args": [], "cwd": "/x"}
    cfg = config(script=script)
    assert choose(facts(_retag("mnist")), None, cfg) is None


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(sorted(sidecar_dict())), value=JSON)
def test_any_value_in_any_field_passes_or_is_a_resume_error(key: str, value: Any) -> None:
    try:
        choose(facts(sidecar_dict(**{key: value})), None, config())
    except ResumeError as exc:
        assert exc.message and exc.hint
        assert len(exc.message) < 1000, "a hostile value is cut short in the message"


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=300) | JSON.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_are_a_resume_error_never_a_traceback(raw: bytes) -> None:
    with pytest.raises(ResumeError):
        parse_sidecar(raw, LATEST)


# --- the sidecars write_atomic writes (real torch checkpoints) ------------------------------------------------

def _state(epoch: int, width: int = 10) -> dict[str, Any]:
    import torch

    return {"format": 1, "model": {"weight": torch.zeros(width, 10), "bias": torch.zeros(width)}, "optimizer": {},
            "epoch": epoch, "step": 0, "world_size": 2, "batch_size": 16, "grad_accum": 1,
            "ranks": [{"rng": {}, "tally": None}] * 2, "params": {"epochs": 3}, "job": "smoke"}


def test_write_atomic_writes_and_rotates_sidecars_that_pass(tmp_path: Path) -> None:
    from orchestrator.runtime.checkpoint import write_atomic

    job_dir, folder = tmp_path, tmp_path / "checkpoints"
    write_atomic(_state(1), folder, JOB)
    first = (folder / f"{LATEST}.json").read_bytes()
    write_atomic(_state(2), folder, JOB)
    assert (folder / f"{PREVIOUS}.json").read_bytes() == first
    sidecar = check_resume_folder(job_dir, config())
    assert sidecar is not None and sidecar.epoch == 2 and sidecar.size == (folder / LATEST).stat().st_size
    assert sorted(p.name for p in folder.iterdir()) == sorted([LATEST, PREVIOUS, f"{LATEST}.json",
                                                               f"{PREVIOUS}.json"])
    (folder / LATEST).unlink()  # the ranks would load previous.pt: it is the one checked
    sidecar = check_resume_folder(job_dir, config())
    assert sidecar is not None and sidecar.epoch == 1


def test_a_checkpoint_swapped_for_another_is_refused(tmp_path: Path) -> None:
    import torch

    from orchestrator.runtime.checkpoint import write_atomic

    folder = tmp_path / "checkpoints"
    write_atomic(_state(1), folder, JOB)
    torch.save(_state(1, width=12), folder / LATEST)  # another model's checkpoint in its place
    with pytest.raises(ResumeError, match="is not the checkpoint orch wrote there"):
        check_resume_folder(tmp_path, config())
    sidecar_path(folder / LATEST).unlink()  # deleted on purpose: the ranks check it
    assert check_resume_folder(tmp_path, config()) is None


def test_a_save_without_identity_leaves_no_stale_sidecar(tmp_path: Path) -> None:
    from orchestrator.runtime.checkpoint import write_atomic

    folder = tmp_path / "checkpoints"
    write_atomic(_state(1), folder, JOB)
    write_atomic(_state(2), folder)  # an older caller: no identity
    assert not (folder / f"{LATEST}.json").exists()
    assert (folder / f"{PREVIOUS}.json").exists()
    write_atomic(_state(3), folder)
    assert not (folder / f"{PREVIOUS}.json").exists(), "previous.pt is now a file without a sidecar"
    assert check_resume_folder(tmp_path, config()) is None


def test_a_sidecar_that_is_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    from orchestrator.runtime.checkpoint import write_atomic

    folder = tmp_path / "checkpoints"
    write_atomic(_state(1), folder, JOB)
    (folder / f"{LATEST}.json").unlink()
    (folder / f"{LATEST}.json").mkdir()
    with pytest.raises(ResumeError, match=r"cannot read .*latest\.pt\.json"):
        check_resume_folder(tmp_path, config())


def test_a_sidecar_others_could_write_is_not_trusted(tmp_path: Path) -> None:
    from orchestrator.records.trust import TrustError, check_job_dir

    job_dir = tmp_path / "job"
    (job_dir / "checkpoints").mkdir(parents=True, mode=0o750)
    job_dir.chmod(0o750)
    (job_dir / "job.json").write_text("{}")
    side = job_dir / "checkpoints" / f"{LATEST}.json"
    side.write_text("{}")
    side.chmod(0o640)
    check_job_dir(job_dir, job_file="job.json", checkpoint_dir="checkpoints")
    side.chmod(0o646)
    with pytest.raises(TrustError, match=r"latest\.pt\.json is writable by others"):
        check_job_dir(job_dir, job_file="job.json", checkpoint_dir="checkpoints")


def test_a_state_without_a_valid_sidecar_is_still_saved(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from orchestrator.runtime.checkpoint import read_checkpoint, write_atomic

    folder = tmp_path / "checkpoints"
    write_atomic(_state(1), folder, JOB)
    write_atomic({**_state(2), "world_size": 0}, folder, JOB)  # no sidecar can say that
    assert read_checkpoint(folder / LATEST)["epoch"] == 2
    assert not (folder / f"{LATEST}.json").exists(), "never the old sidecar beside the new file"
    assert "no sidecar for checkpoint" in caplog.text
