"""The doctor in front of a launch: what ``orch submit SCRIPT`` / ``orch run SCRIPT`` call first."""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from orchestrator import launchstyles
from orchestrator.doctor import launchstyle
from orchestrator.doctor.check import check_files, dedupe
from orchestrator.doctor.feasibility import across_nodes, layout_hint
from orchestrator.doctor.findings import DoctorSkipped, Finding, format_findings, has_errors, refuses
from orchestrator.doctor.frameworks import read_frameworks
from orchestrator.doctor.gpuspertask import gpus_per_task_warning
from orchestrator.doctor.layoutflags import flag_layout_warning
from orchestrator.doctor.pernodeflags import placeholder_warning
from orchestrator.doctor.rules_layout import flag_owned, without_judged_layouts
from orchestrator.errors import OrchError
from orchestrator.spec.launch import AUTO, Launch

if TYPE_CHECKING:
    from orchestrator.spec.script import ScriptTarget


class ScriptRefused(OrchError):
    """The doctor found errors in a script about to be launched (exit 2: nothing was launched)."""


_SILENCE = ("fix them (each finding says how), silence a false alarm with # orch: ignore[CODE] on its line, "
            "--ignore CODE or doctor: {ignore: [CODE]} in cluster.yaml, or pass --no-check to launch anyway")


def gate(paths: Sequence[str | Path], out: TextIO, *, refuse: bool = True, ignore: Collection[str] = (),
         would_refuse: str | None = None) -> list[Finding]:
    """Check ``paths``, drop the codes in ``ignore``, print the findings (if any) to ``out``, and raise
    ScriptRefused when one is an error and ``refuse`` (``--no-check`` and the dry run pass
    ``refuse=False``: they only show them; the dry run passes ``would_refuse="orch submit"`` and gets the
    line saying so). An unreadable script raises DoctorInputError (exit 2) either way."""
    return report(checked(paths, out), paths, out, refuse=refuse, ignore=ignore, would_refuse=would_refuse)


def checked(paths: Sequence[str | Path], out: TextIO) -> list[Finding]:
    """Every finding of ``paths`` (a file that cannot be parsed is said on ``out``, not checked)."""
    found: list[Finding] = []
    for path in paths:
        try:
            found.extend(check_files([path]))
        except DoctorSkipped as exc:  # cannot be parsed (too deep, too large, not a file): said, not checked
            print(exc.warning(), file=out, flush=True)
    return dedupe(found)


def report(found: Sequence[Finding], paths: Sequence[str | Path], out: TextIO, *, refuse: bool,
           ignore: Collection[str], would_refuse: str | None) -> list[Finding]:
    """``gate``'s second half: drop ``ignore``, print, refuse on errors."""
    findings = [f for f in found if f.code not in ignore]
    if findings:
        print(format_findings(findings), file=out, flush=True)
    if not has_errors(findings):
        return findings
    codes = ", ".join(sorted({f.code for f in findings if refuses(f)}))  # never a possible finding
    if refuse:
        raise ScriptRefused(f"orch doctor found errors ({codes}) in {', '.join(map(str, paths))}; nothing was "
                            "launched", hint=layout_hint(findings) + _SILENCE)
    if would_refuse:
        print(f"{would_refuse} would refuse this script: orch doctor found errors ({codes}); {_SILENCE}",
              file=out, flush=True)
    return findings


def check_script(target: ScriptTarget, *, refuse: bool, ignore: Collection[str] = (),
                 would_refuse: str | None = None, launch: str = AUTO,
                 nodes: int = 1, gpus_per_task: int | None = None,
                 gpus: int | None = None, check: bool | None = None) -> tuple[list[Finding], Launch]:
    """``gate`` for what ``orch submit``/``orch run`` were given, and the launch style it runs in
    (``launch``: ``--launch``; ``auto`` reads the script's facts, ``orchestrator.launchstyles``): a
    ``train.py`` is checked (findings on stderr: stdout stays the dry run's script or JSON); ``-m
    package.module`` is checked when it is a file of the working directory's project (an installed module is
    not: which file runs is only known where it runs). The finding the style answers is not shown; ``nodes``:
    how many nodes it runs on (a per-node script's loopback MASTER_ADDR meets only on one, and what certainly fails
    across nodes is an error there: ``feasibility.py``; ``gpus``: each node's GPUs, when asked); ``--gpus-per-task``
    K > 1 with a GPU picked from the local rank is a warning (``gpuspertask.py``), and so is a per-node script whose
    node flags get no placeholder in ``target.args`` (``pernodeflags.py``: the ``-- ...`` to pass). ``check``
    False (``--no-check``; by default, a gate that would neither refuse nor say that it would: ``refuse`` False
    without ``would_refuse``): no rule of the doctor runs and nothing is shown; the style comes from the script's
    facts alone."""
    from orchestrator.spec.script import find_module

    path = Path(target.target) if target.kind == "script" else find_module(target.target, [Path(target.cwd)])
    if path is None:
        return [], launchstyles.choose(launch, None)
    if not (check if check is not None else refuse or would_refuse is not None):
        return [], launchstyles.choose(launch, path)  # --no-check: the style from the facts, no doctor rule
    found = checked([path], sys.stderr)
    chosen = launchstyles.choose(launch, path)
    found = [f for f in without_judged_layouts(found, read_frameworks(path))  # the planners judge those
             if not flag_owned(f, chosen.style)]  # and the flag warning below those flags
    kept = report(across_nodes(launchstyle.answered(chosen, found, nodes, path), nodes, gpus, target.args), [path],
                  sys.stderr, refuse=refuse, ignore=ignore, would_refuse=would_refuse)
    ranks = gpus // gpus_per_task if gpus and gpus_per_task else gpus  # each node's ranks, when known
    for warning in (gpus_per_task_warning(path, gpus_per_task), placeholder_warning(path, chosen, target.args),
                    flag_layout_warning(path, chosen.style, nodes, ranks, target.args)):
        if warning is not None:
            print(warning, file=sys.stderr, flush=True)
    return kept, chosen
