"""A rendezvous only one machine can reach, as a fact: ``init_process_group``'s ``init_method`` is this machine's
loopback address (``tcp://127.0.0.1:...``, ``tcp://localhost:...``), written in the call or assigned by the script
to what the call passes, unconditionally (``args.dist_url = "tcp://127.0.0.1:" + str(port)`` before ``main(args)``:
the ``--dist-url`` a user passes is overwritten). On one node the processes still meet; across nodes each node
waits at its own address and the nodes never meet. An assignment under a condition the user controls
(``if dist_url == "auto": dist_url = f"tcp://127.0.0.1:{port}"``) is not a fact: the user's address is kept; nor
is a group of one process (``world_size=1``), which meets nobody.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from orchestrator.source.branches import unconditional
from orchestrator.source.exprnames import last_name
from orchestrator.source.walk import walk
from orchestrator.source.worldsize import group_of_one

_LOOPBACK = ("tcp://127.", "tcp://localhost")


def forced_loopback(trees: Sequence[tuple[str, ast.Module]]) -> list[tuple[str, int, str]]:
    """(file, line, code) of each loopback ``init_method`` of the files (``trees``: (file, parsed)): in the call, or
    an unconditional assignment of the name the call passes."""
    passed: set[str] = set()
    out: list[tuple[str, int, str]] = []
    for file, tree in trees:
        for node in walk(tree):
            if not (isinstance(node, ast.Call) and last_name(node.func) == "init_process_group") or group_of_one(node):
                continue
            method = next((k.value for k in node.keywords if k.arg == "init_method"),
                          node.args[1] if len(node.args) > 1 else None)
            if method is not None and _loopback(method):
                out.append((file, node.lineno, ast.unparse(node)[:80]))
            elif isinstance(method, ast.Attribute | ast.Name):
                passed.add(str(last_name(method)))
    for file, tree in trees:
        parents = {child: parent for parent in walk(tree) for child in ast.iter_child_nodes(parent)}
        for node in walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and last_name(node.targets[0]) in passed
                    and _loopback(node.value) and unconditional(node, parents)):
                out.append((file, node.lineno, ast.unparse(node)[:80]))
    return out


def _loopback(value: ast.expr) -> bool:
    """A URL whose head is a loopback ``tcp://`` address: a string, an f-string, ``"tcp://127.0.0.1:" + port`` or
    ``"tcp://127.0.0.1:{}".format(port)``."""
    while True:
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            value = value.left
        elif isinstance(value, ast.JoinedStr) and value.values:
            value = value.values[0]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "format":
            if _host_filled(value.func.value, "{}", value.args[0] if value.args else None):
                return True  # "tcp://{}:{}".format("localhost", port)
            value = value.func.value
        elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mod):
            first = value.right.elts[0] if isinstance(value.right, ast.Tuple) and value.right.elts else value.right
            return _host_filled(value.left, "%s", first)  # "tcp://%s:%d" % ("127.0.0.1", port)
        else:
            break
    return isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.startswith(_LOOPBACK)


def _host_filled(template: ast.expr, slot: str, host: ast.expr | None) -> bool:
    """A ``tcp://`` template whose host is its first slot, filled with a loopback address."""
    text = template.value if isinstance(template, ast.Constant) and isinstance(template.value, str) else ""
    name = host.value if isinstance(host, ast.Constant) and isinstance(host.value, str) else None
    return text.startswith("tcp://" + slot) and name is not None and ("tcp://" + name).startswith(_LOOPBACK)
