"""DDP020: names nothing defines (pyflakes' undefined-name analysis), an error on the path every run takes,
a warning on a guessed path or in the project's modules, silent where pyflakes cannot know (``import *``,
``globals()``, annotations, other Pythons' builtins) and on a post's omitted imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.doctor import check_file, check_source

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_HEAD = "import os\nimport torch\nimport torch.distributed as dist\n"


def names(source: str, filename: str = "t.py") -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.message) for f in check_source(source, filename) if f.code == "DDP020"]


def test_seed_000s_final_save_through_an_undefined_name_is_an_error() -> None:
    found = [f for f in check_file(FIXTURES / "seed000_mnist_extra_process.py") if f.code == "DDP020"]
    assert [(f.line, f.severity) for f in found] == [(41, "error")]
    assert "'ddp_model'" in found[0].message and "model.module.state_dict()" in found[0].fix


def test_a_fragment_without_imports_keeps_its_omitted_imports_and_definitions_quiet() -> None:
    source = ("def main():\n    dist.init_process_group('nccl')\n    model = DDP(LeNet().cuda())\n"
              "    opt = optim.SGD(model.parameters(), lr=0.1)\n    train(model, opt)\n"
              "    torch.save(ddp_model.module.state_dict(), 'm.pth')\nmain()\n")
    assert [(line, severity) for line, severity, _ in names(source)] == [(6, "error")]


@pytest.mark.parametrize("body", [
    "from helpers import *\ndef f():\n    return undefined_thing\n",
    "def f():\n    globals()['made'] = 1\n    return made\n",
    "exec('made = 1')\nprint(made)\n",
    "import builtins\nbuiltins.made = 1\nprint(made)\n",
    "def f(x: 'NotImported') -> 'AlsoNot':\n    return x\n",
    "def f():\n    try:\n        return unicode\n    except NameError:\n        return str\n",
    "group = ExceptionGroup\nprint(anext, PythonFinalizationError)\n",
    "__all__ = ['f', 'missing']\ndef f():\n    pass\n",
    "def f(items):\n    for i, x in enumerate(items):\n        if i:\n            print(last)\n        last = x\n",
    "import typing\nif typing.TYPE_CHECKING:\n    Alias = NotImportedHere\nif False:\n    print(never)\n",
    "@profile\ndef f():\n    return _('text')\n",
], ids=["import-star", "globals", "exec", "builtins", "string-annotations", "name-error-handled", "newer-builtins",
        "dunder-all", "bound-on-a-later-pass", "code-that-never-runs", "injected-builtins"])
def test_what_pyflakes_cannot_know_is_not_reported(body: str) -> None:
    assert names(_HEAD + body) == []


def test_vars_of_an_object_does_not_silence_the_file() -> None:
    assert [line for line, _, _ in names(_HEAD + "print(vars(os))\nprint(ddp_model)\n")] == [5]


@pytest.mark.parametrize(("body", "why"), [
    ("def old():\n    return gone\ndef main():\n    pass\nmain()\n", "which the file never calls"),
    ("import argparse\nargs = argparse.Namespace(x=1)\nif args.x:\n    print(gone)\n", "of a branch (line 6"),
    ("try:\n    import apex\nexcept ImportError:\n    warnings.warn('no apex')\n", "exception's handler"),
])
def test_an_undefined_name_off_the_sure_path_is_a_warning(body: str, why: str) -> None:
    found = names(_HEAD + body)
    assert len(found) == 1 and found[0][1] == "warning" and why in found[0][2], found


def test_under_a_rank_condition_it_is_still_an_error() -> None:
    body = "def main():\n    if dist.get_rank() == 0:\n        torch.save(ddp_model, 'm.pth')\nmain()\n"
    assert [(line, severity) for line, severity, _ in names(_HEAD + body)] == [(6, "error")]


def test_a_project_module_the_script_calls_is_read_and_its_names_are_warnings(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text("import torch\n\ndef all_gather(data):\n    return pickle.dumps(data)\n")
    script = tmp_path / "train.py"
    script.write_text(_HEAD + "import utils\n\ndef main():\n    utils.all_gather(1)\n\nmain()\n")
    found = [(Path(f.file).name, f.line, f.severity) for f in check_file(script) if f.code == "DDP020"]
    assert found == [("utils.py", 4, "warning")]


def test_a_project_modules_function_the_script_never_reaches_is_not_read_for_names(tmp_path: Path) -> None:
    """Off the run path as read (a helper module's function no call of the script reaches), a missing name is no
    NameError the run meets: nothing is reported there, where the reached function's missing name is."""
    (tmp_path / "utils.py").write_text("import torch\n\ndef all_gather(data):\n    return pickle.dumps(data)\n\n"
                                       "def get_dataset(tokenizer):\n    return load(tokenizer, max_input_length)\n")
    script = tmp_path / "train.py"
    script.write_text(_HEAD + "from utils import *\n\ndef main():\n    all_gather(1)\n\nmain()\n")
    found = [(Path(f.file).name, f.line) for f in check_file(script) if f.code == "DDP020"]
    assert found == [("utils.py", 4)]


def test_without_pyflakes_the_rule_is_skipped_not_the_doctor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyflakes", None)
    found = check_source(_HEAD + "print(ddp_model)\n", "t.py")
    assert not [f for f in found if f.code == "DDP020"]


def test_pyflakes_is_imported_only_when_the_rule_runs() -> None:
    code = ("import sys, orchestrator.cli, orchestrator.doctor, orchestrator.doctor.gate\n"
            "assert 'pyflakes' not in sys.modules, 'pyflakes imported at start-up'\n"
            "orchestrator.doctor.check_source('print(1)\\n', 't.py')\n"
            "assert 'pyflakes' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_silent_on_a_branch_its_literal_choices_never_take() -> None:
    # input_type can only be "box": the "point" branch never runs, so its undefined name never raises; a value
    # the list holds, or a name assigned twice, keeps the finding
    body = ("def evaluate(boxes):\n    keys = ['box']\n    input_type = random.choice(keys)\n"
            "    if input_type == 'box':\n        use(boxes)\n    elif input_type == 'point':\n        use(points)\n"
            "    if input_type == 'box':\n        use(masks)\n\nevaluate(1)\n")
    source = "import random\nfrom helpers import use\n" + body
    assert [(line, "'masks'" in message) for line, _, message in names(source)] == [(11, True)]
    assert [line for line, _, _ in names(source.replace("keys = ['box']", "keys = ['box', 'point']"))] == [9, 11]


def test_a_closure_over_a_name_its_function_binds_and_deletes_later_is_not_undefined() -> None:
    """pyflakes reads a lambda's names at the end of the enclosing scope, after a ``del``: the closure ran before it
    (a FLOP count on a meta model, then ``del``). A name that no scope binds is still reported."""
    source = (_HEAD + "def measure(f):\n    return f()\n\ndef main():\n    with torch.device('meta'):\n"
              "        meta_model = torch.nn.Linear(2, 2)\n        x = torch.randn(1, 2)\n"
              "        fwd = lambda: meta_model(x)\n        measure(fwd)\n        del meta_model, x\n"
              "    torch.save(ddp_model.state_dict(), 'm.pt')\n\nmain()\n")
    assert [(line, severity) for line, severity, _ in names(source)] == [(14, "error")]


@pytest.mark.parametrize("raised", ["NotImplementError", "ConfigEror('no backbone')"])
def test_a_misspelt_exception_raised_stops_where_it_was_meant_to(raised: str) -> None:
    """``raise NotImplementError``: a NameError instead of the exception meant, on the same line: nothing lost."""
    source = _HEAD + f"def main(kind):\n    if kind != 't5':\n        raise {raised}\n    print(kind)\nmain('t5')\n"
    assert names(source) == []
    assert [line for line, _, _ in names(source.replace(f"raise {raised}", f"print({raised})"))] == [6]


HELPERS = """\
import os
from torch.utils.data import DataLoader
try:
    import yaml
except ImportError:
    yaml = None

ROOT = "data"

def build_loader(name):
    return DataLoader(name)

class Meter:
    pass

def _private():
    pass
"""


@pytest.mark.parametrize(("helpers", "reported"), [
    (HELPERS, ["val_dataset", "_private"]),  # its public names come through, not the private one
    (HELPERS + "__all__ = ['build_loader', 'Meter', 'ROOT', 'yaml', '_private']\n", ["val_dataset", "DataLoader"]),
    ("from more import *\n", ["val_dataset", "_private"]),  # through the helper's own star import of the project
])
def test_a_name_no_star_imported_project_module_brings_is_undefined(tmp_path: Path, helpers: str,
                                                                    reported: list[str]) -> None:
    """CavaFace's ``for vs in val_dataset:`` under nine ``from util.utils import *`` lines: each of them a project
    module whose names are read, none defines it (a NameError at the first evaluation, after 2000 batches)."""
    (tmp_path / "more.py").write_text(HELPERS)
    (tmp_path / "helpers.py").write_text(helpers)
    script = tmp_path / "train.py"
    script.write_text(_HEAD + "from helpers import *\n\ndef main():\n    loader = build_loader(ROOT)\n"
                      "    m = Meter()\n    print(DataLoader, yaml)\n    _private()\n    for vs in val_dataset:\n"
                      "        print(vs, loader, m)\n\nmain()\n")
    found = [f.message.split("'")[1] for f in check_file(script) if f.code == "DDP020"]
    assert sorted(found) == sorted(reported)


@pytest.mark.parametrize("helpers", [
    "from torch.nn import *\n",  # an installed package's names are not read
    "from missing_module import *\n",  # not in the project
    "def f():\n    pass\nglobals()['made'] = 1\n",  # names written out of sight
    "__all__ = ['f']\n__all__ += ['made']\ndef f():\n    pass\n",  # an __all__ built up
    "def f(:\n",  # cannot be read
])
def test_a_star_import_whose_names_cannot_all_be_known_keeps_the_file_quiet(tmp_path: Path, helpers: str) -> None:
    (tmp_path / "helpers.py").write_text(helpers)
    script = tmp_path / "train.py"
    script.write_text(_HEAD + "from helpers import *\n\ndef main():\n    print(made)\n\nmain()\n")
    assert [f for f in check_file(script) if f.code == "DDP020"] == []


@pytest.mark.parametrize("where", ["top", "try"])
def test_a_relative_star_import_whose_package_is_not_known_keeps_the_file_quiet(tmp_path: Path, where: str) -> None:
    """DeBERTa's ``apps/run.py``: ``from ..utils import *`` where no ``__init__.py`` says which package ``apps`` is
    (a partial copy, or a folder run with ``python -m``): the names it brings (``boolean_string``, ``set_logger``) are
    not known, so none is reported; also a star import in a module-level ``try`` block."""
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "helpers.py").write_text("def set_logger():\n    pass\n")
    (tmp_path / "apps").mkdir()
    star = ("from ..utils import *\n" if where == "top"
            else "try:\n    from ..utils import *\nexcept ImportError:\n    pass\n")
    script = tmp_path / "apps" / "run.py"
    script.write_text(_HEAD + star + "\ndef main():\n    set_logger()\n\nmain()\n")
    assert [f for f in check_file(script) if f.code == "DDP020"] == []


@pytest.mark.parametrize("leave", ['raise ValueError("No way wandb")', "return None"])
def test_a_name_after_a_statement_that_leaves_its_block_never_runs(leave: str) -> None:
    """taming-transformers' ``_wandb``: ``raise ValueError("No way wandb")`` then ``wandb.Image(grid)``, a name never
    imported on a line that never runs; a name before the exit, or on the other side of an ``if``, still counts."""
    source = (_HEAD + "def log(images):\n    for k in images:\n        if k:\n            " + leave + "\n"
              "        " + leave + "\n        grid = wandb.Image(k)\n    return ddp_model\n\nlog([])\n")
    assert [(line, severity) for line, severity, _ in names(source)] == [(10, "error")]


_CLEANUP = """import gc
import torch


def clear_unused_tensors():
    try:
        refs = [weakref.ref(t) for t in gc.get_objects() if isinstance(t, torch.Tensor)]
    {handler}
        pass
"""


@pytest.mark.parametrize(("handler", "caught"), [
    ("except:", True), ("except Exception:", True), ("except (ValueError, NameError):", True),
    ("except ValueError:", False), ("except RuntimeError:", False),
])
def test_a_name_in_a_try_whose_handler_takes_the_name_error_is_no_crash(handler: str, caught: bool) -> None:
    # NotaGen's cleanup: `weakref` never imported, inside `try: ... except: pass`
    found = [f.line for f in check_source(_CLEANUP.format(handler=handler), "t.py") if f.code == "DDP020"]
    assert found == ([] if caught else [7])


def test_a_name_a_function_declares_global_and_assigns_is_the_modules() -> None:
    # PointHMR: `global logger` in main(), `logger = setup_logger(...)` there, `logger.info` in save_checkpoint()
    source = ("import logging\n\n\ndef save():\n    logger.info('saved')\n\n\ndef main():\n    global logger\n"
              "    logger = logging.getLogger('x')\n    save()\n\n\nmain()\n")
    assert [f for f in check_source(source, "t.py") if f.code == "DDP020"] == []
    assert [f.line for f in check_source(source.replace("    global logger\n", ""), "t.py")
            if f.code == "DDP020"] == [5]


_LEFT_OUT = """\
import torch


def evaluate(model, loader):
    return sum(model(x) for x in loader) / all_num


def train(model, loader, val_loader=None):
    for x in loader:
        model(x).backward()
    if val_loader{test}:
        print(evaluate(model, val_loader))


train(torch.nn.Linear(2, 2), [torch.ones(2)]{given})
"""


@pytest.mark.parametrize(("test", "given", "found"), [
    ("", "", []),  # no call gives a validation loader: evaluate() never runs
    (" is not None", "", []),
    ("", ", val_loader=[torch.ones(2)]", [(5, "error")]),  # a call gives one
    ("", ", [torch.ones(2)]", [(5, "error")]),
    ("", ", *[[torch.ones(2)]]", [(5, "error")]),  # what a starred call passes is not known
])
def test_a_function_called_only_under_a_parameter_no_call_gives_never_runs(test: str, given: str,
                                                                            found: list[tuple[int, str]]) -> None:
    source = _LEFT_OUT.format(test=test, given=given)
    assert [(line, severity) for line, severity, _ in names(source)] == found


def test_a_function_handed_on_besides_its_calls_may_run_elsewhere() -> None:
    source = _LEFT_OUT.format(test="", given="") + "hooks = [evaluate]\n"
    assert [(line, severity) for line, severity, _ in names(source)] == [(5, "error")]
