"""DDP005: a loss or metric printed or logged on every rank inside a training loop, not reduced."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.confidence import PRINTED
from orchestrator.doctor.findings import Finding
from orchestrator.doctor.framework_saves import TRAINER_STEPS, hf_trainer_class
from orchestrator.doctor.loglevels import LOG_SETUP, main_rank_only, quieted_loggers
from orchestrator.doctor.metric_sums import assignment_before, iterated
from orchestrator.doctor.metric_values import full_set_value, is_counter, listed_sum, unprepared_sum
from orchestrator.doctor.own_methods import REDUCING, reached_methods
from orchestrator.source.analysis import REDUCTIONS
from orchestrator.source.analysis import Analysis as Reading
from orchestrator.source.exprnames import dotted, last_name
from orchestrator.source.flow import Site
from orchestrator.source.names import Module
from orchestrator.source.project import PRINT_GUARD
from orchestrator.source.walk import walk

# ``acc`` as accuracy (``acc1``, ``val_acc``, ``accuracy``), not the settings and tools spelled alike
# (``accum_steps``, ``accelerator``, ``according``, ``access``, ``account``, ``accept``)
METRIC = re.compile(r"loss|acc(?!el|um|ord|ess|ount|ept)|correct|metric|perplex|ppl|top1|top5|(^|_)f1($|_)",
                    re.IGNORECASE)
_LOG_METHODS = frozenset({"info", "debug", "warning", "warn", "error", "critical", "log", "exception"})
_LOG_CALLS = frozenset({"print", "wandb.log", "tqdm.write", "mlflow.log_metric", "mlflow.log_metrics"})
# TensorBoard writers and tqdm bars: one per rank is as wrong as one print per rank
BAR_TEXT = frozenset({"set_postfix", "set_description"})  # a progress bar's text
_DISPLAY_METHODS = frozenset({"add_scalar", "add_scalars"}) | BAR_TEXT
_BARS = frozenset({"tqdm", "trange"})
_WRITERS = _BARS | {"SummaryWriter"}  # a library's: one per rank when every rank makes one


def is_log(site: Site, module: Module | None = None) -> bool:
    """A print or a log line (``module``: the file's, to know a progress bar's ``bar.write``)."""
    if site.qual in _LOG_CALLS:
        return True
    func = site.call.func
    if not isinstance(func, ast.Attribute):
        return False
    receiver = (dotted(func.value) or "").lower()
    return (func.attr in _LOG_METHODS and "log" in receiver) or func.attr in _DISPLAY_METHODS or (
        module is not None and func.attr == "write" and _bar(module, func.value))


def _bar(module: Module, receiver: ast.expr) -> bool:
    """``receiver`` is a tqdm bar (``bar = tqdm(...)``): its ``write`` is tqdm's, which prints on every rank even
    when the bar is made with ``disable=`` off rank 0."""
    if not isinstance(receiver, ast.Name):
        return False
    _, made = module.resolve(receiver.id, receiver)
    return isinstance(made, ast.Call) and last_name(made.func) in _BARS


def _names(expr: ast.AST) -> list[ast.Name]:
    return [n for n in walk(expr) if isinstance(n, ast.Name)]


def check_prints(a: Analysis) -> Iterator[Finding]:
    """DDP005: a print/log of a loss or metric inside a training loop, on every rank, not reduced (also under
    a framework: ``print`` is every rank's, ``fabric.print``/``accelerator.print`` rank 0's)."""
    # a file with a Trainer subclass and nothing else parallel: its step methods only (the Trainer wraps the model)
    steps_only = not (a.data_parallel or a.framework_parallel)
    trainers = _trainer_classes(a)
    if steps_only and not trainers:
        return
    found = reductions(a)
    reduced = reduced_names(a, found=found)  # the whole file's, read first: most prints read no reduced name
    print_guarded = print_replaced(a)
    quieted = quieted_loggers(a)
    seen: set[int] = set()  # one finding per block: its prints and writers of the losses are one habit, one fix
    for site in a.flow.sites:
        if not is_log(site, a.module) or a.flow.guarded(site) or (print_guarded and site.qual == "print") or (
                a.flow.never_runs(site)):  # the single-process side of `if args.distributed:`
            continue
        if _rank_zero_object(a, site) or main_rank_only(a, site, quieted):
            continue
        loop = None if steps_only else a.in_training_loop(site)
        step = None if loop is not None else _trainer_step(a, site, trainers)
        if loop is None and step is None:
            continue
        parts = [*site.call.args, *[k.value for k in site.call.keywords]]
        metrics = [n for part in parts for n in walk(part)
                   if isinstance(n, ast.Name | ast.Attribute) and METRIC.search(last_name(n) or "")
                   and not _setting(n)]
        metrics = [n for n in metrics if not (isinstance(n, ast.Name) and (
            is_counter(a, n) or full_set_value(a, n) or unprepared_sum(a, n) or listed_sum(a, n)))]
        if not metrics or (is_reduced(a, parts, reduced) and is_reduced(a, parts, reduced_names(a, site, found))):
            continue
        key = id(_block(a, site.call))
        if key in seen:
            continue
        seen.add(key)
        guess = (_logged(site) and _log_setup_elsewhere(a)) or _made_from_reduced(a, metrics)
        where = f"the loop at line {loop.lineno}" if loop is not None else f"the Trainer's {step}, run every step"
        yield a.finding("DDP005", site.call, f"{last_name(metrics[0])} in {where}",
                        confidence="possible" if guess else None,
                        marks=frozenset({PRINTED}) if site.qual == "print" else frozenset())


def _made_from_reduced(a: Analysis, metrics: list[ast.Name | ast.Attribute]) -> bool:
    """A value a call computed from a reduced one (``loss, metrics = train_step(batch, global_tokens)`` with
    ``global_tokens = accelerator.gather(tokens).sum()``): the rank's share of a global figure, or the figure itself;
    the reader cannot tell."""
    for node in metrics:
        name = next((n for n in walk(node) if isinstance(n, ast.Name)), None)
        scope: ast.AST = a.module.function_of(node) or a.module.tree
        made = assignment_before(scope, name.id, node.lineno) if name is not None else None
        if made is None or not isinstance(made.value, ast.Call):
            continue
        for x in [*made.value.args, *(k.value for k in made.value.keywords)]:
            source = assignment_before(scope, x.id, made.lineno) if isinstance(x, ast.Name) else None
            if source is not None and any(isinstance(c, ast.Call) and a.module.qualname(c.func) in REDUCTIONS
                                          for c in walk(source.value)):
                return True
    return False


def _logged(site: Site) -> bool:
    func = site.call.func
    return isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS


def _log_setup_elsewhere(a: Reading) -> bool:
    """The file sets up its logging by another module's function: whether every rank's log line reaches the
    console, unlabelled, is that function's (icefall's ``setup_logger``, a project's ``init_logger``)."""
    return any(LOG_SETUP.search(last_name(site.call.func) or "") and a.module.local_function(site.call) is None
               and not (site.qual or "").startswith("logging.") for site in a.flow.sites)


def _block(a: Reading, node: ast.AST) -> ast.AST | None:
    """The statement that holds ``node``'s statement in its body (an ``if``, a loop, a function)."""
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.stmt):
        current = a.module.parents.get(current)
    return a.module.parents.get(current) if current is not None else None


_SETTINGS = frozenset({"args", "opt", "opts", "cfg", "config", "hparams", "hp", "FLAGS"})


def _setting(node: ast.expr) -> bool:
    """``args.mlperf_acc_threshold``: a flag or config value the user set, not a measured metric."""
    return isinstance(node, ast.Attribute) and (dotted(node) or "").split(".")[0] in _SETTINGS


_RANK_ZERO_OBJECTS = re.compile(r"log|writer|wandb|tensorboard|(^|_)tb($|_)|summary", re.IGNORECASE)


def _rank_zero_object(a: Reading, site: Site) -> bool:
    """Logging through an object that exists on rank 0 only: under ``if wandb_logger:`` / ``if writer is not
    None:``, or a progress bar made with ``disable=`` (``tqdm(..., disable=local_rank not in [-1, 0])``)."""
    func = site.call.func
    if isinstance(func, ast.Attribute) and func.attr in _DISPLAY_METHODS and isinstance(func.value, ast.Name):
        _, bar = a.module.resolve(func.value.id, func.value)
        if isinstance(bar, ast.Call) and any(k.arg == "disable" for k in bar.keywords):
            return True
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and _none_off_rank_zero(a, func.value):
        return True
    if isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS | _DISPLAY_METHODS and _rank_aware_logger(
            a, func.value):
        return True
    current = a.module.parents.get(site.call)
    while current is not None:
        if isinstance(current, ast.If):
            test = current.test  # ``if writer and step % 10 == 0``: each side
            tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            for test in tests:
                test = test.left if isinstance(test, ast.Compare) else test
                if _RANK_ZERO_OBJECTS.search(last_name(test) or ""):
                    return True
        current = a.module.parents.get(current)
    return False


def _none_off_rank_zero(a: Reading, receiver: ast.Name) -> bool:
    """``receiver`` is made on rank 0 only, ``None`` elsewhere (``pbar = tqdm(...) if is_main else None``,
    ``writer = SummaryWriter(...) if rank == 0 else None``): its methods run where it exists, on rank 0."""
    _, made = a.module.resolve(receiver.id, receiver)
    if not (isinstance(made, ast.IfExp) and a.ranks.is_condition(made.test)):
        return False
    at_zero = a.ranks.at_rank_zero(made.test)
    elsewhere = made.orelse if at_zero else made.body
    return at_zero is not None and isinstance(elsewhere, ast.Constant) and elsewhere.value is None


def _rank_aware_logger(a: Reading, receiver: ast.expr, depth: int = 0) -> bool:
    """A logger or reporter made by a call that is handed the rank (``setup_logger(output,
    distributed_rank=dist.get_rank())``, ``create_logger(log_file, rank=cfg.LOCAL_RANK)``, ``reporter =
    Reporter(args, model, args.local_rank)``): the project's factory decides per rank (console or TensorBoard on
    rank 0, one file per rank), so its ``logger.info`` or ``reporter.add_scalar`` is not a print on every rank. Not
    a library's writer or bar handed the rank for its folder or position (``SummaryWriter(f"runs/{rank}")``)."""
    if not isinstance(receiver, ast.Name):
        return False
    passed = a.handed(receiver) if depth < 2 else None
    if passed is not None:  # a parameter (``def train(model, reporter):``): what this file's calls hand it
        return bool(passed) and all(_rank_aware_logger(a, x, depth + 1) for x in passed)
    _, made = a.module.resolve(receiver.id, receiver)
    if not isinstance(made, ast.Call) or last_name(made.func) in _WRITERS:
        return False
    return (any(a.ranks.dependent(x) for x in made.args)
            or any(a.ranks.dependent(k.value) or "rank" in (k.arg or "").lower() for k in made.keywords))


def print_replaced(a: Analysis) -> bool:
    """``builtins.print`` is replaced (DINO's/MAE's ``setup_for_distributed``: print on the main rank only),
    in the script or in a helper it calls; or ``sys.stdout`` is sent elsewhere under a rank condition (MONAI's
    ``if args.local_rank != 0: sys.stdout = open(os.devnull, "w")``)."""
    return PRINT_GUARD in a.helper_quals or any(
        isinstance(n, ast.Assign) and any(a.module.qualname(t) in ("builtins.print", "__builtin__.print")
                                          or (a.module.qualname(t) == "sys.stdout" and _under_rank_test(a, n))
                                          for t in n.targets if isinstance(t, ast.Attribute))
        for n in a.module.nodes)


def _under_rank_test(a: Reading, node: ast.AST) -> bool:
    current = a.module.parents.get(node)
    while current is not None and not isinstance(current, ast.If):
        current = a.module.parents.get(current)
    return current is not None and a.ranks.is_condition(current.test)


def _reduces_inside(a: Analysis, site: Site) -> bool:
    """``val_loss = validate(loader, model, configs)`` where the file's ``validate`` reduces each batch's loss through
    a project helper (SFA3D's ``reduce_tensor``, an ``all_reduce``) under ``if configs.distributed:``: what it returns
    is reduced, whichever branch the flag takes (one-process runs have nothing to reduce)."""
    parent = a.module.parents.get(site.call)
    target = a.module.local_function(site.call) if isinstance(parent, ast.Assign) else None
    return target is not None and any(s.qual in REDUCTIONS or a.helper_reaches(s, REDUCTIONS)
                                      for s in a.flow.sites_in(target))


def _project_reduction(a: Analysis, site: Site) -> bool:
    """In a helper module (whose own helpers are not followed), a call of a project function whose name says it
    reduces (DETR's ``loss_dict_reduced = misc.reduce_dict(loss_dict)``, ``reduce_tensor``), as DDP013 reads one."""
    project = a.script_project if a.project is None else None
    named = bool(REDUCING.search(last_name(site.call.func) or ""))
    return named and project is not None and site.qual is not None and project.split(site.qual) is not None


def reductions(a: Analysis) -> list[tuple[Site, set[str]]]:
    """Each call that reduces (all_reduce, all_gather, ..., or a helper of this file that makes one) with the names it
    reduces: the ones it is handed, or the ones it assigns."""
    found: list[tuple[Site, set[str]]] = []
    for site in a.flow.sites:
        if a.reaching(site, REDUCTIONS) is None and not _reduces_inside(a, site) and not _project_reduction(a, site):
            continue
        names: set[str] = set()
        parent = a.module.parents.get(site.call)
        if isinstance(parent, ast.Assign):
            names.update(n.id for t in parent.targets for n in _names(t))
        if (into := _collected_into(parent)) is not None:  # ``losses.append(accelerator.gather(loss))``
            names.add(into)
        if site.qual in REDUCTIONS or not (isinstance(parent, ast.Assign) or _trains(a, site)):
            # a collective, or a helper that reduces in place (reduce_meters(meters)); a helper whose results are
            # kept (eval_ppl, eval_loss = evaluation(model, train_config, ...)) reduced those, not its inputs, and
            # the training function itself (main_worker(gpu, args)) reduces what it computes, not its arguments
            for arg in [*site.call.args, *[k.value for k in site.call.keywords]]:
                names.update(n.id for n in _names(arg))
                if isinstance(arg, ast.Name):  # for tensor in [loss, accuracy]: dist.all_reduce(tensor)
                    scope = site.function or a.module.tree
                    names.update(n.id for v in iterated(scope, arg.id, site.call) for n in _names(v))
        found.append((site, names))
    return found


def reduced_names(a: Analysis, at: Site | None = None,
                  found: list[tuple[Site, set[str]]] | None = None) -> set[str]:
    """Names handed to a reduction, or assigned from one (:func:`reductions`, read once and passed as ``found`` by a
    caller that asks for several sites). ``at``: as a print there reads them, leaving out the reductions later in its
    function outside the print's innermost loop (Coconut's ``dist.all_reduce(loss)`` in the evaluation after the
    training loop that prints ``loss``)."""
    names: set[str] = set()
    for site, reduced in reductions(a) if found is None else found:
        if at is None or not _after(site, at):
            names |= reduced
    for node in a.module.nodes:  # ``metrics.append(gathered)``: a list of reduced values
        into = _collected_into(node)
        if into is not None and isinstance(node, ast.Call) and isinstance(arg := node.args[0], ast.Name) and (
                arg.id in names):
            names.add(into)
    return names


def _trainer_classes(a: Reading) -> list[ast.ClassDef]:
    return [node for node in a.module.tree.body if isinstance(node, ast.ClassDef) and hf_trainer_class(a.module, node)]


def _trainer_step(a: Reading, site: Site, trainers: list[ast.ClassDef]) -> str | None:
    """The step method of a transformers ``Trainer`` subclass (one of ``trainers``) that ``site`` runs in:
    ``training_step`` or ``compute_loss`` itself, or a method of the class either calls as ``self.X(...)`` (two calls
    deep: the consistency-LLM trainer's ``training_step`` -> ``consistency_training_step``, which prints its losses)."""
    function = site.function
    owner = a.module.parents.get(function) if function is not None else None
    if function is None or not isinstance(owner, ast.ClassDef) or owner not in trainers:
        return None
    methods = {f.name: f for f in owner.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    return next((name for name in TRAINER_STEPS
                 if name in methods and function in reached_methods(methods[name], methods, 2)), None)


def _trains(a: Analysis, site: Site) -> bool:
    """``site`` calls a function of this file that runs a backward pass (the training function)."""
    target = a.module.local_function(site.call)
    return target is not None and any(isinstance(n, ast.Attribute) and n.attr == "backward" for n in walk(target))


def _collected_into(node: ast.AST | None) -> str | None:
    """``values`` for ``values.append(x)`` / ``values.extend(x)``: one value added to a list the script names."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _COLLECTS
            and isinstance(node.func.value, ast.Name) and len(node.args) == 1):
        return node.func.value.id
    return None


_COLLECTS = frozenset({"append", "extend"})


def _after(reduction: Site, at: Site) -> bool:
    """``reduction`` runs after ``at`` in their one function, outside the innermost loop around ``at`` (a pass of that
    loop that prints never reduces first; an outer loop's next pass computes the value anew before the print)."""
    inner = at.loops[-1] if at.loops else None
    return reduction.function is at.function and reduction.call.lineno > at.call.lineno and not (
        inner is not None and any(loop is inner for loop in reduction.loops))


def is_reduced(a: Analysis, parts: list[ast.expr], reduced: set[str], depth: int = 0) -> bool:
    for part in parts:
        for name in _names(part):
            if name.id in reduced:
                return True
            _, value = a.module.resolve(name.id, name)
            if value is not None and depth < 3 and is_reduced(a, [value], reduced, depth + 1):
                return True
    return False
