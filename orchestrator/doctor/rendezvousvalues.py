"""What a rendezvous value is made of, for DDP008 (``rules_rendezvous.py``): a ``tcp://`` address written in, one
built from the launcher's environment, a loopback address with a port found free at run time, a constant (also
through parameters every call passes a constant), a value read back from the environment or taken from the user's
own flags."""

from __future__ import annotations

import ast
import re

from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.passedvalues import passed_constants
from orchestrator.source.walk import walk


def tcp_literal(expr: ast.expr) -> bool:
    """``"tcp://host:port"`` or ``f"tcp://{host}:58472"``."""
    if isinstance(expr, ast.Constant):  # a bare "tcp://" is the head of a URL built from parts
        return isinstance(expr.value, str) and expr.value.startswith("tcp://") and expr.value != "tcp://"
    if isinstance(expr, ast.JoinedStr) and expr.values:
        head = expr.values[0]
        return isinstance(head, ast.Constant) and isinstance(head.value, str) and head.value.startswith("tcp://")
    return False


def env_url(a: Reading, expr: ast.expr) -> bool:
    """``f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"``: every part that is not
    punctuation read from the environment (the launcher's address), none hard-coded."""
    if not isinstance(expr, ast.JoinedStr):
        return False
    parts = [v for v in expr.values if isinstance(v, ast.FormattedValue)]
    text = "".join(str(v.value) for v in expr.values if isinstance(v, ast.Constant))
    return bool(parts) and text.strip(":/") in ("tcp", "tcp:/") and all(_from_env(a, v.value, 0) for v in parts)


def fresh_local_port(a: Reading, expr: ast.expr) -> bool:
    """``port = find_free_port(); dist_url = f"tcp://127.0.0.1:{port}"``: a loopback address with a port the OS
    says is free when the script runs, for the workers it spawns itself (DDP014 reports the spawn), not a fixed
    one (a ``random.randrange`` port is a guess that can collide: still reported)."""
    if not isinstance(expr, ast.JoinedStr):
        return False
    text = "".join(str(v.value) for v in expr.values if isinstance(v, ast.Constant))
    parts = [v.value for v in expr.values if isinstance(v, ast.FormattedValue)]
    if not parts or not any(host in text for host in ("127.0.0.1", "localhost")):
        return False
    port = parts[-1]
    if isinstance(port, ast.Name):
        _, value = a.module.resolve(port.id, port)
        port = value if value is not None else port
    return isinstance(port, ast.Call) and "port" in (last_name(port.func) or "").lower()  # find_free_port()


def overwrites(a: Reading, value: ast.expr, key: str) -> bool:
    """A computed value for a variable the launcher sets (MPI's rank, a free port), not one read back from
    the environment (``os.environ["RANK"] = str(args.rank)`` with ``args.rank`` from ``OMPI_COMM_WORLD_RANK``)."""
    return not _from_env(a, value, 0) and not _from_arguments(a, value)


def _from_arguments(a: Reading, expr: ast.expr) -> bool:
    """The user's own flags (``str(args.nodes * args.gpus)``, a parameter): their choice, not a guess to flag."""
    for node in walk(expr):
        if isinstance(node, ast.Attribute) and (dotted(node) or "").split(".")[0] in ("args", "opt", "opts", "cfg",
                                                                                     "config", "hparams"):
            return True
        if isinstance(node, ast.Name) and a.module.resolve(node.id, node) == (True, None) and (
                a.module.function_of(node) is not None):
            return True
    return False


def _from_env(a: Reading, expr: ast.expr, depth: int) -> bool:
    if depth > 4:
        return False
    for node in walk(expr):
        if isinstance(node, ast.Subscript | ast.Call) and (a.ranks.env_key(node) is not None or (
                isinstance(node, ast.Call) and _ENVIRONMENT.search(a.module.qualname(node.func) or ""))):
            return True
        if isinstance(node, ast.Call):
            helper = a.module.local_function(node)  # world_info_from_env(): reads the environment itself
            if helper is not None and any(isinstance(n, ast.Subscript) and a.module.qualname(n.value) == "os.environ"
                                          for n in walk(helper)):
                return True
        if isinstance(node, ast.Name | ast.Attribute):
            key = dotted(node)
            if key is None:
                continue
            values = a.module.held(key, node)
            if isinstance(node, ast.Name) and a.module.resolve(key, node)[1] is None:
                values += _unpacked_from(a, node)  # a, b = f(): not a value the scope holds
            if any(v is not expr and _from_env(a, v, depth + 1) for v in values):
                return True
    return False


_ENVIRONMENT = re.compile(r"^os\.|environ|Environment")


def _unpacked_from(a: Reading, name: ast.Name) -> list[ast.expr]:
    """``a, b, c = f()``: the call ``name`` was unpacked from, in its scope."""
    scope = a.module.scope_of(name).node
    return [node.value for node in walk(scope) if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name.id for e in t.elts)
        for t in node.targets)]


def constant(a: Reading, expr: ast.expr, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(expr, ast.Constant):
        return expr.value is not None
    if isinstance(expr, ast.JoinedStr):
        return all(isinstance(v, ast.Constant)
                   or (isinstance(v, ast.FormattedValue) and constant(a, v.value, depth + 1)) for v in expr.values)
    if isinstance(expr, ast.Call) and a.module.qualname(expr.func) in ("str", "int") and len(expr.args) == 1:
        return constant(a, expr.args[0], depth + 1)
    if isinstance(expr, ast.Name):  # a parameter: what every call and its default hand it
        found, value = a.module.resolve(expr.id, expr)
        return constant(a, value, depth + 1) if value is not None else found and bool(passed_constants(a, expr))
    return False
