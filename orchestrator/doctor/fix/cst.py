"""What every fixer needs from libcst: the node a finding's line names, the statement and block around it,
statements put before or after another, and the names a fix writes (``dist``, ``os``).

The module is read once with positions and parents (:class:`Source`); a fixer finds its nodes there and
returns a new module (:func:`replace_node`), which keeps every other byte of the file as it was."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from orchestrator.doctor.fix.startlines import start_lines

Block = cst.Module | cst.IndentedBlock
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


class Source:
    """A parsed module with each node's start line and parent."""

    def __init__(self, module: cst.Module, *, parsed: bool = False) -> None:
        # a module just parsed holds each node once; another is copied first, as libcst's MetadataWrapper does
        self.module = module if parsed else module.deep_clone()
        self.starts = start_lines(self.module)
        self.parents = _parents(self.module)

    def line(self, node: cst.CSTNode) -> int:
        return self.starts[node]

    def nodes(self, kind: type[cst.CSTNode] = cst.CSTNode) -> list[cst.CSTNode]:
        return [node for node in self.starts if isinstance(node, kind)]

    def calls_at(self, line: int, name: Callable[[str], bool]) -> list[cst.Call]:
        """The calls starting on ``line`` whose callee's last name satisfies ``name``."""
        return [node for node in self.nodes(cst.Call) if isinstance(node, cst.Call) and self.line(node) == line
                and name(callee(node))]

    def calls(self, name: Callable[[str], bool]) -> list[cst.Call]:
        found = [node for node in self.nodes(cst.Call) if isinstance(node, cst.Call) and name(callee(node))]
        return sorted(found, key=self.line)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        out: list[cst.CSTNode] = []
        current = self.parent(node)
        while current is not None:
            out.append(current)
            current = self.parent(current)
        return out

    def statement(self, node: cst.CSTNode) -> Statement | None:
        """The statement of a block that holds ``node`` (a simple line or a compound statement)."""
        current: cst.CSTNode | None = node
        while current is not None:
            parent = self.parent(current)
            if isinstance(current, cst.SimpleStatementLine | cst.BaseCompoundStatement) and isinstance(
                    parent, cst.Module | cst.IndentedBlock):
                return current
            current = parent
        return None

    def block(self, statement: Statement) -> Block:
        parent = self.parent(statement)
        assert isinstance(parent, cst.Module | cst.IndentedBlock)
        return parent

    def scope(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The function around ``node`` (None at module level)."""
        return next((a for a in self.ancestors(node) if isinstance(a, cst.FunctionDef)), None)


def _parents(module: cst.Module) -> dict[cst.CSTNode, cst.CSTNode]:
    """Each node's parent: libcst's ParentNodeProvider's map, read from the nodes' fields (its visit rebuilds every
    node, seven times the time on a large script, and a fix reads the module again after each change)."""
    found: dict[cst.CSTNode, cst.CSTNode] = {}
    todo: list[cst.CSTNode] = [module]
    while todo:
        node = todo.pop()
        for child in _children(node):
            found[child] = node
            todo.append(child)
    return found


_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}  # a node class's field names (dataclasses.fields, once a class)


def _children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(field.name for field in dataclasses.fields(node))
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, list | tuple):
            yield from (item for item in value if isinstance(item, cst.CSTNode))


def callee(call: cst.Call) -> str:
    """``torch.distributed.init_process_group`` -> ``init_process_group``; ``f()(x)`` -> ``""``."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def code_of(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node)


def replace_in_block(src: Source, block: Block, body: Sequence[cst.BaseStatement]) -> cst.Module:
    """The module with ``block``'s statements replaced by ``body``."""
    if isinstance(block, cst.Module):
        return block.with_changes(body=list(body))
    return replace_node(src, block, block.with_changes(body=list(body)))


def replace_node(src: Source, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
    """``src.module`` with ``old`` (a node of it, by identity) replaced by ``new``: only the nodes from ``old``'s
    parent up to the module are rebuilt (``Module.deep_replace`` would rebuild every node of the file)."""
    child, replacement = old, new
    parent = src.parent(child)
    while parent is not None:
        replacement = _with_child(parent, child, replacement)
        child, parent = parent, src.parent(parent)
    assert child is src.module, "the node replaced is not in the module"
    return cst.ensure_type(replacement, cst.Module)


def _with_child(parent: cst.CSTNode, old: cst.CSTNode, new: cst.CSTNode) -> cst.CSTNode:
    """``parent`` with its child ``old`` (by identity, a field's value or an item of one) replaced by ``new``."""
    for field in dataclasses.fields(parent):
        value = getattr(parent, field.name)
        if value is old:
            return parent.with_changes(**{field.name: new})
        if isinstance(value, list | tuple) and any(item is old for item in value):
            return parent.with_changes(**{field.name: type(value)(new if item is old else item for item in value)})
    raise AssertionError(f"{type(old).__name__} is not a child of {type(parent).__name__}")


def insert(src: Source, anchor: Statement, new: Sequence[Statement], after: bool = False) -> cst.Module:
    """The module with ``new`` before (or after) ``anchor`` in its block. Statements put before the anchor go
    between its leading blank lines and its comments: a comment stays on the code it was written for."""
    block = src.block(anchor)
    body = list(block.body)
    at = next(i for i, stmt in enumerate(body) if stmt is anchor)
    added = list(new)
    if after:
        body[at + 1:at + 1] = added
    else:
        lines = list(anchor.leading_lines)
        blank = next((i for i, line in enumerate(lines) if line.comment is not None), len(lines))
        added[0] = added[0].with_changes(leading_lines=lines[:blank])
        body[at:at + 1] = [*added, anchor.with_changes(leading_lines=lines[blank:])]
    return replace_in_block(src, block, body)


def statement(code: str) -> Statement:
    parsed = cst.parse_statement(code)
    assert isinstance(parsed, cst.SimpleStatementLine | cst.BaseCompoundStatement)
    return parsed


def dist_name(module: cst.Module) -> str | None:
    """How the script names ``torch.distributed``: ``dist`` (``import torch.distributed as dist``, ``from torch
    import distributed as dist``), else ``torch.distributed`` when ``torch`` is imported, else None."""
    torch = False
    for stmt in _imports(module):
        if isinstance(stmt, cst.Import):
            for alias in stmt.names:
                dotted = code_of(module, alias.name)
                if dotted == "torch.distributed" and alias.asname is not None:
                    return code_of(module, alias.asname.name)
                torch = torch or (dotted.split(".")[0] == "torch" and alias.asname is None)
        elif (isinstance(stmt, cst.ImportFrom) and stmt.module is not None
              and not isinstance(stmt.names, cst.ImportStar)
              and code_of(module, stmt.module) == "torch"):
            for alias in stmt.names:
                if code_of(module, alias.name) == "distributed":
                    return code_of(module, alias.asname.name) if alias.asname is not None else "distributed"
    return "torch.distributed" if torch else None


def imports_name(module: cst.Module, name: str) -> bool:
    """``import NAME`` (or ``import NAME.sub``) at module level."""
    return any(isinstance(stmt, cst.Import) and any(
        alias.asname is None and code_of(module, alias.name).split(".")[0] == name for alias in stmt.names)
        for stmt in _imports(module))


def with_import(module: cst.Module, name: str) -> cst.Module:
    """``module`` with ``import NAME`` added when it does not import it yet: in the first group of imports (up to
    a blank line), before the first that sorts after it, else after the group; at the top (after a docstring)
    when there are no imports."""
    if imports_name(module, name):
        return module
    body = list(module.body)
    first = next((i for i, stmt in enumerate(body) if _is_import(stmt)), None)
    if first is None:
        at = 1 if body and _is_docstring(body[0]) else 0
    else:
        at = first
        while at < len(body) and _is_import(body[at]) and (at == first or not body[at].leading_lines):
            if _sort_key(module, body[at]) > name and _sort_key(module, body[at]) != "__future__":
                break
            at += 1
    added = statement(f"import {name}\n")
    if at < len(body) and at == first:  # before the group's first import: it takes the group's leading lines
        added = added.with_changes(leading_lines=body[at].leading_lines)
        body[at] = body[at].with_changes(leading_lines=())
    body.insert(at, added)
    return module.with_changes(body=body)


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, cst.Import | cst.ImportFrom)
                                                             for s in stmt.body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(
        stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.SimpleString | cst.ConcatenatedString)


def _sort_key(module: cst.Module, stmt: cst.BaseStatement) -> str:
    """The module an import statement names first (``import torch`` -> ``torch``, ``from os import path`` ->
    ``os``)."""
    assert isinstance(stmt, cst.SimpleStatementLine)
    small = stmt.body[0]
    if isinstance(small, cst.Import):
        return code_of(module, small.names[0].name)
    if isinstance(small, cst.ImportFrom) and small.module is not None:
        return code_of(module, small.module)
    return ""


def _imports(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    return [small for stmt in module.body if isinstance(stmt, cst.SimpleStatementLine) for small in stmt.body
            if isinstance(small, cst.Import | cst.ImportFrom)]
