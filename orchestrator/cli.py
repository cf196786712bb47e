"""``orch``: argv -> one small function per verb -> exit code. Never imports torch.

Each verb lives in ``orchestrator.commands.<verb>`` (its one-line help in :data:`VERBS`) and provides
``add_arguments(parser)`` and ``run(args) -> int``. Bad input raises ``OrchError``, which is
printed as ``orch: error: ...`` plus a ``HINT:`` line, with exit code 2 and no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from orchestrator import __version__
from orchestrator.errors import OrchError
from orchestrator.spec.numbers import ascii_float, ascii_int, check_path_arguments, os_error
from orchestrator.spec.umask import remember_user_umask

# --- what the orch process skips at start-up (the CLI only; never the tasks, never the Python API) ---
#
# pydantic looks for plugins the first time a model class is built: its loader imports
# ``importlib.metadata`` (and with it ``email``, ``csv``, ``socket``, ``calendar``, ...) and reads the
# entry points of every installed distribution, about a fifth of a dry run's time. orch's CLI uses no
# pydantic plugin, so :func:`skip_pydantic_plugins` answers "no plugins" in this process, as
# ``PYDANTIC_DISABLE_PLUGINS=__all__`` would, without setting that variable: sbatch, ``orch run``'s
# ranks and every other child inherit the environment unchanged. ``ORCH_PYDANTIC_PLUGINS=1`` keeps
# the plugins (and the scan).
PLUGIN_LOADER = "pydantic.plugin._loader"
KEEP_PLUGINS_ENV_VAR = "ORCH_PYDANTIC_PLUGINS"


def _no_plugins() -> Iterable[Any]:
    return ()


def skip_pydantic_plugins(environ: Mapping[str, str]) -> bool:
    """Install a plugin loader that finds none, unless pydantic's own loader is already imported or
    the user asked for plugins. True when installed."""
    if environ.get(KEEP_PLUGINS_ENV_VAR) == "1" or PLUGIN_LOADER in sys.modules:
        return False
    loader = types.ModuleType(PLUGIN_LOADER, "orch: no pydantic plugins in the CLI process (orchestrator.cli)")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]  # the one name pydantic imports from it
    loader.PYDANTIC_ENTRY_POINT_GROUP = "pydantic"  # type: ignore[attr-defined]
    sys.modules[PLUGIN_LOADER] = loader
    return True


# verb -> (module, one-line help); the order is the order of `orch --help`, which imports no verb module.
VERBS: dict[str, tuple[str, str]] = {
    "submit": ("orchestrator.commands.submit",
               "submit a job or a script to Slurm (validate it first; --dry-run shows the script and every "
               "rank; a script's own arguments go after --; for a run on this machine use 'orch run')"),
    "run": ("orchestrator.commands.run",
            "run a job or a script on this machine: N processes through the same launcher (gloo on CPU); "
            "a script's own arguments go after --"),
    "exec": ("orchestrator.commands.exec_script",
             "inside your own batch script: srun orch exec SCRIPT [-- ARGS] runs each task as orch's own would "
             "(ranks from Slurm, the doctor's gate, a job folder for orch status/logs)"),
    "status": ("orchestrator.commands.status",
               "show the Slurm state of jobs (default: the newest jobs submitted from here)"),
    "logs": ("orchestrator.commands.logs",
             "print a job's logs: rank 0's output with the batch lines, --batch, --rank R or --all-ranks (-f follows)"),
    "cancel": ("orchestrator.commands.cancel", "cancel jobs (scancel), or send them a signal with --signal"),
    "resubmit": ("orchestrator.commands.resubmit",
                 "submit a sweep's failed and timed-out elements again (--failed), each resuming from its checkpoint"),
    "list": ("orchestrator.commands.list_jobs", "list the jobs submitted from here (from their job folders)"),
    "top": ("orchestrator.commands.top",
            "a live full-screen view of the jobs submitted from here: progress, loss, restarts, goodput, blame; "
            "cancel or checkpoint-and-requeue a job (the tui extra)"),
    "plot": ("orchestrator.commands.plot",
             "draw a job's per-step curves to a PNG; several jobs or a sweep: overlaid, labelled by what differs"),
    "clean": ("orchestrator.commands.clean",
              "remove the code snapshots (job root's .snapshots/) no job folder refers to any more (--dry-run)"),
    "clusters": ("orchestrator.commands.clusters",
                 "list the cluster files (./cluster.yaml, ~/.config/orch/clusters/NAME.yaml): reachable? partitions"),
    "compare": ("orchestrator.commands.compare", "a table of the final metrics of jobs or a sweep, best first"),
    "tb": ("orchestrator.commands.tb", "start TensorBoard on job folders (--all: every job; --print: the command)"),
    "env": ("orchestrator.commands.env",
            "print this task's rank, local rank, world size, node rank and master address (run it under srun)"),
    "hosts": ("orchestrator.commands.hosts",
              "expand a Slurm hostlist to one host per line (--compress: host names to a hostlist)"),
    "nodes": ("orchestrator.commands.nodes",
              "list the nodes recorded as bad that orch submit leaves out (--forget NODE, --all to use them again)"),
    "doctor": ("orchestrator.commands.doctor",
               "check training scripts for DDP pitfalls (DDP001..DDP024) without running them"),
    "mcp": ("orchestrator.commands.mcp",
            "serve orch's verbs to coding agents (MCP over stdio): plan, submit a checked plan, status, logs, "
            "cancel; read-only unless --allow-submit/--allow-cancel"),
}


REMOTE_VERBS = frozenset({"submit", "status", "logs", "cancel", "list", "plot", "resubmit"})  # see orchestrator/remote/


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors go through the same path as every other bad input, and options
    must be spelled out: ``--node 2`` is an error, not a silent ``--nodes 2``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("type", int, ascii_int)  # every type=int/float option: ASCII digits, bounded length
        self.register("type", float, ascii_float)

    def error(self, message: str) -> None:  # type: ignore[override]
        # render() adds "orch: error: "; the hint names this verb's help (argparse's prog is "orch VERB")
        raise OrchError(message, hint=f"run '{self.prog} --help' for usage")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # `--env=--`: argparse drops the '--' and hands the action an empty list instead of a string
        if action.option_strings and action.nargs is None and "--" in arg_strings:
            self.error(f"argument {'/'.join(action.option_strings)}: expected a value, not '--'")
        return super()._get_values(action, arg_strings)

    _intermixing = False
    plain = False  # parse_operands: argparse's own `--` handling (intermixed parsing loses it)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        # A verb takes `JOB key=value ...` with its options anywhere (`orch run smoke --nproc 2 lr=0.1`):
        # plain argparse stops filling positionals at the first option, so verbs parse intermixed.
        if self._subparsers is None and not self._intermixing and not _Parser.plain:
            self._intermixing = True
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._intermixing = False
        return super().parse_known_args(args, namespace)


def parse_operands(parser: argparse.ArgumentParser, before: Sequence[str],
                   operands: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """A verb that runs no script: ``--`` ends its options and what follows is operands, as in every
    POSIX tool (``orch hosts -- 'node[1-3]'``, ``orch cancel -- 123``)."""
    if not any(word.startswith("-") for word in operands):  # `--` changes nothing: options stay anywhere
        result: tuple[argparse.Namespace, list[str]] = parser.parse_known_args([*before, *operands])
        return result
    _Parser.plain = True  # an operand that looks like an option: argparse's own `--` rule
    try:
        result = parser.parse_known_args([*before, "--", *operands])
        return result
    finally:
        _Parser.plain = False


def _takes_script_args(parser: argparse.ArgumentParser, verb: str | None) -> bool:
    """Whether ``verb`` runs a script that takes the arguments after ``--`` (orch run, orch submit)."""
    if parser._subparsers is None or verb is None:
        return False
    choices = parser._subparsers._group_actions[0].choices
    verb_parser = choices.get(verb) if isinstance(choices, dict) else None
    return isinstance(verb_parser, argparse.ArgumentParser) and bool(verb_parser.get_default("takes_script_args"))


def _verb_in(argv: Sequence[str]) -> str | None:
    """The verb of this command line, if it names one (then only that verb's module is imported)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in VERBS else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that verb (importing one verb module keeps start-up fast)."""
    parser = _Parser(prog="orch", description="Run PyTorch training jobs on Slurm, correctly.")
    parser.add_argument("--version", action="version", version=f"orch {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for verb, (module_name, help_text) in VERBS.items():
        if only is None:  # no verb given (orch --help, orch --version, a typo): the table is enough
            sub.add_parser(verb, help=help_text, description=help_text)
            continue
        if verb != only:
            continue
        module = importlib.import_module(module_name)
        verb_parser = sub.add_parser(verb, help=help_text, description=help_text)
        module.add_arguments(verb_parser)
        verb_parser.set_defaults(_run=module.run)
    return parser


@contextlib.contextmanager
def no_world_write() -> Iterator[None]:
    """What a verb creates (job folders, logs, checkpoints, and Slurm's own log files: sbatch passes
    the umask on to the job) follows the user's umask, but is never group- or world-writable: the tasks
    refuse job folders and checkpoints that others could have changed (orchestrator.records.trust).
    A job's script gets the user's own umask back (remembered here; orchestrator.spec.umask)."""
    previous = os.umask(0o022)
    remember_user_umask(previous)
    os.umask(previous | 0o022)
    try:
        yield
    finally:
        os.umask(previous)


def split_script_args(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """``orch run train.py --nproc 2 -- --lr 0.1`` -> (orch's arguments, the script's or None)."""
    args = list(argv)
    if "--" not in args:
        return args, None
    at = args.index("--")
    return args[:at], args[at + 1:]


def _unrecognized(args: argparse.Namespace, argv: Sequence[str], extra: Sequence[str],
                  script_args: Sequence[str] | None) -> OrchError:
    """argparse's leftovers as one error; torchrun's names and a script's own options get their hint."""
    from orchestrator.commands._torchrun import explain, is_script_target

    hint = explain(args.verb, argv, extra, script_args, script=is_script_target(args))
    return OrchError(f"unrecognized arguments: {' '.join(extra)}",
                     hint=hint or f"run 'orch {args.verb} --help' for usage")


def _no_verb_before_double_dash(after: Sequence[str]) -> None:
    """``orch -- submit ...``: the verb is orch's first operand, so it goes before ``--``."""
    first = next((word for word in after if not word.startswith("-")), None)
    if first in VERBS:
        raise OrchError(f"the verb {first!r} comes after '--': give the verb before '--' (what follows '--' is "
                        "the script's own arguments)", hint=f"e.g. orch {first} JOB [options] -- SCRIPT-ARGS")


def main(argv: Sequence[str] | None = None) -> int:
    full = list(sys.argv[1:] if argv is None else argv)
    args_list, script_args = split_script_args(full)
    skip_pydantic_plugins(os.environ)  # no entry-point scan at the first model build (above)
    try:
        verb = _verb_in(args_list)
        if verb is None and script_args:
            _no_verb_before_double_dash(script_args)
        parser = build_parser(verb)
        if script_args is not None and not _takes_script_args(parser, verb):
            args, extra = parse_operands(parser, args_list, script_args)  # every other verb: `--` ends options
            args_list, script_args = full, None
        else:
            args, extra = parser.parse_known_args(args_list)
        if extra:  # reported here, so the hint names the verb's own help, not orch --help
            raise _unrecognized(args, args_list, extra, script_args)
        args.script_args = script_args
        check_path_arguments(vars(args))  # 100k-character paths: an error naming the option, before any stat
        logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s")
        with no_world_write():
            if verb in REMOTE_VERBS:  # a cluster file with remote: runs the verb on the cluster (over SSH)
                from orchestrator.remote.forward import forwarded

                there = forwarded(args, full)
                if there is not None:
                    return there
            run = getattr(args, "_run", None)
            if run is None:  # no verb module was loaded: the command line named no verb where orch reads one
                raise OrchError("no verb before '--'", hint="run 'orch --help' for usage")
            code: int = run(args)
        return code
    except OrchError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("orch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the last net: a file-system error no verb expected (EROFS, ENAMETOOLONG, ELOOP, ...)
        print(os_error(exc).render(), file=sys.stderr)
        return 2


def entrypoint() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entrypoint()
