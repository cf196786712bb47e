"""What a script's project says about how it launches, read once (``orchestrator.source``: the entry and the
project modules its calls reach): the spawns no launcher check guards and the frameworks' spawning strategies
(``spawns.py``; an installed package's spawner such as detectron2's ``launch``: ``installed.py``), the
``--local_rank`` declarations that decide the local rank (``localrank.py``; also at the top level of a project
module the entry imports, which importing runs), where Slurm's rank variables (or its tasks per node) are read and
whether torchrun's are, a rank read only from an MPI launcher's variables or mpi4py's ``COMM_WORLD``, torchrun's
``WORLD_SIZE``/``RANK`` read as a node's (``nodevars.py``), and the constant ``MASTER_ADDR``/``MASTER_PORT`` a file
sets.
Each with its file and line; nothing here judges (``style.py`` decides, the doctor reports)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.launchstyles.installed import installed_spawns
from orchestrator.launchstyles.localrank import FlagDeclaration, declarations, declared_flag, spelling
from orchestrator.launchstyles.loopback import forced_loopback
from orchestrator.launchstyles.nodevars import NodeRead, env_read, node_reads
from orchestrator.launchstyles.spawnrank import index_as_rank
from orchestrator.launchstyles.spawns import Spawn, spawns
from orchestrator.source.analysis import Analysis
from orchestrator.source.projectfiles import SourceFile, read_entry, with_imported
from orchestrator.source.walk import walk
from orchestrator.spec.pysource import UnreadableSource, parse_source

SLURM_RANK_VARS = frozenset({"SLURM_PROCID", "SLURM_LOCALID"})
# Slurm's count of tasks per node: set only where the job asks for it (``--ntasks-per-node``), and the node's GPU count
# only when srun starts a task per GPU; a project that sizes its layout from it (Lightning's ``devices=``) is written
# for srun's tasks, as one that reads SLURM_RANK_VARS is
SLURM_LAYOUT_VARS = frozenset({"SLURM_NTASKS_PER_NODE"})
TORCHRUN_RANK_VARS = frozenset({"RANK", "LOCAL_RANK"})
# the MPI launchers' rank variables (mpirun's OpenMPI, MPICH/PMI, MVAPICH): neither orch's launcher nor torchrun sets
# them, so a project that reads its ranks from these alone (none of LAUNCHER_VARS anywhere) cannot start under them
MPI_RANK_VARS = frozenset({"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
                           "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                           "MV2_COMM_WORLD_SIZE"})
# mpi4py's world (``MPI.COMM_WORLD.Get_rank()``): under a launcher that is not mpiexec each process is a world of one
_MPI_WORLD = frozenset({"Get_rank", "Get_size", "rank", "size"})
LAUNCHER_VARS = TORCHRUN_RANK_VARS | SLURM_RANK_VARS | {"WORLD_SIZE", "SLURM_NODEID", "NODE_RANK", "GROUP_RANK"}
MASTER_VARS = ("MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class Facts:
    """``entry``'s project as read (``files``: the entry first; none when the entry cannot be read)."""

    entry: Path
    files: tuple[SourceFile, ...] = ()
    spawns: tuple[Spawn, ...] = ()  # the entry's first, then by file and line
    local_rank: tuple[FlagDeclaration, ...] = ()  # as spawns
    flag: str | None = None  # the spelling of --local_rank the entry declares, else the first declaration's
    slurm: str | None = None  # where Slurm's rank variables are first read: "dist_utils.py:7: rank = ..."
    torchrun_vars: bool = False  # some file reads torchrun's RANK or LOCAL_RANK (not only writes it)
    masters: dict[str, dict[int, tuple[str, str]]] = field(default_factory=dict)  # file -> master_lines
    index_ranks: tuple[tuple[str, int, str], ...] = ()  # (file, line, code): a spawn index passed as the rank
    loopback: tuple[tuple[str, int, str], ...] = ()  # (file, line, code): a loopback init_method (loopback.py)
    mpi_only: tuple[str, int, str] | None = None  # (file, line, code): a rank read from MPI_RANK_VARS alone
    node_reads: tuple[NodeRead, ...] = ()  # WORLD_SIZE / RANK read as the node count / index (nodevars.py)




def read(entry: Path) -> Facts:
    """The facts of the script at ``entry`` and the project modules it reaches (the spawns and the flag
    declarations in the modules its calls reach, as the doctor reads them; Slurm's variables and the masters in
    those and in what they import from the project)."""
    analysis, first = read_entry(entry)
    if first is None:
        return Facts(entry)
    found_spawns: list[Spawn] = []
    found_flags: list[FlagDeclaration] = []
    index_ranks: list[tuple[str, int, str]] = []
    read_paths: set[str] = set()
    try:
        if analysis is not None:
            index_ranks += _read_spawns(analysis, found_spawns, found_flags)
            helpers = [Analysis(module.tree, str(path), outer=analysis)
                       for path, module in (analysis.project.helpers() if analysis.project is not None else [])]
            for reading in helpers:
                read_paths.add(reading.filename)
                index_ranks += _read_spawns(reading, found_spawns, found_flags, helpers)
    except (RecursionError, MemoryError):  # too deep to follow: what was found stands
        pass
    files = with_imported(entry, analysis, first)
    if analysis is not None:
        found_flags += _imported_flags(analysis, [s for s in files[1:] if str(s.path) not in read_paths])
    name = str(entry)
    found_spawns.sort(key=lambda s: (s.file != name, s.file, s.line))
    found_flags.sort(key=lambda d: (d.file != name, d.file, d.line))
    used = _names_used([source.tree for source in files])
    strings = [(source, _strings(source.tree, used if index else None)) for index, source in enumerate(files)]
    slurm_vars = SLURM_RANK_VARS | SLURM_LAYOUT_VARS
    slurm = next((source.quote(min(line for key, line in seen.items() if key in slurm_vars))
                  for source, seen in strings if slurm_vars & seen.keys()), None)
    read_keys = [seen.keys() - _env_written(source.tree) for source, seen in strings]  # not the ones only written
    launcher_read = any(LAUNCHER_VARS & keys for keys in read_keys)
    flag = declared_flag(files[0].tree) or next((s for d in found_flags if (s := spelling(d.node))), None)
    return Facts(entry, tuple(files), tuple(found_spawns), tuple(found_flags), flag, slurm,
                 any(TORCHRUN_RANK_VARS & keys for keys in read_keys),
                 {str(source.path): master_lines(source.tree) for source in files}, tuple(index_ranks),
                 tuple(forced_loopback([(str(source.path), source.tree) for source in files])),
                 None if launcher_read else _mpi_read(files),
                 tuple(node_reads([(str(source.path), source.tree) for source in files])))


def _imported_flags(analysis: Analysis, imported: list[SourceFile]) -> list[FlagDeclaration]:
    """The ``--local_rank`` declarations at the top level of the project modules the entry imports (``from
    configs.train_configs import *``, a module that builds and parses the parser when imported): importing it runs
    them, though no call of the script reaches them."""
    project = analysis.project
    direct = {str(path) for path in project.imported(analysis.module)} if project is not None else set()
    out: list[FlagDeclaration] = []
    for source in imported:
        if str(source.path) not in direct:
            continue
        reading = Analysis(source.tree, str(source.path), outer=analysis)
        out += [d for d in declarations(reading, packages=True) if not _in_function(reading, d.node)]
    return out


def _in_function(reading: Analysis, node: ast.AST) -> bool:
    current = reading.module.parents.get(node)
    while current is not None:
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
        current = reading.module.parents.get(current)
    return False


def _env_written(tree: ast.Module) -> set[str]:
    """The keys the file only writes into the environment (``os.environ["RANK"] = str(rank)``): a value the
    script hands on, no read of the launcher's."""
    written: set[str] = set()
    read: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ" and isinstance(
                node.slice, ast.Constant) and isinstance(node.slice.value, str):
            (written if isinstance(node.ctx, ast.Store) else read).add(node.slice.value)
        key = env_read(node) if isinstance(node, ast.Call) else None
        if key is not None:
            read.add(key)
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            read.add(node.left.value)
    return written - read


def _mpi_read(files: list[SourceFile]) -> tuple[str, int, str] | None:
    """The first ``os.environ["OMPI_COMM_WORLD_RANK"]`` (``.get``, ``os.getenv``) of an MPI launcher's rank
    variable, or of mpi4py's world (``MPI.COMM_WORLD.Get_rank()``), the files read, with its file, line and code;
    none where some ``init_process_group`` takes no ``rank=`` (it reads ``RANK`` itself: another branch the
    launcher's variables get through), unless the project writes ``RANK`` into the environment itself (the init then
    reads the script's value)."""
    exports = any("RANK" in _env_written(source.tree) for source in files)
    if not exports and any(isinstance(node, ast.Call) and ast.unparse(node.func).rsplit(".", 1)[-1] ==
                           "init_process_group" and len(node.args) < 5
                           and not any(k.arg in ("rank", None) for k in node.keywords)
                           for source in files for node in walk(source.tree)):
        return None
    hits: list[tuple[str, int, str]] = []
    for source in files:
        mpi4py = _imports_mpi4py(source.tree)
        mpi_backend = _mpi_backend_branches(source.tree)
        for node in walk(source.tree):
            if id(node) in mpi_backend:
                continue
            key = env_read(node)
            if key in MPI_RANK_VARS or (mpi4py and _mpi_world(node)):
                line = getattr(node, "lineno", 0)
                code = source.lines[line - 1].strip() if 0 < line <= len(source.lines) else str(key)
                hits.append((str(source.path), line, code[:80]))
    return next((hit for hit in hits if "rank" in hit[2].lower()), hits[0] if hits else None)  # the rank first


def _mpi_backend_branches(tree: ast.Module) -> set[int]:
    """The nodes on the MPI side of a test of the backend (``if args.backend == 'mpi':`` ... ``rank =
    int(os.environ['OMPI_COMM_WORLD_RANK'])``) or of a switch named for MPI (``if args.use_mpi:``, OpenFold's
    ``args.mpi_plugin and int(os.environ.get("PMI_RANK")) == 0``): that side runs only under mpirun, which sets those
    variables; the run orch starts takes the other (gloo or NCCL, the launcher's RANK)."""
    out: set[int] = set()
    for node in walk(tree):
        if isinstance(node, ast.If | ast.IfExp) and (any(_mpi_backend_test(part) for part in walk(node.test))
                                                     or _switched_on(node.test)):
            body = node.body if isinstance(node.body, list) else [node.body]
            out.update(id(inner) for statement in body for inner in walk(statement))
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            switch = next((i for i, value in enumerate(node.values) if _mpi_switch(value)), None)
            if switch is not None:  # ``args.mpi_plugin and <read>``: read only when the switch is on
                out.update(id(inner) for value in node.values[switch + 1:] for inner in walk(value))
    return out


def _switched_on(test: ast.expr) -> bool:
    """``test`` holds only where an MPI switch is on: the switch itself, or an ``and`` with it (not ``not use_mpi``)."""
    return _mpi_switch(test) or (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
                                 and any(_mpi_switch(value) for value in test.values))


def _mpi_switch(node: ast.AST) -> bool:
    """A switch named for MPI, tested as it is: ``args.mpi_plugin``, ``use_mpi``, ``cfg.mpi`` (not ``args.platform``,
    whose value may say ``mpi``: a launcher's name, compared, is ``_mpi_backend_test``'s)."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "mpi" in name.lower().split("_")


def _mpi_backend_test(node: ast.AST) -> bool:
    """``args.backend == 'mpi'``, ``"mpi" == dist_backend``: a backend (by its name) compared with ``mpi``; not
    another choice that says ``mpi`` (``args.platform == 'mpi'`` with NCCL: the launcher, which orch replaces)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
        return False
    sides = (node.left, *node.comparators)
    return any(isinstance(side, ast.Constant) and str(side.value).lower() == "mpi" for side in sides) and any(
        "backend" in ast.unparse(side).lower() for side in sides if not isinstance(side, ast.Constant))


def _imports_mpi4py(tree: ast.Module) -> bool:
    """The file imports mpi4py (``from mpi4py import MPI``)."""
    return any((isinstance(node, ast.Import) and any(a.name.split(".")[0] == "mpi4py" for a in node.names))
               or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mpi4py")
               for node in walk(tree))


def _mpi_world(node: ast.AST) -> bool:
    """``MPI.COMM_WORLD.Get_rank()``, ``comm.Get_size()`` of ``COMM_WORLD``, ``MPI.COMM_WORLD.rank``."""
    return (isinstance(node, ast.Attribute) and node.attr in _MPI_WORLD
            and ast.unparse(node.value).endswith("COMM_WORLD"))


def _read_spawns(reading: Analysis, found_spawns: list[Spawn], found_flags: list[FlagDeclaration],
                 others: Sequence[Analysis] = ()) -> list[tuple[str, int, str]]:
    """``reading``'s spawns and flag declarations added to the lists; its spawns that pass their index as the
    rank (``spawnrank.py``) returned. ``others``: the readings of the project's other helper modules."""
    found = spawns(reading, others)
    found_spawns += found + installed_spawns(reading)  # an installed spawner's ranks are its own (never DDP016)
    found_flags += declarations(reading, packages=True)
    ranks = [index_as_rank(reading, spawn.node) for spawn in found if spawn.strategy is None]
    return [(r.file, r.line, ast.unparse(r.node)[:80]) for r in ranks if r is not None]


def _names_used(trees: list[ast.Module]) -> set[str]:
    """Every name the files load or call, bare or as an attribute (an import alone is not a use)."""
    return {node.id if isinstance(node, ast.Name) else node.attr for tree in trees for node in walk(tree)
            if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load)}


def _never_used(tree: ast.Module, used: set[str]) -> set[int]:
    """The nodes of a project module's module-level functions that no file read names (The Well's
    ``get_distrib_config``, whose only call is commented out): never run. A decorated one may be registered and
    counts as run; the entry's own are all read (a fragment may never call its ``main``)."""
    return {id(node) for function in tree.body if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            and function.name not in used and not function.decorator_list for node in walk(function)}


def _strings(tree: ast.Module, used: set[str] | None = None) -> dict[str, int]:
    """Every string constant of the file and the first line it is on (a Slurm rank variable only where it is
    more than a seed's offset: :func:`_seed_only`), outside the module-level functions no file names (``used``:
    :func:`_names_used`)."""
    dead = _never_used(tree, used) if used is not None else set()
    found: dict[str, int] = {}
    statements: dict[ast.AST, ast.stmt] = {}
    for statement in walk(tree):
        if isinstance(statement, ast.stmt):
            for node in _own_nodes(statement):
                statements[node] = statement
    for node in walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 40:
            if id(node) in dead or (node.value in SLURM_RANK_VARS and _seed_only(node, statements)):
                continue
            found.setdefault(node.value, getattr(node, "lineno", 0))
    return found


def _own_nodes(statement: ast.stmt) -> list[ast.AST]:
    """The expressions of ``statement`` itself (an ``if``'s test, not its body)."""
    parts = [statement.test] if isinstance(statement, ast.If | ast.While) else (
        [] if isinstance(statement, ast.For | ast.With | ast.Try | ast.FunctionDef | ast.AsyncFunctionDef
                         | ast.ClassDef) else [statement])
    return [node for part in parts for node in walk(part)]


_SEEDING = ("seed", "manual_seed", "seed_everything", "set_seed")


def _seeds(statement: ast.stmt) -> bool:
    """``seed += int(os.environ["SLURM_PROCID"])``, ``torch.manual_seed(...)``: a statement that only seeds."""
    if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return all("seed" in ast.unparse(target).lower() for target in targets)
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            and ast.unparse(statement.value.func).rsplit(".", 1)[-1] in _SEEDING)


def _seed_only(constant: ast.Constant, statements: dict[ast.AST, ast.stmt]) -> bool:
    """A Slurm rank variable read only to offset a seed (``if os.environ.get("SLURM_PROCID") is not None: seed +=
    int(os.environ.get("SLURM_PROCID"))``): it picks no rank, so the script is not written for Slurm's variables."""
    statement = statements.get(constant)
    if isinstance(statement, ast.If):
        return bool(statement.body) and all(_seeds(inner) for inner in statement.body) and not statement.orelse
    return statement is not None and _seeds(statement)


def entry_tree(path: Path) -> ast.Module | None:
    """``path`` parsed, or None (unreadable, not Python, too deep)."""
    try:
        return parse_source(path.read_text(encoding="utf-8", errors="replace"), str(path))
    except (OSError, UnreadableSource, RecursionError, MemoryError):
        return None


def master_lines(tree: ast.Module | None) -> dict[int, tuple[str, str]]:
    """``{line: (name, value)}`` of ``os.environ["MASTER_ADDR" | "MASTER_PORT"] = value`` (the value's source
    when it is not a constant string)."""
    if tree is None:
        return {}
    lines: dict[int, tuple[str, str]] = {}
    for node in walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                        and target.slice.value in MASTER_VARS and ast.unparse(target.value) == "os.environ"):
                    value = node.value.value if isinstance(node.value, ast.Constant) else ast.unparse(node.value)
                    lines[node.lineno] = (str(target.slice.value), str(value))
    return lines
