"""The docs' links hold: every relative link of README.md and docs/*.md names a file that exists and, with an anchor,
a heading of that page (GitHub's anchors); the README links every docs page."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from support import ROOT
from test_docs import DOCS, PAGES, README, _prose

LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    for _, line in _prose(page):
        if m := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            slug, n = _slug(m[1]), 1
            while slug in anchors:  # GitHub numbers repeated headings
                slug = f"{_slug(m[1])}-{n}"
                n += 1
            anchors.add(slug)
    return anchors


def _links(page: Path) -> list[tuple[int, str]]:
    return [(number, m["target"]) for number, line in _prose(page)
            for m in LINK.finditer(re.sub(r"`[^`]*`", "``", line))]


def _broken(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for number, target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)}:{number}: {target}"
        if not dest.exists():
            broken.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{where}: no heading #{anchor} in {dest.name}")
    return broken


def test_every_docs_page_linked_from_the_readme_exists() -> None:
    linked = {t.partition("#")[0] for _, t in _links(README) if t.startswith("docs/")}
    assert linked, "README.md links to no docs page"
    assert not [t for t in linked if not (ROOT / t).is_file()]
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert pages <= linked, f"pages the README does not link to: {sorted(pages - linked)}"


def test_every_relative_link_resolves() -> None:
    broken = [b for page in PAGES for b in _broken(page)]
    assert not broken, "\n".join(broken)


def test_the_link_checker_sees_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copy(DOCS / "cli.md", tmp_path / "docs" / "cli.md")
    page = tmp_path / "docs" / "probe.md"
    page.write_text("# Probe\n\n[x](no-such-page.md) [y](cli.md#no-such-heading) [z](#probe) [w](cli.md#a-dry-run)\n"
                    "```bash\n[not a link](nowhere.md)\n```\n`[code](nowhere.md)` [web](https://example.org/x)\n",
                    encoding="utf-8")
    broken = _broken(page, root=tmp_path)
    assert [b.split(": ", 1)[1] for b in broken] == ["no-such-page.md: no such file",
                                                     "cli.md#no-such-heading: no heading #no-such-heading in cli.md"]
