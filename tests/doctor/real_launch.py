"""How orch would start the corpus scripts whose truth says how they must be started (``launch``, ``framework``,
``two_nodes`` in tests/doctor/real/truth.yaml, set 9 on), judged the way a user meets it: ``orch submit SCRIPT
--nodes 2 --gpus 8 --dry-run --json`` run in the script's folder, which reads the launch style and the frameworks
and refuses what it finds cannot work (a doctor error, or a framework layout that cannot match the ranks).

Per script: the style is **right** when it is the truth's (or one of its list); the framework is right when the
frameworks orch names (Hydra and TorchElastic's ``record`` left out: they do not start ranks) are exactly the
truth's (none for ``none``); the 2-node verdict is right when orch refuses exactly the scripts with ``two_nodes:
false``. A script is **right or refused** (issue 44's measure) when it cannot work on 2 nodes and is refused, or can
and is let through with its style and framework right. A truth's ``args`` (the arguments of the script's documented run
command: the config file it names) are passed after ``--``, as a user passes them (JUDGING.md, "Layouts from a config
or a flag").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from real_corpus import REAL, ROOT, require_code, truth

NODES, GPUS = 2, 8  # two whole nodes of the example cluster (cluster.yaml: 8 GPUs per node)
AUXILIARY = {"hydra", "torchelastic"}  # frameworks orch names that do not start or place ranks
_ORCH = "import sys; from orchestrator.cli import entrypoint; sys.exit(entrypoint())"


@dataclass(frozen=True)
class Verdict:
    script: str
    style: str  # what orch reads ("unread" when the dry run gave no JSON)
    frameworks: tuple[str, ...]
    refused: bool
    why: str  # the refusal's first line, or ""
    want_styles: tuple[str, ...]
    want_framework: str
    two_nodes: bool

    @property
    def style_right(self) -> bool:
        return self.style in self.want_styles

    @property
    def framework_right(self) -> bool:
        return set(self.frameworks) == ({self.want_framework} - {"none"})

    @property
    def verdict_right(self) -> bool:
        return self.refused != self.two_nodes

    @property
    def right_or_refused(self) -> bool:
        if not self.two_nodes:
            return self.refused
        return not self.refused and self.style_right and self.framework_right


def recorded() -> list[str]:
    """The scripts whose truth says how they must be started."""
    return [name for name, entry in sorted(truth().items()) if "launch" in entry]


def dry_run(name: str, entry: dict[str, Any], *, nodes: int = NODES, gpus: int = GPUS) -> Verdict:
    """``orch submit <entry> --nodes N --gpus G --dry-run --json`` in the script's folder, read back."""
    folder = REAL / name
    with tempfile.TemporaryDirectory(prefix="orch-launch-") as home:
        env = {**os.environ, "HOME": home, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-c", _ORCH, "submit", entry["entry"], "--cluster", str(ROOT / "cluster.yaml"),
             "--nodes", str(nodes), "--gpus", str(gpus), "--dry-run", "--json", *_args(entry)],
            cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False)
    try:
        plan = json.loads(done.stdout)
        run = plan["runs"][0] if isinstance(plan["runs"], list) else plan["runs"]
        style = run["launch"]["style"]
        frameworks = tuple(f["name"] for f in run.get("frameworks") or ())
    except (ValueError, KeyError, IndexError, TypeError):  # refused before the plan: read as submit reads it
        style, frameworks = _read(folder / entry["entry"], folder)
    frameworks = tuple(f for f in frameworks if f not in AUXILIARY)
    errors = [line for line in done.stderr.splitlines() if line.startswith("orch: error:")
              or "would refuse this script" in line]
    refused = done.returncode != 0 or bool(errors)
    want = entry["launch"] if isinstance(entry["launch"], list) else [entry["launch"]]
    return Verdict(name, style, frameworks, refused, (errors[0] if errors else "")[:160], tuple(want),
                   entry["framework"], bool(entry["two_nodes"]))


def _args(entry: dict[str, Any]) -> list[str]:
    """The script's arguments the truth records (its documented command's), after ``--``; none: none passed."""
    args = [str(arg) for arg in entry.get("args") or ()]
    return ["--", *args] if args else []


def _read(path: Path, cwd: Path) -> tuple[str, tuple[str, ...]]:
    """The style and frameworks ``orch submit`` reads (its own calls), when the dry run stopped before its plan."""
    from orchestrator import launchstyles
    from orchestrator.doctor.frameworks import script_frameworks
    from orchestrator.spec.launch import AUTO
    from orchestrator.spec.script import ScriptTarget

    style = launchstyles.choose(AUTO, path).style
    target = ScriptTarget(kind="script", target=str(path.resolve()), cwd=str(cwd.resolve()))
    return style, tuple(f.name for f in script_frameworks(target))


def judge_all(names: Sequence[str] | None = None) -> list[Verdict]:
    data = truth()
    return [dry_run(name, data[name]) for name in (names or recorded()) if "launch" in data[name]]


def figures(verdicts: Sequence[Verdict]) -> str:
    n = len(verdicts)

    def part(count: int) -> str:
        return f"{count / n:.2f} ({count} of {n})" if n else "n/a (0 scripts)"

    right = {
        "style right": sum(v.style_right for v in verdicts),
        "framework right": sum(v.framework_right for v in verdicts),
        "2-node verdict right": sum(v.verdict_right for v in verdicts),
        "right or refused": sum(v.right_or_refused for v in verdicts),
    }
    return f"launch on {NODES} nodes x {GPUS} GPUs ({n} scripts): " + ", ".join(
        f"{label} {part(count)}" for label, count in right.items())


def listing(verdicts: Sequence[Verdict]) -> str:
    lines = []
    for v in verdicts:
        mark = "RIGHT" if v.right_or_refused else "WRONG"
        lines.append(f"{mark} {v.script}: style {v.style} (truth {'/'.join(v.want_styles)}), frameworks "
                     f"{','.join(v.frameworks) or 'none'} (truth {v.want_framework}), "
                     f"{'refused' if v.refused else 'let through'} (truth: {'works' if v.two_nodes else 'cannot work'}"
                     f" on {NODES} nodes){': ' + v.why if v.why else ''}")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    require_code()
    names = [a for a in argv if not a.startswith("-")]
    verdicts = judge_all(names or None)
    if "--scripts" in argv:
        print(listing(verdicts))
    print(figures(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
