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


# commands/: one module per verb. Shared by every verb: the option table's argparse side and the plain tables; a
# verb's own private modules belong to it alone (orch mcp's server, plan and tools; orch doctor --fix's printer).
SHARED_COMMAND_MODULES = {"_common", "_tables", "_torchrun"}
PRIVATE_TO = {"_mcp_plan": "mcp", "_mcp_server": "mcp", "_mcp_tools": "mcp", "_doctorfix": "doctor"}


def verb_of(module: str) -> str | None:
    """The verb a module of commands/ belongs to (None: shared)."""
    if module in SHARED_COMMAND_MODULES:
        return None
    return PRIVATE_TO.get(module, module)


def imported_commands(path: Path) -> set[str]:
    """The modules of ``orchestrator.commands`` that ``path`` imports, anywhere in it (functions included)."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "orchestrator.commands":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("orchestrator.commands."):
            found.add((node.module or "").split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("orchestrator.commands.")}
    return found


def crossings(folder: Path) -> list[str]:
    """``a.py -> b`` for each module of ``folder`` that imports another verb's module."""
    out = []
    for path in sorted(folder.glob("*.py")):
        if path.stem == "__init__":
            continue
        mine = verb_of(path.stem)
        for other in sorted(imported_commands(path)):
            if verb_of(other) is not None and verb_of(other) != mine:
                out.append(f"{path.name} -> {other}")
    return out


def test_no_verb_imports_another_verbs_module() -> None:
    """Verbs share through the service (orchestrator/service/), never through each other's modules."""
    folder = ROOT / "orchestrator" / "commands"
    assert len(list(folder.glob("*.py"))) > 15  # the real verbs
    assert crossings(folder) == []


def test_the_check_names_a_verb_that_imports_another(tmp_path: Path) -> None:
    (tmp_path / "top.py").write_text("def f():\n    from orchestrator.commands.cancel import act\n")
    (tmp_path / "cancel.py").write_text("from orchestrator.commands._common import scope\n")
    (tmp_path / "mcp.py").write_text("from orchestrator.commands import _mcp_server\n")
    (tmp_path / "_mcp_tools.py").write_text("import orchestrator.commands.status\n")
    assert crossings(tmp_path) == ["_mcp_tools.py -> status", "top.py -> cancel"]
