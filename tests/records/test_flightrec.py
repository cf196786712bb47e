"""NCCL's flight recorder dumps read without torch: each rank's last collective and the ranks to blame, on dumps
torch 2.14.1 wrote in real runs (tests/golden/flightrec/record_dumps.py: torch's own ``_dump_fr_trace``, the
pickle its FlightRecorder ``dump()`` writes, from gloo ranks on CPU); damaged and hostile files are refused with
a warning naming them, never run."""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest

from orchestrator.records import flightrec
from orchestrator.records.flightrec import DumpError, merge, parse_dump, read_dumps, verdict
from orchestrator.records.restarts.blame import Blame
from orchestrator.records.restarts.places import Place, culprit, sentence
from orchestrator.records.restarts.rankoutcome import RankOutcome
from orchestrator.records.stacks import StackFile, explained, place_table, places_path, stack_path
from orchestrator.spec.runconfig import LOG_DIR
from orchestrator.task.hang import flight_recorder_env

GOLDEN = Path(__file__).parents[1] / "golden"
RECORDED = GOLDEN / "flightrec"  # 4 ranks: rank 1 never reaches collective 4 (behind); 2 ranks: mismatch at 3


def _job(tmp_path: Path, case: str, ranks: list[int]) -> Path:
    (tmp_path / LOG_DIR).mkdir(exist_ok=True)
    for rank in ranks:
        shutil.copy(RECORDED / case / f"nccl_trace_rank_{rank}", flightrec.dump_path(tmp_path, rank))
    return tmp_path


def _raw(case: str, rank: int) -> dict[str, Any]:
    data = pickle.loads((RECORDED / case / f"nccl_trace_rank_{rank}").read_bytes())  # our own recorded file
    assert isinstance(data, dict)
    return data


def test_a_rank_that_never_reached_the_collective_the_others_entered_is_named(tmp_path: Path) -> None:
    dumps = read_dumps(_job(tmp_path, "behind", [0, 1, 2, 3]), range(4))
    found = verdict(dumps)
    assert found is not None
    assert (found.kind, found.op, found.seq, found.entered, found.culprits) == ("behind", "all_reduce", 4, (0, 2, 3),
                                                                                (1,))
    assert found.where is not None and (Path(found.where.file).name, found.where.line) == ("record_dumps.py", 44)
    assert found.sentence() == ("rank 1 never reached collective 4 (all_reduce), which ranks 0, 2, 3 entered at "
                                "record_dumps.py:44 in train; rank 1's last was all_reduce (collective 3)")
    last = dumps[1]
    assert last is not None and max(last.collectives("0")) == 3


def test_mismatched_collectives_at_one_number_are_found_and_agree_with_the_places_culprit(tmp_path: Path) -> None:
    dumps = read_dumps(_job(tmp_path, "mismatch", [0, 1]), range(2))
    found = verdict(dumps)
    assert found is not None and (found.kind, found.seq) == ("mismatch", 3)
    assert {found.op, found.found[found.culprits[0]].op} == {"all_reduce", "broadcast"}
    table = merge([Place(rank=r, state="unknown") for r in range(2)], dumps, found)
    assert [(p.state, p.op, p.seq, p.line) for p in table] == [("collective", "all_reduce", 3, 44),
                                                                ("collective", "broadcast", 3, 42)]
    assert culprit(table) == table[found.culprits[0]]  # one rank to blame, whichever reading says it
    assert sentence(table) == ("rank 0 was in all_reduce (collective 3) at record_dumps.py:44 in train while rank 1 "
                               "waited in broadcast (collective 3) at record_dumps.py:42 in train (mismatched "
                               "collectives)")


def test_mismatched_sizes_of_the_same_collective_are_found(tmp_path: Path) -> None:
    (tmp_path / LOG_DIR).mkdir()
    for rank in range(4):
        data = _raw("behind", rank)
        for entry in data["entries"]:
            if rank == 2 and entry["collective_seq_id"] == 2:
                entry["input_sizes"] = [[8, 5]]
        flightrec.dump_path(tmp_path, rank).write_bytes(pickle.dumps(data, protocol=2))
    dumps = read_dumps(tmp_path, range(4))
    found = verdict(dumps)
    assert found is not None and (found.kind, found.seq, found.culprits) == ("sizes", 2, (2,))
    assert found.sentence().startswith("rank 2 called all_reduce of [[8, 5]] (collective 2) at record_dumps.py:44 in "
                                       "train where ranks 0, 1, 3 called all_reduce of [[8, 4]] (collective 2)")
    table = merge([Place(rank=r, state="unknown") for r in range(4)], dumps, found)
    assert culprit(table) == table[2] and table[2].sizes == "[[8, 5]]"
    assert "rank 2 was in all_reduce of [[8, 5]] (collective 2)" in (sentence(table) or "")


def test_a_rank_without_a_dump_is_left_out_and_named(tmp_path: Path) -> None:
    found = verdict(read_dumps(_job(tmp_path, "behind", [0, 1, 2]), range(4)))
    assert found is not None and found.culprits == (1,) and found.unread == (3,)
    assert found.sentence().endswith("(no flight record from rank 3)")
    assert found.as_dict()["unread"] == [3]


def test_the_places_table_of_a_job_folder_adds_the_numbers_to_the_stacks(tmp_path: Path) -> None:
    """Rank 1's stack (recorded: a data loader asleep) says where it is, the dumps what it never reached."""
    job = _job(tmp_path, "behind", [0, 1, 2, 3])
    shutil.copy(GOLDEN / "stacks" / "loader" / "rank-1.txt", stack_path(job, 1))
    table = place_table(job, {}, 4)
    assert [(p.state, p.seq) for p in table] == [("collective", 4), ("user", 3), ("collective", 4), ("collective", 4)]
    assert sentence(table) == ("rank 1 never reached collective 4 (all_reduce), which ranks 0, 2, 3 entered at "
                               "record_dumps.py:44 in train; rank 1 stopped at hang_loader.py:19 in load_batch "
                               "(time.sleep), after collective 3")
    records = [RankOutcome(rank=r, world_size=4, run="local", restart=0, kind="running", exit_code=None,
                           started=1.0, ended=None) for r in range(4)]
    told = explained(job, Blame(kind="stuck", ranks=(0,), message="the ranks stopped"), records, 4, write=True)
    assert told is not None and told.ranks[0] == 1 and told.message.startswith("rank 1 never reached collective 4")
    kept = json.loads(places_path(job).read_text())
    assert kept["flight"]["culprits"] == [1] and [r["seq"] for r in kept["ranks"]] == [4, 3, 4, 4]


def test_an_nccl_rank_whose_python_went_on_is_placed_in_the_collective_it_entered(tmp_path: Path) -> None:
    """NCCL's collectives run on the GPU: a rank's stack may be at a later line while its collective waits."""
    dumps = read_dumps(_job(tmp_path, "behind", [0, 1, 2, 3]), range(4))
    ahead = Place(rank=0, state="user", file="/job/train.py", line=90, function="main", call="loss.item")
    stuck = Place(rank=1, state="user", file="/job/train.py", line=12, function="load_batch", call="time.sleep")
    gone = Place(rank=2, state="exited", exit_code=1)
    table = merge([ahead, stuck, gone], dumps, verdict(dumps))
    assert (table[0].state, table[0].op, table[0].line, table[0].seq) == ("collective", "all_reduce", 44, 4)
    assert (table[1].state, table[1].line, table[1].seq) == ("user", 12, 3)
    assert (table[2].state, table[2].exit_code, table[2].seq) == ("exited", 1, 4)  # its exit stays what it did
    assert culprit(table) == table[1]


def test_records_that_agree_blame_no_one(tmp_path: Path) -> None:
    dumps = read_dumps(_job(tmp_path, "behind", [0, 2, 3]), [0, 2, 3])
    assert verdict(dumps) is None
    table = merge([Place(rank=r, state="unknown") for r in (0, 2, 3)], dumps, None)
    assert {(p.state, p.op, p.seq) for p in table} == {("collective", "all_reduce", 4)}  # no stack: the record's
    assert culprit(table) is None


def _text(value: str) -> bytes:
    data = value.encode()
    return b"X" + len(data).to_bytes(4, "little") + data  # pickle's BINUNICODE


def test_entries_of_odd_shapes_are_read_or_skipped_never_a_crash() -> None:
    entries = [{"collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "input_sizes": [b"x", {1, 2}],
                "frames": 7, "process_group": 3},
               {"collective_seq_id": 2, "profiling_name": "nccl:all_reduce",
                "frames": [{"filename": 1}, "x", {"filename": "/job/t.py", "line": 3, "name": "f"}]},
               {"collective_seq_id": True, "profiling_name": "nccl:barrier"}, "entry", None]
    found = parse_dump(pickle.dumps({"entries": entries}, protocol=4), 0).entries  # bytes and sets: no global
    assert [(c.seq, c.sizes, c.group) for c in found] == [(1, "?", "0"), (2, "?", "0")]
    assert found[1].frame is not None and (found[1].frame.file, found[1].frame.line) == ("/job/t.py", 3)
    # sizes nested 100,000 deep (Python's pickler cannot write it: the opcodes by hand)
    deep = b"]" * 100_000 + b"a" * 99_999
    data = (b"\x80\x02}(" + _text("entries") + b"](}(" + _text("collective_seq_id") + b"K\x05" +
            _text("profiling_name") + _text("nccl:all_reduce") + _text("input_sizes") + deep +
            _text("process_group") + b"(" + deep + _text("x") + b"t" + b"ueu.")
    [entry] = parse_dump(data, 0).entries
    assert (entry.seq, entry.sizes, entry.group) == (5, "?", "0")


def test_a_truncated_dump_is_a_warning_naming_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    job = _job(tmp_path, "behind", [0, 1])
    path = flightrec.dump_path(job, 1)
    path.write_bytes(path.read_bytes()[:900])
    with caplog.at_level(logging.WARNING):
        dumps = read_dumps(job, range(2))
    assert dumps[1] is None and dumps[0] is not None
    assert str(path) in caplog.text and "truncated" in caplog.text


@pytest.mark.parametrize(("data", "why"), [
    (b"", "empty"),
    (b"\x80\x02K\x07.", "no list of entries"),
    (b"not a pickle at all", "damaged"),
    (b'{"entries": 3}', "no list of entries"),
    (b'{"entries": [', "damaged"),
])
def test_damaged_dumps_say_why(data: bytes, why: str) -> None:
    with pytest.raises(DumpError, match=why):
        parse_dump(data, 0)


class _Hostile:
    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.target),))  # would run on load


def test_a_pickle_naming_a_global_is_refused_and_never_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    target = tmp_path / "ran"
    (tmp_path / LOG_DIR).mkdir()
    path = flightrec.dump_path(tmp_path, 0)
    path.write_bytes(pickle.dumps({"version": "2.10", "entries": [_Hostile(target)]}, protocol=2))
    with caplog.at_level(logging.WARNING):
        assert read_dumps(tmp_path, [0]) == {0: None}
    assert not target.exists()
    assert "refused: it names posix.mkdir" in caplog.text and str(path) in caplog.text


def test_a_persistent_id_is_refused() -> None:
    class Pickler(pickle.Pickler):
        def persistent_id(self, obj: object) -> str | None:
            return "storage0" if obj == "tensor" else None

    out = io.BytesIO()
    Pickler(out, protocol=2).dump({"entries": ["tensor"]})
    with pytest.raises(DumpError, match=r"refused: .*persistent id"):
        parse_dump(out.getvalue(), 0)


def test_the_typed_lists_torchs_pickler_names_are_read_as_lists() -> None:
    """torch's C++ pickler may write a typed list as ``torch.jit._pickle.build_intlist(list)``: allowed, and made
    a plain list here (torch is never imported)."""
    data = (b"(dVversion\nV2.10\nsVentries\n(l(dVcollective_seq_id\nI7\nsVprofiling_name\nVnccl:all_reduce\n"
            b"sVstate\nVstarted\nsVinput_sizes\nctorch.jit._pickle\nbuild_intlist\n((lI8\naI4\natRsas.")
    [entry] = parse_dump(data, 0).entries
    assert (entry.seq, entry.op, entry.state, entry.sizes) == (7, "all_reduce", "started", "[8, 4]")


def test_the_json_form_reads_as_the_pickle() -> None:
    raw = _raw("mismatch", 1)
    as_json = json.dumps(raw).encode()
    assert parse_dump(as_json, 1) == parse_dump((RECORDED / "mismatch" / "nccl_trace_rank_1").read_bytes(), 1)


def test_the_dump_file_is_the_one_the_task_asks_torch_for_and_a_new_attempt_removes_it(tmp_path: Path) -> None:
    env = flight_recorder_env(tmp_path, {}, "2.14.1")
    assert Path(env["TORCH_FR_DUMP_TEMP_FILE"] + "3") == flightrec.dump_path(tmp_path, 3)
    job = _job(tmp_path, "behind", [3])
    StackFile().start(job, 3)
    assert not flightrec.dump_path(job, 3).exists()
