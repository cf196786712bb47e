"""Logging quietened off the main rank: a log line that only the main rank's logger lets through is no print on every
rank (DDP005).

The script sets the level by rank (``logging.basicConfig(level=logging.INFO if rank in [-1, 0] else logging.WARN)``,
``logger.setLevel(training_args.get_process_log_level())``, ``if rank != 0: logger.setLevel(logging.WARNING)``), or its
logger is Accelerate's (``accelerate.logging.get_logger``: the main process only unless a call says
``main_process_only=False``). Such a logger's ``info`` and ``debug`` lines reach the console from the main rank alone;
its ``warning`` and ``error`` lines still come from every rank.
"""

from __future__ import annotations

import ast
import re

from orchestrator.source.analysis import Analysis
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.flow import Site
from orchestrator.source.walk import walk

QUIET_BELOW_WARNING = frozenset({"info", "debug"})  # the lines a WARNING level drops
_ROOT = "logging"  # a level set on the root logger governs every stdlib logger that sets none of its own
_ROOT_LEVEL_CALLS = frozenset({"logging.basicConfig", "logging.disable", "logging.root.setLevel"})
_RANK_LEVELS = frozenset({"get_process_log_level"})  # transformers' TrainingArguments: WARNING on the replicas
_MAIN_ONLY_LOGGERS = frozenset({"accelerate.logging.get_logger"})
# a logging set-up (``setup_logger(path, rank)``, ``init_logger(file)``, ``set_logger(path, stdout, rank)``): where it
# is another module's, its handlers and format (console on rank 0 only, each line labelled with its rank) are out of
# sight; handed the rank, it decides per rank
LOG_SETUP = re.compile(r"(?i)^(setup|set|init|configure|config|create)_?\w*log")


def quieted_loggers(a: Analysis) -> set[str]:
    """The loggers set to a level by rank in this file or, for a helper module, in the script that calls it (read once
    per file, for :func:`main_rank_only`): ``logging`` for the root logger, else the logger's name."""
    return _quieted(a) | (_quieted(a.outer) if a.outer is not None else set())


def main_rank_only(a: Analysis, site: Site, quieted: set[str]) -> bool:
    """``site`` (``logger.info(...)``) logs on the main rank alone: its logger is one of ``quieted``
    (:func:`quieted_loggers`), or Accelerate's."""
    func = site.call.func
    if not isinstance(func, ast.Attribute) or func.attr not in QUIET_BELOW_WARNING:
        return False
    receiver = _logger_name(a, func.value)
    if receiver is None:
        return False
    if receiver == _MAIN_ONLY:
        return not any(k.arg == "main_process_only" and _false(k.value) for k in site.call.keywords)
    return receiver in quieted or (_ROOT in quieted and receiver.startswith(_STDLIB))


_MAIN_ONLY = "<accelerate>"
_STDLIB = "stdlib:"


def _logger_name(a: Analysis, receiver: ast.expr, depth: int = 0) -> str | None:
    """Which logger ``receiver`` is: ``stdlib:NAME`` for ``logging.getLogger(...)`` (``stdlib:logging`` for the
    module's own ``logging.info``), :data:`_MAIN_ONLY` for Accelerate's, else the receiver as written. A parameter
    (``def train_one_epoch(model, logger):``) is the one logger this file's calls of its function all hand it."""
    if a.module.qualname(receiver) == "logging":
        return f"{_STDLIB}logging"
    key = dotted(receiver)
    if key is None:
        return None
    if isinstance(receiver, ast.Name):
        passed = a.handed(receiver) if depth < 2 else None
        if passed is not None:
            handed = {_logger_name(a, x, depth + 1) for x in passed}
            return handed.pop() if len(handed) == 1 and None not in handed else key
        _, made = a.module.resolve(receiver.id, receiver)
        if isinstance(made, ast.Call):
            qual = a.module.qualname(made.func) or ""
            if qual in _MAIN_ONLY_LOGGERS:
                return _MAIN_ONLY
            if qual == "logging.getLogger":
                return f"{_STDLIB}{key}"
    return key


def _quieted(a: Analysis) -> set[str]:
    """The loggers this file sets to a level by rank: ``logging`` for the root logger, else the receiver's name."""
    out: set[str] = set()
    for site in a.flow.sites:
        func = site.call.func
        if _setup_told_the_rank(a, site):
            out.add(_ROOT)
            continue
        qual = site.qual or ""
        root = qual in _ROOT_LEVEL_CALLS or (isinstance(func, ast.Attribute) and func.attr == "setLevel"
                                             and isinstance(func.value, ast.Call) and not func.value.args
                                             and a.module.qualname(func.value.func) == "logging.getLogger")
        own = isinstance(func, ast.Attribute) and func.attr == "setLevel" and not root
        if not (root or own) or not (_rank_level(a, site.call) or site.branch is not None):  # set under a rank test
            continue
        if root:
            out.add(_ROOT)
        elif isinstance(func, ast.Attribute):
            name = _logger_name(a, func.value)
            if name is not None:
                out.add(name)
    return out


def _setup_told_the_rank(a: Analysis, site: Site) -> bool:
    """The project's logging set-up handed the rank (neural_sp's ``set_logger(path, args.stdout, args.local_rank)``,
    which sets the replicas' level to CRITICAL; icefall's ``setup_logger(log_file, rank=rank)``, which labels each
    line with its rank): it configures the root logger per rank. A library's logger (``logging``'s own) is not."""
    if not LOG_SETUP.search(last_name(site.call.func) or "") or (site.qual or "").startswith("logging."):
        return False
    return any(a.ranks.dependent(x) for x in [*site.call.args, *(k.value for k in site.call.keywords)])


def _rank_level(a: Analysis, call: ast.Call) -> bool:
    """A level chosen by rank: ``INFO if rank == 0 else WARN`` or transformers' ``get_process_log_level()``."""
    for value in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(value, ast.Name):
            _, made = a.module.resolve(value.id, value)
            value = made if made is not None else value
        for node in walk(value):
            if isinstance(node, ast.IfExp) and a.ranks.is_condition(node.test):
                return True
            if isinstance(node, ast.Call) and last_name(node.func) in _RANK_LEVELS:
                return True
    return False


def _false(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is False
