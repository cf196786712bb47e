"""Run the rules on a file: parse (never import or execute it), analyse, drop suppressed findings."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from orchestrator.doctor import (
    lightning_logs,
    rank_bound_names,
    rank_env_writes,
    rank_exit,
    rules_caughtinit,
    rules_data,
    rules_devices,
    rules_gpuworld,
    rules_launch,
    rules_layout,
    rules_metrics,
    rules_names,
    rules_nodes,
    rules_prints,
    rules_random,
    rules_rendezvous,
    rules_saves,
    rules_spawn,
    rules_spawnworld,
    rules_steps,
    rules_streams,
    rules_sync,
)
from orchestrator.doctor.analysis import Analysis
from orchestrator.doctor.catalog import Severity
from orchestrator.doctor.confidence import at_most, measured_weak
from orchestrator.doctor.findings import DoctorInputError, DoctorSkipped, Finding
from orchestrator.source.branches import main_guard
from orchestrator.source.exprnames import last_name
from orchestrator.source.names import Module
from orchestrator.source.project import Project
from orchestrator.source.walk import walk
from orchestrator.spec.pysource import UnreadableSource, parse_source
from orchestrator.spec.safefile import NotAFile, open_regular

MAX_SCRIPT_BYTES = 16 * 1024 * 1024  # a script larger than this is not read (skipped with a warning)

# The rules, in catalog order; each takes the analysis of one file and yields findings.
RULES: tuple[Callable[[Analysis], Iterator[Finding]], ...] = (
    rules_devices.check_set_device,      # DDP001
    rules_sync.check_collectives,        # DDP002
    rank_exit.check_rank_exit,           # DDP024 (a loop with collectives left on one rank)
    rules_data.check_loaders,            # DDP003
    rules_data.check_set_epoch,          # DDP004
    rules_streams.check_stream_shuffle,  # DDP004 (a streamed data set)
    rules_prints.check_prints,           # DDP005
    rules_saves.check_saves,             # DDP006
    rules_sync.check_destroy,            # DDP007
    rules_rendezvous.check_hard_coded,       # DDP008
    rules_spawnworld.check_one_node_world,   # DDP008 (a spawner's world of one node)
    rules_gpuworld.check_gpu_list_world,     # DDP008 (a world of one node's GPU ids)
    rules_devices.check_load,            # DDP009
    rules_devices.check_global_rank_device,  # DDP010
    rules_random.check_splits,           # DDP011
    rules_devices.check_unentered_context,  # DDP012
    rules_metrics.check_unreduced_metrics,  # DDP013
    lightning_logs.check_unsynced_logs,  # DDP013 (a LightningModule's validation logs)
    rules_spawn.check_self_spawn,        # DDP014
    rules_launch.check_legacy_local_rank,  # DDP015
    rules_launch.check_local_rank_as_rank,  # DDP016
    rank_env_writes.check_local_rank_written,  # DDP016 (the local rank written as RANK)
    rules_spawn.check_index_as_rank,     # DDP016 (a spawn index as the rank)
    rules_spawnworld.check_fixed_node_offset,  # DDP016 (a node offset written in)
    rules_steps.check_module_forward,    # DDP017
    rules_steps.check_skipped_backward,  # DDP018
    rules_caughtinit.check_swallowed_init,   # DDP019
    rules_names.check_undefined_names,   # DDP020
    rank_bound_names.check_rank_bound_names,  # DDP020 (a name bound on global rank 0 alone, read on other ranks)
    rules_nodes.check_local_rendezvous,  # DDP021
    rules_nodes.check_local_handoff,     # DDP021 (a file one rank writes in a local folder, every rank reads)
    rules_nodes.check_node_count,        # DDP022
    rules_layout.check_framework_layout,  # DDP023
)

# In the script's helpers (the local modules it calls), findings are warnings, and only the rules that judge
# code where it stands: not DDP001 (the script's first CUDA use), DDP003 (the script's loaders), DDP002/DDP007
# (whether a helper's collective or destroy runs on some ranks depends on its callers). DDP009 in a helper:
# a torch.load with no map_location in a function or method of the project (a CheckpointManager's load). DDP017 in a
# helper: a forward around the wrapper in a training loop the helper runs (its engine's ``train_one_epoch``). DDP023 in
# a helper: the project's trainer factory (``def load_trainer(config): return pl.Trainer(**config.Trainer)``), a
# warning at most likely, so never a refusal across nodes (feasibility.py refuses only a certain node count).
HELPER_RULES = (rules_data.check_set_epoch, rules_streams.check_stream_shuffle, rules_devices.check_load,
                rules_prints.check_prints,
                rules_saves.check_saves, rules_rendezvous.check_hard_coded, rules_spawnworld.check_one_node_world,
                rules_devices.check_global_rank_device,
                rules_devices.check_unentered_context, rules_metrics.check_unreduced_metrics,
                lightning_logs.check_unsynced_logs,
                rules_spawn.check_self_spawn, rules_launch.check_legacy_local_rank,
                rules_launch.check_local_rank_as_rank, rank_env_writes.check_local_rank_written,
                rules_spawn.check_index_as_rank,
                rules_spawnworld.check_fixed_node_offset,
                rules_caughtinit.check_swallowed_init,
                rules_names.check_undefined_names, rules_nodes.check_local_rendezvous, rules_nodes.check_node_count,
                rank_exit.check_rank_exit, rules_steps.check_module_forward, rules_steps.check_skipped_backward,
                rules_layout.check_framework_layout, rules_sync.check_collectives)

_IGNORE = re.compile(r"orch:\s*ignore\[([A-Za-z0-9_,\s]+)\]")


def suppressions(source: str) -> dict[int, set[str]]:
    """``{line: {codes}}`` from ``# orch: ignore[DDP004, DDP005]`` comments (comments only, not strings)."""
    found: dict[int, set[str]] = {}
    if not _IGNORE.search(source):  # no such text anywhere, so in no comment: the file is not tokenized
        return found
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                match = _IGNORE.search(token.string)
                if match:
                    codes = {c.strip().upper() for c in match.group(1).split(",") if c.strip()}
                    found.setdefault(token.start[0], set()).update(codes)
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def check_source(source: str, filename: str = "<string>") -> list[Finding]:
    """The findings for one file's text, sorted by line. Raises DoctorInputError on a syntax error."""
    try:
        tree = parse_source(source, filename)
    except UnreadableSource as exc:
        if exc.limit:  # a parser limit: said, not checked
            raise DoctorSkipped(str(exc), hint="pass a Python source file") from None
        if exc.line is None:  # null bytes
            raise DoctorInputError(str(exc), hint="pass a Python source file") from None
        raise DoctorInputError(f"{filename}:{exc.line}:{exc.offset or '?'}: {exc.why}",
                               hint="fix the syntax first (python -m py_compile FILE)") from None
    ignored = suppressions(source)
    findings: set[Finding] = set()
    try:
        analysis = Analysis(tree, filename)
        _run(analysis, RULES, ignored, findings)
        unnamed = unnamed_definitions(tree)
        findings = {_off_the_run_path(f, unnamed) for f in findings} if unnamed else findings
        list(analysis.helper_quals)  # reads the project's helpers the script calls
        if analysis.project is not None:
            helpers = analysis.project.helpers()
            imported = [m for p in analysis.project.imported(analysis.module) if (m := analysis.project.read(p))]
            on_import = frozenset(n for m in [*(m for _, m in helpers), *imported] for n in _module_level_names(m.tree))
            for path, module in helpers:
                helper = Analysis(module.tree, str(path), outer=analysis)
                found: set[Finding] = set()
                _run(helper, HELPER_RULES, suppressions(_text(path)), found, severity="warning")
                reached = analysis.project.reached(path) | on_import
                for f in found:
                    if reached_line(module.tree, reached, f.line):
                        findings.add(f)
                    elif f.code != "DDP020":  # a missing name off the run path as read is no NameError
                        findings.add(replace(f, confidence="possible"))
            findings |= _on_import(analysis, helpers)
            read = [(filename, tree), *((str(path), module.tree) for path, module in helpers)]
            project = analysis.project
            modules = [project.module, *(m for _, m in helpers), *imported]
            findings = rules_data.set_epoch_elsewhere(  # the package folders looked up only for a DDP004
                findings, read, lambda: _imported_packages(project, modules))
    except (RecursionError, MemoryError) as exc:
        what = "too deeply nested" if isinstance(exc, RecursionError) else "too large"
        raise DoctorSkipped(f"{filename}: {what} to analyse", hint="pass a Python source file") from None
    findings = {_as_measured(f, f.file != filename) for f in _without_deferred(findings)}
    return sorted(findings, key=lambda f: (f.file != filename, f.file, f.line, f.code, f.message))


# a finding of the key's code gives way to one of the value's at the same place, which says more: a metric printed on
# every rank in the training loop (DDP005) that is an evaluation of the rank's shard (DDP013)
_GIVES_WAY = {"DDP005": "DDP013"}


def _without_deferred(findings: set[Finding]) -> set[Finding]:
    at = {(f.file, f.line, f.code) for f in findings}
    return {f for f in findings if (f.file, f.line, _GIVES_WAY.get(f.code, "")) not in at}


def _imported_packages(project: Project, modules: Iterable[Module]) -> list[Path]:
    """The project's package folders the modules read import from (``models/`` for ``from models.transducer import
    Transducer``), whether or not the module imported is there to read: folders beside the script or its package."""
    heads = sorted({qual.split(".")[0] for module in modules for qual in module.aliases.values()})
    folders: list[Path] = []
    for head in heads:
        found = next((root / head for root in [*project.roots, *project.above] if (root / head).is_dir()), None)
        if found is not None and found not in folders:
            folders.append(found)
    return folders


def _as_measured(finding: Finding, in_helper: bool) -> Finding:
    """``finding``, possible where its code's findings were measured weak (confidence.MEASURED_WEAK), saying so."""
    weak = measured_weak(finding.code, in_helper, finding.marks)
    if weak is None or finding.confidence == "possible":
        return finding
    where = "in a helper module" if in_helper else "in a script"
    said = f"this check {where} was right in {weak[0]} of {weak[1]} findings on code never seen"
    return replace(finding, confidence="possible", evidence=f"{finding.evidence}; {said}" if finding.evidence else said)


def _run(analysis: Analysis, rules: Sequence[Callable[[Analysis], Iterator[Finding]]], ignored: dict[int, set[str]],
         findings: set[Finding], severity: Severity | None = None) -> None:
    for rule in rules:
        for finding in rule(analysis):
            span = range(min(finding.line, finding.start_line or finding.line), max(finding.line, finding.end_line) + 1)
            if finding.file == analysis.filename and any(finding.line in lines for lines in analysis.flow.dead_lines()):
                continue  # on a side of an `if` no launched rank takes: not on the run orch starts
            if not any(finding.code in ignored.get(line, ()) for line in span):
                findings.add(replace(finding, severity=severity, confidence=at_most(finding.confidence, "likely"))
                             if severity else finding)  # a helper's finding: a warning, at most likely


def reached_line(tree: ast.Module, reached: frozenset[str], line: int) -> bool:
    """Whether ``line`` of a helper module runs for the script: at module level (it runs on import), or in a
    function, class or method the script's calls reached (``Project.reached``). A finding in a function
    nothing the script calls reaches (the helper's own ``main()``, or its ``if __name__ == "__main__":`` block,
    which never runs on import) is only possible."""
    if any(isinstance(s, ast.If) and main_guard(s.test) and s.body[0].lineno <= line <= (s.end_lineno or line)
           for s in tree.body):
        return False
    name = _defined_at(tree.body, line)
    if not name:
        return True
    head, _, method = name.partition(".")
    if name in reached or head in reached or (method and method in reached):
        return True
    # a function the reached code hands on by name (``mp.start_processes(single_proc_run, ...)``, a callback)
    return head in _named_in(tree, reached)


# calls that reach a script's definitions by a name held in a string: with them, an unnamed definition may still run
_BY_STRING = frozenset({"globals", "locals", "vars", "eval", "exec"})


def unnamed_definitions(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """The script's top-level classes that nothing in it names, with their lines: code that never runs (a Lightning
    ``Callback`` defined and never handed to the Trainer); its functions too where the script runs itself (an ``if
    __name__ == "__main__":`` block, or a top-level call of its own function): XProNet's ``setup()``, which writes a
    ``localhost`` address nobody uses. In a script that does not, a function's name may be what a console entry point
    or a caller names from outside, so it is not judged. A decorated one (a registry's ``@register``), one a
    string names (``__all__``, a registry key) and any in a script that looks names up by a computed string
    (``globals()[name]``, ``getattr(module, name)``) or builds from a config's class path (``LightningCLI()``, Hydra's
    ``instantiate``) count as named."""
    named: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Name):
            named.add(node.id)
        elif isinstance(node, ast.Attribute):
            named.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named.update(node.value.replace(".", " ").replace(":", " ").split())
        if isinstance(node, ast.Call) and _by_string(node):
            return {}
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef) if _runs_itself(tree) else (ast.ClassDef,)
    return {s.name: (s.lineno, s.end_lineno or s.lineno) for s in tree.body
            if isinstance(s, kinds) and not s.decorator_list
            and s.name not in named}


def _runs_itself(tree: ast.Module) -> bool:
    """The script starts its own work: an ``if __name__ == "__main__":`` block, or a top-level call of a function it
    defines (``main()``)."""
    own = {s.name for s in tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    return any((isinstance(s, ast.If) and main_guard(s.test)) or (
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
        and s.value.func.id in own) for s in tree.body)


def _by_string(call: ast.Call) -> bool:
    name = last_name(call.func) or ""
    if name == "getattr":  # getattr(args, "flag") names a flag, not a definition
        return len(call.args) > 1 and not isinstance(call.args[1], ast.Constant)
    return (isinstance(call.func, ast.Name) and name in _BY_STRING) or name.endswith("CLI") or name == "instantiate"


def _off_the_run_path(finding: Finding, unnamed: dict[str, tuple[int, int]]) -> Finding:
    """A script's warning inside a definition nothing names: only possible (it never runs as read)."""
    where = next((name for name, (start, end) in unnamed.items() if start <= finding.line <= end), None)
    if where is None or finding.severity == "error" or finding.confidence == "possible":
        return finding
    said = f"in {where}, which nothing in the script names (it never runs as read)"
    return replace(finding, confidence="possible", evidence=f"{finding.evidence}; {said}" if finding.evidence else said)


# What a project module that the script or its helpers import, and that no call of theirs reaches, does at its own top
# level on every rank when imported (IDRIS's ``idr_torch.py``: ``os.environ["MASTER_PORT"] = ...`` on import)
_IMPORT_RULES = (rules_rendezvous.check_hard_coded,)  # with its computed values (rules_rendezvous_computed)


def _on_import(analysis: Analysis, helpers: list[tuple[Path, Module]]) -> set[Finding]:
    """The findings of :data:`_IMPORT_RULES` at the top level of the project modules the script and its helpers
    import that are not helpers themselves (their definitions run for no call of the script: not judged)."""
    project = analysis.project
    assert project is not None
    read = {path for path, _ in helpers} | {Path(analysis.filename).resolve()}
    found: set[Finding] = set()
    for path in dict.fromkeys(q for m in [project.module, *(m for _, m in helpers)] for q in project.imported(m)):
        module = project.read(path) if path not in read and path.resolve() not in read else None
        if module is None:
            continue
        out: set[Finding] = set()
        _run(Analysis(module.tree, str(path), outer=analysis), _IMPORT_RULES, suppressions(_text(path)), out,
             severity="warning")
        found |= {f for f in out if not _defined_at(module.tree.body, f.line) and reached_line(
            module.tree, frozenset(), f.line)}
    return found


def _module_level_names(tree: ast.Module) -> set[str]:
    """Names the module's own top-level code reads when imported (a registry ``{"simclr": ssl.SimCLR}``), not
    in its definitions nor under ``if __name__ == "__main__":``."""
    out: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
            continue
        if isinstance(stmt, ast.If) and main_guard(stmt.test):
            continue
        out |= {n.id if isinstance(n, ast.Name) else n.attr for n in walk(stmt)
                if isinstance(n, ast.Name | ast.Attribute)}
    return out


def _named_in(tree: ast.Module, reached: frozenset[str]) -> set[str]:
    """The names read inside the module's reached top-level definitions."""
    bodies = [s for s in tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
              and s.name in reached]
    return {n.id for body in bodies for n in walk(body) if isinstance(n, ast.Name)}


def _defined_at(body: list[ast.stmt], line: int, prefix: str = "") -> str:
    """``f`` or ``Class.method``: the definition of ``body`` that holds ``line`` ("" at module level)."""
    for stmt in body:
        if not stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            continue
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            return prefix + stmt.name
        if isinstance(stmt, ast.ClassDef):
            return _defined_at(stmt.body, line, f"{stmt.name}.") or stmt.name
        if isinstance(stmt, ast.If | ast.Try) and not prefix:  # `if HAS_X: def f(): ...`
            inner = [*stmt.body, *stmt.orelse, *getattr(stmt, "finalbody", []),
                     *(s for h in getattr(stmt, "handlers", []) for s in h.body)]
            return _defined_at(inner, line)
    return ""


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def read_script(path: str | Path) -> str:
    p = Path(path)
    try:
        with open_regular(p) as fh:  # a FIFO or a device is never read (no hang): skipped
            data = fh.read(MAX_SCRIPT_BYTES + 1)
    except NotAFile as exc:
        if p.is_dir():
            raise DoctorInputError(f"{p}: is a directory", hint="pass Python files (orch doctor train.py)") from None
        raise DoctorSkipped(f"{p}: {exc.strerror}", hint="pass a Python source file") from None
    except OSError as exc:
        raise DoctorInputError(f"{p}: cannot read: {exc.strerror}", hint="check the path") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise DoctorSkipped(f"{p}: larger than {MAX_SCRIPT_BYTES // (1024 * 1024)} MiB",
                            hint="pass a Python source file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DoctorInputError(f"{p}: not UTF-8 text (byte {exc.start})", hint="pass a Python source file") from None


def check_file(path: str | Path) -> list[Finding]:
    return check_source(read_script(path), str(path))


def check_files(paths: Iterable[str | Path]) -> list[Finding]:
    """All findings of ``paths``, file by file. Raises DoctorInputError for the first unreadable one."""
    return dedupe(finding for path in paths for finding in check_file(path))


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """A helper of two scripts (or one also given itself) reported once per place and code, at its worst."""
    kept: dict[tuple[str, int, str], Finding] = {}
    for finding in findings:
        key = (str(Path(finding.file).resolve()), finding.line, finding.code)
        if key not in kept or (finding.severity == "error" and kept[key].severity != "error"):
            kept[key] = finding
    return list(kept.values())
