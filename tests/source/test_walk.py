"""The doctor's cached walk: the same nodes in the same order as ``ast.walk``, read once per node."""

from __future__ import annotations

import ast

from orchestrator.source.walk import walk

SOURCE = """
def f(x):
    for i in range(x):
        if i:
            yield [i, {i: i}]

class C:
    def g(self):
        return lambda y: y + 1
"""


def test_walk_is_ast_walk_in_its_order_for_every_node() -> None:
    tree = ast.parse(SOURCE)
    for node in ast.walk(tree):
        assert walk(node) == tuple(ast.walk(node))


def test_a_node_is_walked_once_and_a_new_tree_afresh() -> None:
    tree = ast.parse(SOURCE)
    assert walk(tree) is walk(tree)  # the descendants kept on the node
    again = ast.parse(SOURCE)
    assert walk(again) is not walk(tree) and len(walk(again)) == len(walk(tree))
    assert ast.dump(tree) == ast.dump(again)  # the cache is not one of the node's fields
