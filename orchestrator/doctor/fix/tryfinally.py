"""``destroy_process_group()`` in a ``finally``: the statements after ``init_process_group`` to the end of its
function (or of the module) wrapped in ``try: ... finally: dist.destroy_process_group()``, so the group is
destroyed when training fails too. When those statements are one ``try`` already, only its ``finally`` is
added (or the destroy appended to it). The smallest section: everything before the init, the init itself and
the comments above the section keep their lines.

Where that cannot be written safely it is refused, with the reason (:class:`NoFix`): the init under a condition
or in a ``try`` (a destroy that always runs would fail where no group was made), no statement after it, a
function or class defined after a module-level init, a destroy left elsewhere in the section (it would run
twice), a ``yield`` in the section (a generator's ``finally`` runs when it is closed)."""

from __future__ import annotations

import libcst as cst

from orchestrator.doctor.fix.cst import Source, callee, code_of, replace_in_block, statement

_INIT, _DESTROY = "init_process_group", "destroy_process_group"
_INITS = frozenset({_INIT})


class NoFix(Exception):
    """No fix of this form here; the message says why (printed after ``not fixed:``)."""


def wrap(src: Source, scope: cst.FunctionDef | None, destroy: str) -> cst.Module:
    """The module with ``destroy`` (a call's code, ``dist.destroy_process_group()``) in a ``finally`` around
    what follows the init in ``scope`` (None: module level). Raises :class:`NoFix` with the reason."""
    block: cst.Module | cst.IndentedBlock
    if scope is None:
        block = src.module
    elif isinstance(scope.body, cst.IndentedBlock):
        block = scope.body
    else:
        raise NoFix(f"{scope.name.value}() is written on one line")
    where = f"{scope.name.value}()" if scope is not None else "the module"
    body = list(block.body)
    at = [i for i, stmt in enumerate(body) if _calls(stmt, _INITS) and isinstance(stmt, cst.SimpleStatementLine)]
    if len(at) != 1:
        nested = any(_calls(stmt, _INITS) for stmt in body)
        raise NoFix(f"init_process_group is {'under a condition or in a try' if nested else 'not called'} in "
                    f"{where}: a destroy that always runs would fail where no group was made")
    head, rest = body[:at[0] + 1], body[at[0] + 1:]
    if not rest:
        raise NoFix(f"nothing follows init_process_group in {where}")
    if scope is None and any(isinstance(stmt, cst.FunctionDef | cst.ClassDef) for stmt in rest):
        raise NoFix("a function or class is defined after the module-level init_process_group")
    if _has(rest, cst.Yield):
        raise NoFix(f"{where} is a generator: its finally would run only when it is closed")
    names = _destroyers(src)
    tail = [rest.pop()] if len(rest) > 1 and _returns(rest[-1]) and _calls(rest[-2], names) else []
    last: list[cst.BaseStatement] = []
    while rest and isinstance(rest[-1], cst.SimpleStatementLine) and _calls(rest[-1], names):
        last.insert(0, rest.pop())  # the destroy at the end (or a cleanup() that destroys) moves into the finally
    final = [stmt.with_changes(leading_lines=()) for stmt in last] or [statement(f"{destroy}\n")]
    if len(rest) == 1 and isinstance(rest[0], cst.Try):
        return replace_in_block(src, block, [*head, _with_finally(rest[0], final, names), *tail])
    if not rest or any(_calls(stmt, names) for stmt in rest):
        raise NoFix(f"{where} destroys the group elsewhere too: move that destroy by hand")
    first = rest[0]
    assert isinstance(first, cst.SimpleStatementLine | cst.BaseCompoundStatement)
    section = [first.with_changes(leading_lines=()), *rest[1:]]
    wrapped = cst.Try(body=cst.IndentedBlock(body=section), leading_lines=first.leading_lines,
                      finalbody=cst.Finally(body=cst.IndentedBlock(body=final)))
    return replace_in_block(src, block, [*head, wrapped, *tail])


def _returns(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in stmt.body)


def destroy_code(src: Source, dist: str) -> str:
    """The destroy call as the script writes it, else ``DIST.destroy_process_group()``."""
    calls = src.calls(lambda name: name == _DESTROY)
    return code_of(src.module, calls[0]) if calls else f"{dist}.{_DESTROY}()"


def _destroyers(src: Source) -> frozenset[str]:
    """``destroy_process_group`` and the names of the file's functions that call it (``cleanup``)."""
    return frozenset({_DESTROY, *(f.name.value for f in src.nodes(cst.FunctionDef)
                                   if isinstance(f, cst.FunctionDef) and _calls(f.body, frozenset({_DESTROY})))})


def _with_finally(stmt: cst.Try, lines: list[cst.BaseStatement], names: frozenset[str]) -> cst.Try:
    if _calls(stmt.body, names) or any(_calls(h, names) for h in stmt.handlers) or (
            stmt.orelse is not None and _calls(stmt.orelse, names)):
        raise NoFix("the try after init_process_group destroys the group in its body or handlers: move that "
                    "destroy by hand")
    if stmt.finalbody is None:
        return stmt.with_changes(finalbody=cst.Finally(body=cst.IndentedBlock(body=lines)))
    final = stmt.finalbody.body
    if _calls(final, names):
        raise NoFix("its finally destroys the group already")
    if not isinstance(final, cst.IndentedBlock):
        raise NoFix("its finally is written on one line")
    return stmt.with_changes(finalbody=stmt.finalbody.with_changes(body=final.with_changes(
        body=[*final.body, *lines])))


class _Find(cst.CSTVisitor):
    def __init__(self, calls: frozenset[str], kind: type[cst.CSTNode] | None) -> None:
        self.calls, self.kind, self.found = calls, kind, False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if (isinstance(node, cst.Call) and callee(node) in self.calls) or (
                self.kind is not None and isinstance(node, self.kind)):
            self.found = True
        # a nested function's or class's body is not this section's flow
        return not self.found and not isinstance(node, cst.FunctionDef | cst.ClassDef | cst.Lambda)


def _calls(node: cst.CSTNode, names: frozenset[str]) -> bool:
    finder = _Find(names, None)
    node.visit(finder)
    return finder.found


def _has(nodes: list[cst.BaseStatement], kind: type[cst.CSTNode]) -> bool:
    finder = _Find(frozenset(), kind)
    for node in nodes:
        node.visit(finder)
    return finder.found
