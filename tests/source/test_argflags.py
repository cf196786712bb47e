"""source/argflags.py: the flags a module declares with argparse, read from its syntax tree."""

from __future__ import annotations

import ast

import pytest

from orchestrator.source.argflags import attribute_read, declared_flags

SCRIPT = '''
import argparse
p = argparse.ArgumentParser()
p.add_argument("data")                                   # positional: not a flag
p.add_argument("--num_nodes", "-n", type=int, default=1)
p.add_argument("--gpus", dest="devices", default="0,")
group = p.add_argument_group("x")
group.add_argument("--seed", default=0)
other.add_arguments("--not-argparse")
'''


def test_every_add_argument_with_an_option_string_in_order_with_its_keywords() -> None:
    found = list(declared_flags(ast.parse(SCRIPT)))
    assert [d.options for d in found] == [("--num_nodes", "-n"), ("--gpus",), ("--seed",)]
    assert [sorted(d.keywords) for d in found] == [["default", "type"], ["default", "dest"], ["default"]]
    first = found[0].keywords["default"]
    assert isinstance(first, ast.Constant) and first.value == 1
    assert found[0].node.lineno == 5


def test_a_module_without_argparse_declares_nothing() -> None:
    assert list(declared_flags(ast.parse("x = 1\nprint(x)\n"))) == []


def test_the_attribute_is_dest_else_the_first_long_option_as_argparse_names_it() -> None:
    source = '''\
import argparse
p = argparse.ArgumentParser()
p.add_argument("-d", "--num-devices", default="auto")
p.add_argument("--nodes", "--num_nodes", dest="n", default=1)
p.add_argument("-s", default=0)
'''
    found = list(declared_flags(ast.parse(source)))
    assert [d.attribute for d in found] == ["num_devices", "n", "s"]
    assert [d.longs for d in found] == [("--num-devices",), ("--nodes", "--num_nodes"), ("-s",)]

    assert [d.long_names for d in found] == [{"num_devices"}, {"nodes", "num_nodes"}, frozenset()]


def test_a_name_bound_to_add_argument_declares_flags_too() -> None:
    source = '''\
import argparse
parser = argparse.ArgumentParser()
arg = parser.add_argument
arg("-c", "--config", default="configs/base.yaml")
arg("data_dir")
other = print
other("--not-a-flag")
'''
    found = list(declared_flags(ast.parse(source)))
    assert [(d.options, d.attribute) for d in found] == [(("-c", "--config"), "config")]


@pytest.mark.parametrize(("code", "read"), [
    ("dist.init_process_group('nccl', init_method=args.dist_url)", True),
    ("url = getattr(args, 'dist_url')", True),
    ("def main(dist_url):\n    pass\nmain(**vars(args))", True),  # a parameter vars(args) fills
    ("args.dist_url = 'env://'", False),  # written, never read
    ("dist.init_process_group('nccl', init_method='env://')", False),
])
def test_a_flags_attribute_is_read_by_name_string_or_parameter(code: str, read: bool) -> None:
    assert attribute_read([ast.parse(code)], "dist_url") is read
