"""Single-point mutation testing of orch's core: does the fast test suite notice a small bug?

Usage (from the repository root; ``scripts/mutation.sh`` wraps it)::

    python scripts/mutate.py hostlist distenv [--jobs 2] [--timeout 120] [--limit 50] [--tests FILE ...]

For every module it makes each single-point change listed below (one per run), runs the module's
fast tests (``-m "not slurm and not slow and not mnist"``, stop at the first failure) against a
private copy of the tree, and counts the mutant *killed* (a test failed, or the run timed out)
or *survived*. Mutants listed in ``scripts/mutation-equivalent.txt`` (with the reason) are
equivalent to the original program and left out of the score.

Mutations: arithmetic (``+ -``, ``* //``, ``% //``), comparisons (``< <=``, ``> >=``, ``== !=``,
``in``/``not in``, ``is``/``is not``), ``and``/``or``, swapped ``a or b`` fallbacks, a dropped
``not``, integer constants ``n+1`` and ``n-1``, ``True``/``False``, a raise or a call statement
replaced by ``pass``, and string values of module-level tables. Docstrings, f-strings, messages
and hints are not mutated.

It never touches the working tree: mutants are written into copies under a temporary folder.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT_FILE = ROOT / "scripts" / "mutation-equivalent.txt"
MARKERS = "not slurm and not slow and not mnist"
COPY = ("orchestrator", "jobs", "templates", "tests", "pyproject.toml", "cluster.yaml")

# module -> (source files, test files (edge tests first: -x stops early), top-level names to mutate or None for all)
MODULES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...] | None]] = {
    "hostlist": (("orchestrator/env/hostlist.py",),
                 ("tests/env/test_hostlist_limits.py", "tests/env/test_hostlist.py",
                  "tests/commands/test_hosts_env.py"), None),
    "distenv": (("orchestrator/env/distenv.py", "orchestrator/env/masterport.py", "orchestrator/env/taskenv.py"),
                ("tests/env/test_distenv_limits.py", "tests/env/test_distenv.py", "tests/env/test_masterport.py"),
                None),
    "render": (("orchestrator/slurm/render.py",),
               ("tests/slurm/test_render_limits.py", "tests/slurm/test_render.py",
                "tests/slurm/test_render_hostile_values.py"), None),
    "plan": (("orchestrator/slurm/plan.py", "orchestrator/slurm/resources.py"),
             ("tests/slurm/test_slurm_plan_limits.py", "tests/slurm/test_slurm_plan.py", "tests/slurm/test_render.py"),
             None),
    "cluster": (("orchestrator/spec/cluster.py", "orchestrator/spec/extras.py"),
                ("tests/spec/test_cluster_limits.py", "tests/spec/test_cluster.py",
                 "tests/commands/test_submit_malformed.py", "tests/spec/test_cluster_bounds.py",
                 "tests/spec/test_extras_env_names.py"), None),
    "checkpoint": (("orchestrator/runtime/checkpoint.py",),
                   ("tests/runtime/test_runtime_checkpoint_limits.py", "tests/runtime/test_runtime_checkpoint.py"),
                   None),
    "slurm": (("orchestrator/slurm/state.py", "orchestrator/slurm/client.py"),  # client.py: where it was (--from)
              ("tests/slurm/test_slurm_state_names.py", "tests/slurm/test_slurm_state.py"),
              ("JOB_STATES", "UNKNOWN", "state_info", "JobStatus")),
}

_BINOPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.FloorDiv,), ast.FloorDiv: (ast.Mult,),
    ast.Mod: (ast.FloorDiv,), ast.Div: (ast.Mult,),
}
_CMPOPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE,), ast.LtE: (ast.Lt,), ast.Gt: (ast.GtE,), ast.GtE: (ast.Gt,), ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
}
_SKIP_CALLS = frozenset({"log", "logging", "print", "_error", "ConfigError", "DistEnvError", "CheckpointError",
                         "HostlistError", "ValueError", "SlurmError"})


@dataclass(frozen=True)
class Mutant:
    module: str
    path: str  # the source file, relative to the repository root
    line: int
    before: str  # the original source line, stripped
    what: str  # e.g. "< -> <=" or "statement -> pass"
    source: str  # the whole mutated file

    @property
    def key(self) -> str:
        return f"{self.module} | {self.before} | {self.what}"


def _segment(lines: list[str], node: ast.AST) -> tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0  # type: ignore[attr-defined]


def _splice(text: str, node: ast.AST, replacement: str) -> str:
    lines = text.splitlines(keepends=True)
    l1, c1, l2, c2 = _segment(lines, node)
    # col offsets are UTF-8 byte offsets
    first = lines[l1 - 1].encode()
    last = lines[l2 - 1].encode()
    new = first[:c1].decode() + replacement + last[c2:].decode()
    return "".join(lines[:l1 - 1]) + new + "".join(lines[l2:])


def _protected(tree: ast.Module) -> set[int]:
    """ids of nodes never mutated: docstrings, f-strings, annotations, messages and hints."""
    out: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            out.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                mark(body[0])
        if isinstance(node, ast.JoinedStr):
            mark(node)
        if isinstance(node, (ast.AnnAssign, ast.arg)):
            mark(node.annotation)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
        if isinstance(node, ast.keyword) and node.arg == "hint":
            mark(node.value)
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else (
                node.func.attr if isinstance(node.func, ast.Attribute) else "")
            base = node.func.value.id if (isinstance(node.func, ast.Attribute)
                                          and isinstance(node.func.value, ast.Name)) else ""
            if name in _SKIP_CALLS or base in ("log", "logging"):
                for arg in node.args:
                    mark(arg)
                if base in ("log", "logging") or name == "print":
                    mark(node)
    return out


def _selected(tree: ast.Module, only: tuple[str, ...] | None) -> list[ast.AST]:
    if only is None:
        return [tree]
    picked: list[ast.AST] = []
    for node in tree.body:
        names = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else [
            t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)]
        if any(n in only for n in names):
            picked.append(node)
    return picked


def _table_strings(tree: ast.Module) -> set[int]:
    """ids of string constants inside module-level dict/tuple/set literals (the tables)."""
    out: set[int] = set()
    for node in tree.body:
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and value is not None:
            for sub in ast.walk(value):
                if isinstance(sub, (ast.Dict, ast.Tuple, ast.Set, ast.List, ast.Call)):
                    out.update(id(c) for c in ast.walk(sub) if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return out


def mutants(module: str, source_root: Path = ROOT) -> Iterator[Mutant]:
    paths, _, only = MODULES[module]
    keys: dict[str, int] = {}  # per module: a key stays unique when the module is several files
    for path in paths:
        if (source_root / path).is_file():  # an older commit (--from) may not have it yet
            yield from _file_mutants(module, path, only, keys, source_root)


def _file_mutants(module: str, path: str, only: tuple[str, ...] | None, keys: dict[str, int],
                  source_root: Path) -> Iterator[Mutant]:
    text = (source_root / path).read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    protected = _protected(tree)
    tables = _table_strings(tree)
    seen: set[str] = set()

    def make(node: ast.AST, replacement: str, what: str) -> Mutant | None:
        source = _splice(text, node, replacement)
        try:
            compile(source, path, "exec")
        except SyntaxError:
            return None
        if source == text or source in seen:
            return None
        seen.add(source)
        before = lines[node.lineno - 1].strip()  # type: ignore[attr-defined]
        key = f"{before} | {what}"
        keys[key] = keys.get(key, 0) + 1
        if keys[key] > 1:  # the same change twice on one line: number them
            what = f"{what} [{keys[key]}]"
        return Mutant(module, path, node.lineno, before, what, source)  # type: ignore[attr-defined]

    def expr(node: ast.expr) -> str:
        return "(" + ast.unparse(node) + ")"

    for root in _selected(tree, only):
        for node in ast.walk(root):
            if id(node) in protected or "no mutate" in lines[getattr(node, "lineno", 1) - 1]:
                continue
            found: list[Mutant | None] = []
            if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
                for new in _BINOPS[type(node.op)]:
                    found.append(make(node, expr(ast.BinOp(node.left, new(), node.right)),
                                      f"{type(node.op).__name__} -> {new.__name__}"))
            elif isinstance(node, ast.Compare):
                for i, op in enumerate(node.ops):
                    for new in _CMPOPS.get(type(op), ()):
                        ops = [*node.ops[:i], new(), *node.ops[i + 1:]]
                        found.append(make(node, expr(ast.Compare(node.left, ops, node.comparators)),
                                          f"{type(op).__name__} -> {new.__name__} (#{i})"))
            elif isinstance(node, ast.BoolOp):
                flip = ast.Or() if isinstance(node.op, ast.And) else ast.And()
                found.append(make(node, expr(ast.BoolOp(flip, node.values)),
                                  f"{type(node.op).__name__} -> {type(flip).__name__}"))
                if isinstance(node.op, ast.Or) and len(node.values) == 2:
                    found.append(make(node, expr(ast.BoolOp(ast.Or(), node.values[::-1])), "swap or operands"))
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                found.append(make(node, expr(node.operand), "drop not"))
            elif isinstance(node, ast.Constant):
                value = node.value
                if isinstance(value, bool):
                    found.append(make(node, repr(not value), f"{value} -> {not value}"))
                elif isinstance(value, int):
                    found.append(make(node, repr(value + 1), f"{value} -> {value + 1}"))
                    found.append(make(node, "(" + repr(value - 1) + ")", f"{value} -> {value - 1}"))
                elif isinstance(value, str) and id(node) in tables:
                    found.append(make(node, repr(value + "_X" if value else "X"), f"{value!r} -> changed"))
            elif isinstance(node, (ast.Raise, ast.Expr)) and isinstance(node, ast.stmt):
                if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call):
                    continue
                indent = lines[node.lineno - 1][:node.col_offset]
                if indent.strip():
                    continue  # a statement after ';' on the same line
                found.append(make(node, "pass", "statement -> pass"))
            yield from (m for m in found if m is not None)


def load_equivalent() -> dict[str, str]:
    """key -> reason, from ``scripts/mutation-equivalent.txt`` (``key  # reason`` per line)."""
    out: dict[str, str] = {}
    if EQUIVALENT_FILE.is_file():
        for raw in EQUIVALENT_FILE.read_text(encoding="utf-8").splitlines():
            if raw.strip() and not raw.startswith("#"):
                key, _, reason = raw.partition("  # ")
                out[key.strip()] = reason.strip()
    return out


def make_copy(base: Path, source_root: Path = ROOT) -> Path:
    base.mkdir(parents=True)
    for name in COPY:
        src = source_root / name
        if src.is_dir():
            shutil.copytree(src, base / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src.exists():
            shutil.copy2(src, base / name)
    return base


def run_tests(tree: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", MARKERS,
            "--no-header", "-o", "addopts=", *tests]
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "timeout", time.monotonic() - started
    elapsed = time.monotonic() - started
    if code == 0:
        return "survived", elapsed
    if code in (1, 2):  # tests failed, or collection failed (the mutant breaks an import)
        return "killed", elapsed
    return f"error {code}", elapsed  # 3 internal error, 4 usage error, 5 no tests collected


def check_mutant(m: Mutant, *, tests: list[str], timeout: float, free: list[Path],
                 equivalent: dict[str, str], source_root: Path) -> dict[str, object]:
    """Write the mutant into a free copy of the tree, run the tests there, put the original back."""
    tree = free.pop()
    try:
        (tree / m.path).write_text(m.source, encoding="utf-8")
        outcome, secs = run_tests(tree, tests, timeout)
    finally:
        shutil.copy2(source_root / m.path, tree / m.path)
        free.append(tree)
    if m.key in equivalent:
        gpu = equivalent[m.key].startswith("GPU only")  # not equivalent: only a CUDA run can kill it
        outcome = f"{'gpu-only' if gpu else 'equivalent'} ({outcome})"
    mark = "  " if outcome.startswith(("killed", "timeout")) else "!!"
    print(f"{mark} {outcome:10s} {m.path}:{m.line}: {m.what}  |  {m.before}", flush=True)
    return {"module": m.module, "path": m.path, "line": m.line, "before": m.before, "what": m.what, "outcome": outcome,
            "seconds": round(secs, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"any of: {' '.join(sorted(MODULES))}")
    parser.add_argument("--score", nargs="+", metavar="JSON", help="only print the scores of earlier --json "
                        "results (later files win for the same mutant), with today's equivalent list")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="mutants tested side by side")
    parser.add_argument("--timeout", type=float, default=0, help="seconds per mutant (default: 3x the clean run)")
    parser.add_argument("--limit", type=int, default=0, help="test only every k-th mutant so at most N run")
    parser.add_argument("--tests", nargs="+", help="test files to run instead of the module's own")
    parser.add_argument("--list", action="store_true", help="only list the mutants")
    parser.add_argument("--json", help="write every result to this file")
    parser.add_argument("--rerun", metavar="JSON", help="test again only the mutants that survived in this "
                        "earlier --json result (after new tests); the summary merges both")
    parser.add_argument("--from", dest="ref", help="mutate and test this git commit's tree instead of the "
                        "working tree (e.g. the score before a change)")
    args = parser.parse_args(argv)
    equivalent = load_equivalent()
    if args.score:
        merged: dict[str, dict[str, object]] = {}
        for name in args.score:
            for row in json.loads(Path(name).read_text(encoding="utf-8")):
                merged[_key(row)] = row
        for key, row in merged.items():
            plain = str(row["outcome"]).split(" (")[-1].rstrip(")") if "(" in str(row["outcome"]) else row["outcome"]
            reason = equivalent.get(key)
            row["outcome"] = plain if reason is None else (
                f"{'gpu-only' if reason.startswith('GPU only') else 'equivalent'} ({plain})")
        summary(list(merged.values()))
        return 0
    if not args.modules or not set(args.modules) <= set(MODULES):
        parser.error(f"name modules among: {' '.join(sorted(MODULES))}")
    results: list[dict[str, object]] = []
    rerun: set[str] | None = None
    if args.rerun:
        earlier = json.loads(Path(args.rerun).read_text(encoding="utf-8"))
        rerun = {_key(r) for r in earlier if r["module"] in args.modules and not _dead(r)}
        results = [r for r in earlier if r["module"] in args.modules and _dead(r)]
    with tempfile.TemporaryDirectory(prefix="orch-mutate-") as tmp:
        source_root = ROOT
        if args.ref:
            source_root = Path(tmp) / "base"
            source_root.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.ref, *COPY], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(source_root)], input=archive, check=True)
        trees = [make_copy(Path(tmp) / f"w{i}", source_root) for i in range(max(1, args.jobs))]
        for module in args.modules:
            _, default_tests, _ = MODULES[module]
            tests = [t for t in (args.tests or default_tests) if (source_root / t).exists()]
            todo = list(mutants(module, source_root))
            if rerun is not None:
                todo = [m for m in todo if m.key in rerun]
                found = {m.key for m in todo}
                for key in sorted(k for k in rerun if k.startswith(f"{module} | ") and k not in found):
                    print(f"!! {module}: {key} is no longer made (the source changed); counted as survived")
                    _, before, what = key.split(" | ", 2)
                    results.append({"module": module, "line": 0, "before": before, "what": what,
                                    "outcome": "survived", "seconds": 0})
            elif args.limit and len(todo) > args.limit:
                step = len(todo) / args.limit
                todo = [todo[int(i * step)] for i in range(args.limit)]
            if args.list:
                for m in todo:
                    print(f"{m.path}:{m.line}  {m.key}{'  [equivalent]' if m.key in equivalent else ''}")
                continue
            status, clean = run_tests(trees[0], tests, 900)
            if status != "survived":
                print(f"{module}: the clean run does not pass ({status}); fix the tests first", file=sys.stderr)
                return 1
            timeout = args.timeout or max(30.0, 3 * clean)
            print(f"== {module}: {len(todo)} mutants, tests {' '.join(tests)} (clean run {clean:.1f} s)", flush=True)
            free = list(trees)
            one = functools.partial(check_mutant, tests=tests, timeout=timeout, free=free,
                                    equivalent=equivalent, source_root=source_root)
            with ThreadPoolExecutor(max_workers=len(trees)) as pool:
                results.extend(pool.map(one, todo))
            if args.json:  # after every module, so an interrupted run keeps what it found
                Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    summary(results)
    return 0


def _key(row: dict[str, object]) -> str:
    return f"{row['module']} | {row['before']} | {row['what']}"


def _dead(row: dict[str, object]) -> bool:
    return row["outcome"] in ("killed", "timeout")


def summary(results: list[dict[str, object]]) -> None:
    """Per module: score = killed / (mutants - equivalent - GPU-only - errors)."""
    print("\nmodule       mutants  equivalent  gpu-only  errors  killed  survived  score")
    for module in dict.fromkeys(str(r["module"]) for r in results):
        rows = [r for r in results if r["module"] == module]
        equiv = sum(str(r["outcome"]).startswith("equivalent") for r in rows)
        gpu = sum(str(r["outcome"]).startswith("gpu-only") for r in rows)
        errors = sum(str(r["outcome"]).startswith("error") for r in rows)
        killed = sum(_dead(r) for r in rows)
        counted = len(rows) - equiv - gpu - errors
        score = f"{100 * killed / counted:.0f}%" if counted else "-"
        print(f"{module:12s} {len(rows):7d} {equiv:11d} {gpu:9d} {errors:7d} {killed:7d} {counted - killed:9d}"
              f"  {score:>5s}")


if __name__ == "__main__":
    sys.exit(main())
