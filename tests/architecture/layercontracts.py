"""An import-linter contract type of orch's own: what runs when a module is imported.

``import_time_forbidden``: from the source modules, follow only the imports that run at import time
(statements not inside a function: module level, class bodies, ``if``/``try`` blocks; the imports
a function makes run only when it is called), plus the parent packages that every import runs. No
forbidden module may be reached. This is the rule of the CLI's start-up: a verb imports its heavy
modules inside the function that needs them. Imports under ``if TYPE_CHECKING:`` are left out by
grimp (``exclude_type_checking_imports``). Named in pyproject.toml's ``[tool.importlinter]``.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections import deque

import grimp
from importlinter import Contract, ContractCheck, fields, output


@functools.cache
def function_lines(module: str) -> frozenset[int]:
    """Line numbers of the statements inside functions (and lambdas) of ``module``'s source."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return frozenset()
    with open(spec.origin, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            body = node.body if isinstance(node.body, list) else [node.body]
            for stmt in body:
                for inner in ast.walk(stmt):
                    if hasattr(inner, "lineno"):
                        lines.add(inner.lineno)
    return frozenset(lines)


def import_time_edges(graph: grimp.ImportGraph, module: str) -> set[str]:
    """The modules ``module`` imports when it is imported (internal ones by their import lines)."""
    out: set[str] = set()
    if graph.is_module_squashed(module):  # an external package: grimp keeps none of its imports
        return out
    inside = function_lines(module)
    for imported in graph.find_modules_directly_imported_by(module):
        details = graph.get_import_details(importer=module, imported=imported)
        if not details or any(d["line_number"] not in inside for d in details):
            out.add(imported)
    parts = module.split(".")
    out.update(".".join(parts[:i]) for i in range(1, len(parts)))  # the parent packages run first
    return out


class ImportTimeForbiddenContract(Contract):
    """Source modules (and their descendants) must not reach a forbidden module at import time."""

    type_name = "import_time_forbidden"
    source_modules = fields.ListField(subfield=fields.ModuleField())
    forbidden_modules = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        forbidden = [m.name for m in self.forbidden_modules]  # type: ignore[attr-defined]

        def is_forbidden(name: str) -> bool:
            return any(name == f or name.startswith(f + ".") for f in forbidden)

        sources: set[str] = set()
        for module in self.source_modules:  # type: ignore[attr-defined]
            if module.name in graph.modules:
                sources.add(module.name)
                sources.update(graph.find_descendants(module.name))
        chains: list[list[str]] = []
        for source in sorted(sources):
            parent: dict[str, str | None] = {source: None}
            todo = deque([source])
            while todo:
                current = todo.popleft()
                if is_forbidden(current):
                    chain = [current]
                    while parent[chain[-1]] is not None:
                        chain.append(parent[chain[-1]])  # type: ignore[arg-type]
                    chains.append(chain[::-1])
                    continue
                if current not in graph.modules:
                    continue
                for nxt in sorted(import_time_edges(graph, current)):
                    if nxt not in parent:
                        parent[nxt] = current
                        todo.append(nxt)
        return ContractCheck(kept=not chains, metadata={"chains": chains})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for chain in check.metadata["chains"]:
            output.print_error(" -> ".join(chain) + " (at import time)")
            output.new_line()
