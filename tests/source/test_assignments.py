"""The last value a name or attribute is given before a statement, in the blocks around it."""

from __future__ import annotations

import ast
import textwrap

import pytest

from orchestrator.source.assignments import assigned, assignment_before, may_change, returned_at, unpacked_from


def _at(source: str, marker: str = "use(") -> tuple[ast.stmt, dict[ast.AST, ast.AST]]:
    tree = ast.parse(textwrap.dedent(source))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Expr) and ast.unparse(n).startswith(marker))
    return call, parents


def _before(source: str, name: str) -> str | bool | None:
    at, parents = _at(source)
    found = assignment_before(name, at, parents)
    return ast.unparse(found) if isinstance(found, ast.stmt) else found


def test_the_last_assignment_in_the_blocks_around_decides() -> None:
    source = """
    def worker(gpu, args):
        args.rank = 0
        if gpu:
            args.rank = gpu
            use(args.rank)
    """
    assert _before(source, "args.rank") == "args.rank = gpu"


def test_an_assignment_in_an_outer_block_is_found_past_the_inner_one() -> None:
    source = """
    def main(args):
        args.world_size = ngpus
        for _ in range(1):
            use(args.world_size)
    """
    assert _before(source, "args.world_size") == "args.world_size = ngpus"


def test_a_block_in_between_that_assigns_it_leaves_it_unknown() -> None:
    source = """
    def worker(gpu, args):
        args.rank = gpu
        if args.dist_url == "env://":
            args.rank = int(os.environ["RANK"])
        use(args.rank)
    """
    assert _before(source, "args.rank") is False


def test_an_if_that_assigns_it_only_while_unset_does_not_count() -> None:
    source = """
    def worker(gpu, args):
        args.rank = gpu
        if args.rank == -1:
            args.rank = int(os.environ["RANK"])
        use(args.rank)
    """
    assert _before(source, "args.rank") == "args.rank = gpu"


def test_a_call_handed_the_attributes_object_may_change_it() -> None:
    source = """
    def worker(gpu, args):
        args.rank = gpu
        init_distributed_mode(args)
        use(args.rank)
    """
    assert _before(source, "args.rank") is False
    assert _before(source.replace("init_distributed_mode(args)", "log(gpu)"), "args.rank") == "args.rank = gpu"
    read_only = source.replace("init_distributed_mode(args)", "pprint.pprint(vars(args))")
    assert _before(read_only, "args.rank") == "args.rank = gpu"


@pytest.mark.parametrize("source", [
    "def worker(gpu):\n    use(gpu)\n",  # a parameter: nothing assigns it
    "args.rank = 3\ndef worker(gpu, args):\n    use(args.rank)\n",  # not past the function
])
def test_nothing_assigns_it_in_the_function(source: str) -> None:
    assert _before(source, "gpu" if "gpu)" in source else "args.rank") is None


@pytest.mark.parametrize(("statement", "value"), [
    ("rank = gpu", "gpu"),
    ("args.rank = gpu", "gpu"),
    ("rank, world = 1, 2", "(rank, world)"),
    ("rank += 1", "rank"),
    ("rank: int = gpu", "gpu"),
    ("other = gpu", None),
])
def test_the_value_a_statement_gives(statement: str, value: str | None) -> None:
    name = "args.rank" if statement.startswith("args.") else "rank"
    found = assigned(ast.parse(statement).body[0], name)
    assert (ast.unparse(found) if found is not None else None) == value


def test_may_change_reads_the_statements_inside() -> None:
    loop = ast.parse("for x in y:\n    rank = x\n").body[0]
    assert may_change(loop, "rank") and not may_change(loop, "world")


@pytest.mark.parametrize(("source", "found"), [
    ("local_rank, rank = init_ddp(True)\nuse(rank)\n", ("init_ddp(True)", 1)),
    ("[rank, world] = setup()\nuse(rank)\n", ("setup()", 0)),
    ("rank, *rest = setup()\nuse(rank)\n", None),  # a starred target: no fixed place
    ("rank, world = 1, 2\nuse(rank)\n", None),  # no call taken apart
    ("local_rank, rank = init_ddp(True)\nrank = 0\nuse(rank)\n", None),  # given another value since
])
def test_the_call_a_name_is_taken_apart_from(source: str, found: tuple[str, int] | None) -> None:
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    name = next(n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "rank"
                and isinstance(n.ctx, ast.Load))
    unpacked = unpacked_from(name, parents)
    assert (None if unpacked is None else (ast.unparse(unpacked[0]), unpacked[1])) == found


def test_what_each_returned_tuple_holds_at_a_place() -> None:
    function = ast.parse("def f():\n    if x:\n        return a, b\n    if y:\n        return c\n    return d, e, g\n")
    node = function.body[0]
    assert isinstance(node, ast.FunctionDef)
    assert sorted(ast.unparse(v) for v in returned_at(node, 1)) == ["b", "e"]
    assert [ast.unparse(v) for v in returned_at(node, 2)] == ["g"]
