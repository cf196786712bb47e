"""The ``if`` statements around a node, each with the side the node sits on: one walk up the parents that the
rules share (a device used on the undistributed side, a load beside a mapped one, a rank set in another branch,
a flag raised on rank 0's side), and whether anything but the script's main guard stands around it."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping

from orchestrator.source.exprnames import FunctionNode, last_name


def enclosing_ifs(parents: Mapping[ast.AST, ast.AST], node: ast.AST) -> Iterator[tuple[ast.If, bool]]:
    """Each ``if`` around ``node`` within its function, class or module, innermost first, with the side ``node``
    sits on (True: the body; an ``elif`` is the ``else`` of the ``if`` before it). An ``if`` whose test holds
    ``node`` is passed over."""
    child, current = node, parents.get(node)
    while current is not None and not isinstance(current, FunctionNode | ast.ClassDef | ast.Module):
        if isinstance(current, ast.If) and child is not current.test:
            yield current, child in current.body
        child, current = current, parents.get(current)


def other_side(statement: ast.If, in_body: bool) -> list[ast.stmt]:
    """The statements of the side of ``statement`` that the node on ``in_body``'s side never runs with."""
    return statement.orelse if in_body else statement.body


def main_guard(test: ast.expr) -> bool:
    """``if __name__ == "__main__":``'s test (its code runs only when the file is the script, never on import)."""
    text = ast.unparse(test)
    return "__name__" in text and "__main__" in text


def under_main_guard(node: ast.AST, parents: Mapping[ast.AST, ast.AST]) -> bool:
    """``node`` is under ``if __name__ == "__main__":`` (it runs only when its file is the script, never on import)."""
    current = parents.get(node)
    while current is not None:
        if isinstance(current, ast.If) and main_guard(current.test):
            return True
        current = parents.get(current)
    return False


def unconditional(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """No ``if``/loop/``try``/``with`` around ``node`` in its function (or module) but ``if __name__ == "__main__":``:
    it runs whenever its function (or the script) does."""
    current = parents.get(node)
    while current is not None and not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
        if isinstance(current, ast.If) and main_guard(current.test):
            current = parents.get(current)
            continue
        if isinstance(current, ast.If | ast.For | ast.While | ast.Try | ast.With | ast.IfExp):
            return False
        current = parents.get(current)
    return True



# what names the operating system in a test, and the values a Linux cluster node gives
PLATFORM = frozenset({"sys.platform", "os.name", "platform.system"})
_LINUX = frozenset({"linux", "linux2", "posix"})


def off_linux_side(test: ast.expr, qualname: Callable[[ast.expr], str | None]) -> bool | None:
    """Which side of an ``if`` testing the operating system never runs on a Linux cluster node: True for its body
    (``os.name == "nt"``, ``sys.platform == "win32"``, ``sys.platform.startswith("win")``, ``platform.system() ==
    "Windows"``), False for its ``else`` (the same with ``!=`` or ``not``, or a test for Linux itself); None for a
    test of anything else or of another shape. ``qualname`` names what an expression refers to (``os.name`` through
    the file's imports)."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    said: ast.expr | None = None
    value: object = None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.NotEq):
        said, other = test.left, test.comparators[0]
        value = other.value if isinstance(other, ast.Constant) else None
        negated ^= isinstance(test.ops[0], ast.NotEq)
    elif isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "startswith" and (
            len(test.args) == 1 and isinstance(test.args[0], ast.Constant)):
        said, value = test.func.value, test.args[0].value
    if isinstance(said, ast.Call) and not said.args:
        said = said.func  # platform.system()
    if said is None or qualname(said) not in PLATFORM or not isinstance(value, str):
        return None
    return (value.lower() not in _LINUX) != negated


_BLOCKS = ("body", "orelse", "finalbody")


def _split_block(parent: ast.AST | None, statement: ast.AST) -> tuple[list[ast.stmt], list[ast.stmt]]:
    for field in _BLOCKS:
        block = getattr(parent, field, None)
        if isinstance(block, list):
            index = next((i for i, s in enumerate(block) if s is statement), None)
            if index is not None:
                return block[:index], block[index + 1:]
    return [], []


def statements_before(parent: ast.AST | None, statement: ast.AST) -> list[ast.stmt]:
    """The statements before ``statement`` in the block of ``parent`` (its body, ``else`` or ``finally``) that holds
    it; none where no such block holds it (an ``except`` handler's statement is its handler's own body)."""
    return _split_block(parent, statement)[0]


def statements_after(parent: ast.AST | None, statement: ast.AST) -> list[ast.stmt]:
    """The statements after ``statement`` in the block of ``parent`` that holds it (as ``statements_before``)."""
    return _split_block(parent, statement)[1]


def inside(parents: Mapping[ast.AST, ast.AST], node: ast.AST, ancestor: ast.AST) -> bool:
    """``ancestor`` stands around ``node`` (it is one of ``node``'s parents)."""
    current = parents.get(node)
    while current is not None:
        if current is ancestor:
            return True
        current = parents.get(current)
    return False


def env_presence(qualname: Callable[[ast.expr], str | None], test: ast.expr) -> tuple[str, bool] | None:
    """``(NAME, True)`` for a test that an environment variable is set (``"NAME" in os.environ``,
    ``os.environ.get("NAME") is not None``, ``os.getenv("NAME") is not None``), ``(NAME, False)`` for its negation
    (``not in``, ``is None``), None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.In | ast.NotIn) and _name(left) and qualname(right) == "os.environ":
        return _name(left) or "", isinstance(op, ast.In)
    if isinstance(op, ast.Is | ast.IsNot) and isinstance(right, ast.Constant) and right.value is None and (
            isinstance(left, ast.Call) and qualname(left.func) in ("os.environ.get", "os.getenv") and left.args
            and _name(left.args[0])):
        return _name(left.args[0]) or "", isinstance(op, ast.IsNot)
    return None


def _name(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def catches(handler: ast.ExceptHandler, kinds: frozenset[str]) -> bool:
    """Whether ``handler`` takes an exception of one of ``kinds`` (by the caught class's last name): a bare ``except:``
    takes all; ``except (KeyError, Exception):`` takes what ``Exception`` does."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(last_name(t) in kinds for t in types)


def twin_value(parents: Mapping[ast.AST, ast.AST], value: ast.expr) -> ast.expr | None:
    """For ``value`` assigned to a name on one side of an ``if`` (``devices = "auto"`` under ``else:``), the value the
    other side assigns to the same name among its own statements (``devices = args.num_gpu``); None if none."""
    statement = parents.get(value)
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and statement.value is value):
        return None
    name, around = statement.targets[0].id, parents.get(statement)
    if not isinstance(around, ast.If):
        return None
    return next((s.value for s in other_side(around, statement in around.body) if isinstance(s, ast.Assign)
                 and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name), None)


def in_block_of(parents: Mapping[ast.AST, ast.AST], value: ast.AST, read: ast.AST) -> bool:
    """``read`` sits after the statement that assigns ``value``, in the same block (cyc_firstpass's fallback ``rank =
    0`` then ``local_rank = rank`` in one ``else``): there the name holds that value, whatever other branches give it.
    A fallback read after its ``if`` (``if distributed: rank = ...`` / ``else: rank = 0``, then ``model.to(rank)``)
    may hold the other branches' values."""
    statement = _statement(parents, value)
    block = parents.get(statement) if statement is not None else None
    current: ast.AST | None = read
    while current is not None and parents.get(current) is not block:
        current = parents.get(current)
    return block is not None and current is not None and any(s is statement for s in statements_before(block, current))


def _statement(parents: Mapping[ast.AST, ast.AST], node: ast.AST) -> ast.stmt | None:
    current: ast.AST | None = node
    while current is not None and not isinstance(current, ast.stmt):
        current = parents.get(current)
    return current
