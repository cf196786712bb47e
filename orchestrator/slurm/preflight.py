"""``orch submit --preflight[=exclude]``: what the batch script does when its preflight step failed.

The batch script runs the selftest checks as a first srun step (``python -m orchestrator.runtime.launch
--preflight``, verdict in ``preflight.json``). When that step fails, it calls::

    python -m orchestrator.slurm.preflight --job-dir DIR --job-id ID --step-rc RC >DIR/preflight_next

which names the failed node(s) and check(s) on stderr (the batch log) and then either exits 1 (stop:
the job ends before training) or, with ``--preflight=exclude`` and attempts and nodes left, records
the attempt in ``preflight_attempts.json``, prints the sbatch options of the next attempt (one per
line: ``--exclude=...``, ``--nodelist=...``) and exits 0; the script sbatches itself again with them
and reports the new job id with ``--resubmitted ID`` (written to ``job_id``: orch status follows
it). No torch, no Slurm command here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.env import hostlist
from orchestrator.errors import OrchError
from orchestrator.records.atomic import write_text_atomic
from orchestrator.slurm.resubmit import record_next_job, without
from orchestrator.spec.runconfig import (
    PREFLIGHT_RECORD_FILE,
    PREFLIGHT_RESULT_FILE,
    Preflight,
    RunConfig,
    read_run_config,
)
from orchestrator.spec.safefile import note, read_json

STOP_EXIT = 1


@dataclass(frozen=True)
class Decision:
    """What the batch script does next: ``sbatch_args`` empty = stop; ``message`` goes to the batch log."""

    message: str
    sbatch_args: tuple[str, ...] = ()
    record: Mapping[str, Any] | None = None  # the new preflight_attempts.json (exclude mode)


def decide(cfg: RunConfig, verdict: Mapping[str, Any] | None, record: Mapping[str, Any] | None, *,
           job_id: str, step_rc: int) -> Decision:
    """Pure: the preflight's verdict (None: no preflight.json) and the attempts so far -> what to do."""
    pf = cfg.preflight or Preflight(mode="stop")
    failed = [(str(f["host"]), str(f["check"])) for f in (verdict or {}).get("failed_nodes", [])]
    checks = [c for c in (verdict or {}).get("checks", []) if not c.get("ok", True)]
    lines = [f"orch: preflight FAILED in job {job_id} (step exit {step_rc})"]
    lines += [f"orch: preflight: node {host} failed the check {check}" for host, check in failed]
    lines += [f"orch: preflight: {c.get('name')}: {c.get('detail')}" for c in checks]
    if not failed:
        lines.append("orch: preflight: no node was named (see the preflight log in logs/): the job stops")
        return Decision("\n".join(lines))
    bad = sorted({host for host, _ in failed})
    if pf.mode == "stop":
        lines.append(f"orch: preflight: the job stops before training. HINT: submit again with --exclude "
                     f"{hostlist.compress(bad)}, or with --preflight=exclude")
        return Decision("\n".join(lines))
    attempts = list((record or {}).get("attempts", []))
    plan = without(pf.model_copy(update={"exclude": (record or {}).get("excluded", pf.exclude)}), bad,
                   nodes=cfg.nodes)
    excluded = list(plan.excluded)
    attempts.append({"job_id": job_id, "failed": [{"host": h, "check": c} for h, c in failed],
                     "excluded": excluded, "next_job_id": None})
    new_record = {"version": 1, "max_attempts": pf.max_attempts, "excluded": excluded, "attempts": attempts}
    if len(attempts) >= pf.max_attempts:
        lines.append(f"orch: preflight: giving up after {len(attempts)} attempt(s) (at most {pf.max_attempts}); "
                     f"excluded so far: {hostlist.compress(excluded)}")
        return Decision("\n".join(lines), record=new_record)
    if not plan.sbatch_args:
        lines.append(f"orch: preflight: giving up: {plan.why}")
        return Decision("\n".join(lines), record=new_record)
    args = plan.sbatch_args
    lines.append(f"orch: preflight: submitting attempt {len(attempts) + 1} of {pf.max_attempts} "
                 f"without {hostlist.compress(excluded)}")
    return Decision("\n".join(lines), sbatch_args=args, record=new_record)


def read_record(job_dir: Path) -> dict[str, Any] | None:
    """``preflight_attempts.json`` of a job folder, or None (no preflight exclusion happened)."""
    path = job_dir / PREFLIGHT_RECORD_FILE
    data = read_json(path, dict)
    if data is None:
        return None
    attempts, excluded = data.get("attempts", []), data.get("excluded", [])
    if (not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts)
            or not isinstance(excluded, list) or not all(isinstance(h, str) for h in excluded)):
        note(path, "is not a preflight record (attempts: a list of objects, excluded: a list of host names)")
        return None
    return data


def read_verdict(job_dir: Path) -> dict[str, Any] | None:
    """``preflight.json`` when it has the shape the preflight step writes, else None (warned)."""
    path = job_dir / PREFLIGHT_RESULT_FILE
    data = read_json(path, dict)
    if data is None:
        return None
    failed, checks = data.get("failed_nodes", []), data.get("checks", [])
    if (not isinstance(failed, list) or not all(isinstance(f, dict) and "host" in f and "check" in f for f in failed)
            or not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks)):
        note(path, "is not a preflight verdict (failed_nodes: objects with host and check; checks: objects)")
        return None
    return data


def status_note(job_dir: Path) -> str | None:
    """For ``orch status``: ``excluded node2 (attempt 2 of 3, after job 117)``, or None."""
    record = read_record(job_dir)
    if not record or not record.get("attempts"):
        return None
    attempts = record["attempts"]
    before = ", ".join(str(a.get("job_id")) for a in attempts)
    return (f"preflight excluded {hostlist.compress(record.get('excluded', []))} "
            f"(attempt {len(attempts) + 1} of {record.get('max_attempts')}, after job {before})")


def _write_record(job_dir: Path, record: Mapping[str, Any]) -> None:
    write_text_atomic(job_dir / PREFLIGHT_RECORD_FILE, json.dumps(record, indent=2, sort_keys=True) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.slurm.preflight",
                                     description="Decide what a job does after its preflight step failed.")
    parser.add_argument("--job-dir", required=True)
    parser.add_argument("--job-id", default="?")
    parser.add_argument("--step-rc", type=int, default=1)
    parser.add_argument("--resubmitted", metavar="ID", help="record the next attempt's job id")
    args = parser.parse_args(argv)
    job_dir = Path(args.job_dir)
    try:
        if args.resubmitted:
            record = read_record(job_dir) or {"attempts": [{}]}
            record["attempts"][-1]["next_job_id"] = args.resubmitted
            _write_record(job_dir, record)
            record_next_job(job_dir, args.resubmitted)  # orch status, logs and cancel follow the folder
            return 0
        cfg = read_run_config(job_dir)
        verdict = read_verdict(job_dir)
        decision = decide(cfg, verdict, read_record(job_dir), job_id=args.job_id, step_rc=args.step_rc)
        from orchestrator.slurm.nodememory import record_preflight

        record_preflight(job_dir, verdict, args.job_id)  # later submits leave them out (launcher.bad_node_ttl)
    except OrchError as exc:
        print(exc.render(), file=sys.stderr)
        return STOP_EXIT
    print(decision.message, file=sys.stderr, flush=True)
    if decision.record is not None:
        _write_record(job_dir, decision.record)
    if not decision.sbatch_args:
        return STOP_EXIT
    print("\n".join(decision.sbatch_args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
