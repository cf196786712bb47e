"""torchrun's variables read as a node's, as a fact: a script written to be started once per node reads
``WORLD_SIZE`` as the number of nodes and ``RANK`` as its node's index, then multiplies them by its GPUs (PyTorch's
ImageNet example under ``--dist-url env://``: ``args.world_size = ngpus_per_node * args.world_size``,
``args.rank = args.rank * ngpus_per_node + gpu``; ``hosts = int(os.environ.get("WORLD_SIZE", 1))``, then
``init_process_group(world_size=hosts * gpus, rank=rank * gpus + local_rank)``). Under orch's ``per-node`` style a
task's ``WORLD_SIZE`` is the whole world's process count and it has no ``RANK`` (``NNODES`` and ``NODE_RANK`` are the
node's): the group waits for WORLD_SIZE x GPUs processes, and every node takes ranks 0..GPUs-1.
A product counts where it becomes a world size or a rank: assigned to a name that says so (``world_size``,
``args.rank``) or passed as ``world_size=``/``num_replicas=``/``rank=``; a read held in a name is followed within its
function. ``WORLD_SIZE`` times a batch size (a global batch) is not one: that reading is the process count's; nor is
a variable the project writes into the environment itself (it reads its own value back), nor a read only a passed
``--dist-url env://`` reaches (``envurl.py``: the flag defaults to another URL, so the script started as it is never
reads it).
Also the one reader of a key the environment is asked for (``env_read``), which ``facts.py`` uses too."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.launchstyles.envurl import ungated_reads, url_defaults
from orchestrator.source.walk import walk

# variable -> (what a per-node script takes it for, the word a name or keyword that holds the product has)
NODE_MEANINGS: dict[str, tuple[str, str]] = {"WORLD_SIZE": ("the node count", "world"), "RANK": ("the node's index",
                                                                                                  "rank")}
_KEYWORDS = {"world": frozenset({"world_size", "num_replicas"}), "rank": frozenset({"rank"})}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)


@dataclass(frozen=True)
class NodeRead:
    """``variable`` (``WORLD_SIZE`` or ``RANK``) read in ``file`` and multiplied at ``line`` (``code``: that
    product) into a world size or a rank."""

    file: str
    line: int
    code: str
    variable: str


def env_read(node: ast.AST) -> str | None:
    """``K`` of ``os.environ["K"]``, ``os.environ.get("K", ...)``, ``os.getenv("K", ...)``."""
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
        key: ast.AST = node.slice
    elif isinstance(node, ast.Call) and node.args and ast.unparse(node.func) in ("os.environ.get", "os.getenv"):
        key = node.args[0]
    else:
        return None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def node_reads(trees: Sequence[tuple[str, ast.Module]]) -> list[NodeRead]:
    """Each product of a ``WORLD_SIZE`` or ``RANK`` read that becomes a world size or a rank, in the files
    (``trees``: (file, parsed))."""
    out: list[NodeRead] = []
    written = {key for _, tree in trees for key in _written(tree)}
    defaults = url_defaults([tree for _, tree in trees])
    for file, tree in trees:
        parents = {child: parent for parent in walk(tree) for child in ast.iter_child_nodes(parent)}
        # a read under `if args.dist_url == "env://":` whose flag defaults to another URL does not run as started
        reached = {id(c) for c in ungated_reads(tree, frozenset(NODE_MEANINGS), defaults)}
        held: dict[tuple[int, str], str] = {}  # (scope, name's source) -> the variable it holds
        for node in walk(tree):
            variable = _read_of(node.value) if isinstance(node, ast.Assign) else None
            if isinstance(node, ast.Assign) and variable is not None and variable not in written and any(
                    id(c) in reached for c in walk(node.value) if isinstance(c, ast.Constant)):
                for target in node.targets:
                    if isinstance(target, ast.Name | ast.Attribute):
                        held[(id(_scope(node, parents)), ast.unparse(target))] = variable
        if not held:
            continue
        for node in walk(tree):
            product = _product(node)
            if product is None:
                continue
            scope = id(_scope(node, parents))
            read = next((held[(scope, ast.unparse(side))] for side in product
                         if (scope, ast.unparse(side)) in held), None)
            if read is not None and _becomes(node, parents, NODE_MEANINGS[read][1]):
                out.append(NodeRead(file, getattr(node, "lineno", 0), ast.unparse(node)[:80], read))
    return out


def _written(tree: ast.Module) -> set[str]:
    """The keys the file writes into the environment (``os.environ["RANK"] = str(args.node_rank)``): what the
    script reads back there is its own value."""
    return {str(target.slice.value) for node in walk(tree) if isinstance(node, ast.Assign) for target in node.targets
            if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "os.environ"
            and isinstance(target.slice, ast.Constant)}


def _read_of(value: ast.expr) -> str | None:
    """The variable of NODE_MEANINGS ``value`` reads: the read itself, or ``int(...)`` of it."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "int" and value.args:
        value = value.args[0]
    key = env_read(value)
    return key if key in NODE_MEANINGS else None


def _product(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """The two sides of ``a * b`` (``a *= b``: the target and the value)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return node.left, node.right
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult):
        return node.target, node.value
    return None


def _becomes(node: ast.AST, parents: dict[ast.AST, ast.AST], word: str) -> bool:
    """The product (or the sum it is in: ``rank * gpus + local_rank``) is assigned to a name with ``word`` in it,
    or passed as one of ``word``'s keywords."""
    if isinstance(node, ast.AugAssign):
        return word in ast.unparse(node.target).lower()
    current: ast.AST = node
    parent = parents.get(current)
    while isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add | ast.Mult):
        current, parent = parent, parents.get(parent)
    if isinstance(parent, ast.keyword):
        return parent.arg in _KEYWORDS[word]
    if isinstance(parent, ast.Assign) and parent.value is current:
        return any(word in ast.unparse(target).lower() for target in parent.targets)
    return False


def _scope(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    current = parents.get(node)
    while current is not None and not isinstance(current, _SCOPES):
        current = parents.get(current)
    return current if current is not None else node
