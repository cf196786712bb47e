"""Rewrite the parts of the docs that are rendered from code (run from the repository root).

Usage::

    python scripts/docs_tables.py          # rewrite them in place
    python scripts/docs_tables.py --check  # exit 1 and name the page when one is out of date

Two regions: the torchrun table of docs/bring-your-own-script.md, between
``<!-- torchrun-table:begin -->`` and ``<!-- torchrun-table:end -->``, rendered from
``TORCHRUN_OPTIONS`` (``orchestrator/commands/_torchrun.py``), and the options table of docs/cli.md
(``options-table``), rendered from ``OPTIONS`` (``orchestrator/spec/options.py``). The docs test checks
them (``tests/docs/test_docs_code.py``, and docs/testing.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _options_table() -> str:
    from orchestrator.spec.options import markdown_table

    return markdown_table()


def _torchrun_table() -> str:
    from orchestrator.commands._torchrun import markdown_table

    return markdown_table()


# (page, region name, renderer): the page holds <!-- NAME:begin --> and <!-- NAME:end --> lines
REGIONS: tuple[tuple[str, str, Callable[[], str]], ...] = (
    ("docs/bring-your-own-script.md", "torchrun-table", _torchrun_table),
    ("docs/cli.md", "options-table", _options_table),
)


def rewrite(text: str, name: str, body: str) -> str:
    """``text`` with the lines between the region's markers replaced by ``body`` (between blank lines:
    Markdown then reads the markers as HTML comments, not as table rows); ValueError without them."""
    begin, end = f"<!-- {name}:begin -->\n", f"<!-- {name}:end -->"
    start = text.find(begin)
    stop = text.find(end, start + len(begin)) if start >= 0 else -1
    if start < 0 or stop < 0 or text.count(begin) != 1:
        raise ValueError(f"no single {begin.strip()} ... {end} region")
    return text[:start + len(begin)] + "\n" + body + "\n" + text[stop:]


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print(__doc__, file=sys.stderr)
        return 2
    stale = []
    for page, name, render in REGIONS:
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, name, render())
        if new != text:
            stale.append(f"{page}: {name}")
            if not check:
                path.write_text(new, encoding="utf-8")
    for what in stale:
        print(f"{'out of date' if check else 'rewrote'}: {what}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
