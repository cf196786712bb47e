"""The values DDP008 reads a rendezvous from (``doctor/rendezvousvalues.py``): each reading on the value it names and on
the near miss it must not take."""

from __future__ import annotations

import ast

import pytest

from orchestrator.doctor.rendezvousvalues import constant, env_url, fresh_local_port, overwrites, tcp_literal
from orchestrator.source.analysis import Analysis


def _last_value(source: str) -> tuple[Analysis, ast.expr]:
    """The script's reading and the value of its last assignment."""
    a = Analysis(ast.parse(source), "train.py")
    value = [n for n in ast.walk(a.module.tree) if isinstance(n, ast.Assign)][-1].value
    return a, value


@pytest.mark.parametrize(("text", "expected"), [
    ('"tcp://10.0.0.1:23456"', True),
    ('f"tcp://{host}:58472"', True),
    ('"tcp://"', False),  # the head of a URL built from parts
    ('"env://"', False),
    ('f"{scheme}://10.0.0.1:1"', False),
])
def test_tcp_literal_is_an_address_written_in(text: str, expected: bool) -> None:
    assert tcp_literal(ast.parse(text, mode="eval").body) is expected


@pytest.mark.parametrize(("line", "expected"), [
    ('url = f"tcp://{os.environ[\'MASTER_ADDR\']}:{os.environ[\'MASTER_PORT\']}"', True),
    ('url = f"tcp://{os.environ[\'MASTER_ADDR\']}:23456"', False),  # the port is written in
    ('url = f"tcp://{host}:{port}"', False),  # values from nowhere the launcher sets
])
def test_env_url_is_the_launchers_address_read_back(line: str, expected: bool) -> None:
    a, value = _last_value(f"import os\nhost, port = 'a', 1\n{line}\n")
    assert env_url(a, value) is expected


@pytest.mark.parametrize(("port", "expected"), [
    ("find_free_port()", True),
    ("random.randrange(20000, 30000)", False),  # a guess that can collide
])
def test_fresh_local_port_is_a_port_found_free_at_run_time(port: str, expected: bool) -> None:
    a, value = _last_value(f"import random\nport = {port}\nurl = f'tcp://127.0.0.1:{{port}}'\n")
    assert fresh_local_port(a, value) is expected


@pytest.mark.parametrize(("source", "expected"), [
    ("import os\nrank = int(os.environ['OMPI_COMM_WORLD_RANK'])\nos.environ['RANK'] = str(rank)\n", False),
    ("def setup(args):\n    os.environ['WORLD_SIZE'] = str(args.nodes * args.gpus)\n", False),  # the user's flags
    ("import random\nos.environ['MASTER_PORT'] = str(random.randint(20000, 30000))\n", True),
])
def test_overwrites_is_a_computed_value_not_one_read_back(source: str, expected: bool) -> None:
    a, value = _last_value(source)
    assert overwrites(a, value, "RANK") is expected


@pytest.mark.parametrize(("source", "expected"), [
    ("size = 8\n", True),
    ("size = f'{1}:{2}'\n", True),
    ("size = str(int(8))\n", True),
    ("size = None\n", False),
    ("import os\nsize = os.environ['WORLD_SIZE']\n", False),
    ("def init(n):\n    size = n\n\ninit(4)\ninit(8)\n", True),  # every call passes a constant
    ("def init(n):\n    size = n\n\ninit(4)\ninit(args.n)\n", False),
])
def test_constant_follows_names_and_parameters(source: str, expected: bool) -> None:
    a = Analysis(ast.parse(source), "train.py")
    value = next(n.value for n in ast.walk(a.module.tree) if isinstance(n, ast.Assign)
                 and isinstance(n.targets[0], ast.Name) and n.targets[0].id == "size")
    assert constant(a, value) is expected
