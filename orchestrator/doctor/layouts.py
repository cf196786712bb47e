"""The layout a Lightning ``Trainer(...)``/``Fabric(...)`` call asks for, judged as ``orch run``/``orch submit``
judge it (one judge: ``orch doctor`` says what they would refuse, and what to run the script with).

:func:`layout_lines` takes the script's frameworks (``orchestrator.doctor.frameworks``) and, when the user asked
for one, the layout to judge: ``orch doctor --nproc N`` as ``orch run --nproc N``, ``--nodes N --gpus G`` as
``orch submit``. The refusal is the planners' own (:func:`orchestrator.spec.framework.check_layout`), so both
verbs and the doctor say the same words. Without a layout, each call whose ``devices`` and ``num_nodes`` are
literals is said with the options that give it. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from orchestrator.errors import ConfigError
from orchestrator.spec.framework import Framework, check_layout, devices_per_node


@dataclass(frozen=True)
class Asked:
    """The layout to judge: ``nproc`` (orch run) or ``nodes``/``gpus`` (orch submit); all None: none asked."""

    nproc: int | None = None
    nodes: int | None = None
    gpus: int | None = None

    @property
    def given(self) -> bool:
        return self.nproc is not None or self.nodes is not None or self.gpus is not None

    def as_run(self) -> tuple[Literal["orch submit", "orch run"], int, int, int, str]:
        """(command, nodes, ranks per node, GPUs per node, the options as typed)."""
        if self.nproc is not None:
            return "orch run", 1, self.nproc, 0, f"--nproc {self.nproc}"
        nodes, gpus = self.nodes or 1, self.gpus or 0
        return "orch submit", nodes, max(gpus, 1), gpus, f"--nodes {nodes} --gpus {gpus}"


@dataclass(frozen=True)
class LayoutLine:
    """One line for the user: ``error`` when the asked layout would be refused."""

    text: str
    error: bool = False


def layout_lines(path: str, frameworks: Sequence[Framework], style: str, asked: Asked) -> list[LayoutLine]:
    """What the script's Trainer/Fabric layout means for ``asked`` (or, with none asked, what to run it with)."""
    if not any(framework.layouts for framework in frameworks):
        return []
    if asked.given:
        command, nodes, tasks, gpus, typed = asked.as_run()
        try:
            check_layout(frameworks, style=style, nodes=nodes, tasks_per_node=tasks, gpus=gpus, per_task=1,
                         command=command)
        except ConfigError as exc:
            return [LayoutLine(f"orch doctor: {path}: {command} {typed} would refuse it: {exc.message}\n"
                               f"HINT: {exc.hint}", error=True)]
        return []
    lines = []
    for framework in frameworks:
        for layout in framework.layouts:
            per_node = devices_per_node(layout, gpus=0, per_task=1, cpu_only=False)
            if per_node is None or layout.num_nodes is None or style == "per-node":
                continue
            run = f"orch run --nproc {per_node}, or " if layout.num_nodes == 1 else ""
            lines.append(LayoutLine(
                f"orch doctor: {path}: {layout.where} asks for {layout.num_nodes} node(s) x {per_node} process(es): "
                f"{run}orch submit --nodes {layout.num_nodes} --gpus {per_node} (--nproc, --nodes/--gpus here "
                "judge another layout as orch run and orch submit would)"))
    return lines
