"""The codebase keeps its own layout rules (docs/layout.md, "Modules stay under ~400 lines").

Every module under orchestrator/ has at most ``MAX_LINES`` lines: a module that grows past it is split
along a seam (one owner per concept), not allowed to drift. The check itself is tried on a generated
tree, so it cannot pass vacuously.
"""

from __future__ import annotations

from pathlib import Path

from support import ROOT

MAX_LINES = 400


def long_modules(package: Path, limit: int = MAX_LINES) -> list[str]:
    """``path: N lines`` for each ``*.py`` under ``package`` longer than ``limit`` (relative to its parent)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        with open(path, "rb") as fh:
            count = sum(1 for _ in fh)
        if count > limit:
            found.append(f"{path.relative_to(package.parent).as_posix()}: {count} lines")
    return found


def test_every_module_under_orchestrator_has_at_most_400_lines() -> None:
    package = ROOT / "orchestrator"
    assert len(list(package.rglob("*.py"))) > 50  # the real package, not an empty folder
    too_long = long_modules(package)
    assert not too_long, (f"modules over {MAX_LINES} lines (split each along a seam, docs/layout.md): "
                          + "; ".join(too_long))


def test_the_check_names_a_long_module_and_its_length(tmp_path: Path) -> None:
    package = tmp_path / "orchestrator"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (package / "sub" / "edge.py").write_text("x = 1\n" * MAX_LINES)  # exactly the limit: allowed
    (package / "small.py").write_text("x = 1\n")
    assert long_modules(package) == [f"orchestrator/sub/big.py: {MAX_LINES + 1} lines"]
