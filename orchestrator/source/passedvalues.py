"""What a parameter holds when every call hands it a constant: a helper's ``ddp_setup(rank, world_size,
master_addr="localhost")`` whose script calls ``ddp_setup(rank, world_size, master_addr="127.0.0.1")``, so that
``os.environ["MASTER_ADDR"] = master_addr`` writes one of those constants (EmotionNet's).

The values are the calls' of this file, the script's (``Analysis.outer``: a helper's function called by its last
name) and the parameter's default (a call may leave it out). Any value that is not a constant written in (a name, a
flag, an expression) makes the parameter not known.
"""

from __future__ import annotations

import ast

from orchestrator.source.analysis import Analysis
from orchestrator.source.exprnames import FunctionNode, parameter_defaults


def passed_constants(a: Analysis, name: ast.Name) -> list[ast.Constant]:
    """The constants ``name``, a parameter of the function it is read in, is given by every call and by its default;
    empty where any value is not a constant, or no call and no default says."""
    function = a.module.function_of(name)
    if function is None:
        return []
    spec = function.args
    defaults = parameter_defaults(function)
    if name.id not in {p.arg for p in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs)}:
        return []
    values = [value for _, value in passed_values(a, function, name.id)]
    values += [defaults[name.id]] if name.id in defaults else []
    constants = [v for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str | int)
                 and not isinstance(v.value, bool)]
    return constants if values and len(constants) == len(values) else []


def passed_values(a: Analysis, function: FunctionNode, name: str) -> list[tuple[Analysis, ast.expr]]:
    """What the calls of ``function`` pass for its parameter ``name``: this file's calls, and for a helper module the
    script's (``Analysis.outer``: the function called by its last name), each with the file it is read in."""
    passed = [(a, value) for value in a.module.argument_for(function, name)]
    return passed + ([(a.outer, value) for value in a.outer.passes_for(function, name)] if a.outer is not None else [])
