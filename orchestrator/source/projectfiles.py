"""The files a script is made of, for what decides how it launches (``orchestrator.launchstyles``) and which
frameworks it uses (``orchestrator.doctor.frameworks``): the entry, then the project modules its calls reach and
those they import (the reading of ``project.py``: siblings, its package, relative imports; never an installed
package; at most ``project.MAX_FILES``), in the order they are read. Each comes with the name to show it by
(``helpers/spawn.py``: relative to the entry's folder), so that what decided says which file and line it was."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from orchestrator.source.analysis import Analysis
from orchestrator.spec.pysource import UnreadableSource, parse_source, quote_line


@dataclass(frozen=True)
class SourceFile:
    path: Path
    shown: str  # the name to show it by: relative to the entry's folder
    tree: ast.Module
    lines: list[str]

    def quote(self, line: int) -> str:
        """``helpers/spawn.py:12: mp.spawn(worker, nprocs=2)``."""
        return quote_line(self.shown, self.lines, line)


def shown(entry: Path, path: Path | str) -> str:
    """``path`` as the user knows it next to ``entry``: relative to the entry's folder, else its name."""
    try:
        return str(Path(path).resolve().relative_to(entry.resolve().parent))
    except (ValueError, OSError):
        return Path(path).name


def _read(path: Path) -> tuple[ast.Module, list[str]] | None:
    try:
        source = path.read_text(encoding="utf-8", errors="replace")
        return parse_source(source, str(path)), source.splitlines()
    except (OSError, UnreadableSource, RecursionError, MemoryError):
        return None


def project_files(entry: Path) -> list[SourceFile]:
    """The entry (first) and the project modules its calls reach; none when the entry cannot be read."""
    analysis, first = read_entry(entry)
    return [] if first is None else with_imported(entry, analysis, first)


def read_entry(entry: Path) -> tuple[Analysis | None, SourceFile | None]:
    """The entry's analysis, its calls followed into the project (None when it cannot be analysed), and the entry
    (None when it cannot be read)."""
    read = _read(entry)
    if read is None:
        return None, None
    tree, lines = read
    first = SourceFile(entry, entry.name, tree, lines)
    try:
        analysis = Analysis(tree, str(entry))
        list(analysis.helper_quals)  # follows the script's calls into its project
    except (RecursionError, MemoryError):
        return None, first
    return analysis, first


def with_imported(entry: Path, analysis: Analysis | None, first: SourceFile) -> list[SourceFile]:
    """``first`` and the project modules ``analysis`` read, after reading what they import from the project too."""
    project = analysis.project if analysis is not None else None
    if analysis is None or project is None:
        return [first]
    modules = [analysis.module, *(module for _, module in project.helpers())]
    for module in modules:  # then what they import from the project (a worker handed to a spawner), bounded
        for path in project.imported(module):
            read_module = project.read(path)
            if read_module is not None and read_module not in modules:
                modules.append(read_module)
    files = [first]
    for path, module in project.helpers():
        text = _read(path)
        files.append(SourceFile(path, shown(entry, path), module.tree, text[1] if text is not None else []))
    return files
