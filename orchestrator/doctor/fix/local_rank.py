"""DDP015: the local rank from the environment (``LOCAL_RANK``, which orch and torchrun set) before the
legacy ``--local_rank`` flag's value, right after the arguments are parsed:
``args.local_rank = int(os.environ.get("LOCAL_RANK", args.local_rank))``."""

from __future__ import annotations

import libcst as cst

from orchestrator.doctor.findings import Finding
from orchestrator.doctor.fix.cst import Source, callee, code_of, insert, replace_in_block, statement, with_import

_PARSE = frozenset({"parse_args", "parse_known_args"})


def fix(src: Source, finding: Finding) -> cst.Module | None:
    declared = src.calls_at(finding.line, lambda name: name == "add_argument")
    dest = _dest(src, declared[0]) if declared else None
    parsed = src.calls(lambda name: name in _PARSE)
    if dest is None or not parsed:
        return None
    call = parsed[0]
    holder = src.parent(call)
    line = src.statement(call)
    if line is None or not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if isinstance(holder, cst.Assign) and len(holder.targets) == 1:
        target: cst.BaseExpression = holder.targets[0].target
        if isinstance(target, cst.Tuple) and target.elements:  # args, unknown = parser.parse_known_args()
            target = target.elements[0].value
        if not isinstance(target, cst.Name):
            return None
        module = insert(src, line, [statement(_read(target.value, dest))], after=True)
    elif isinstance(holder, cst.Return) and callee(call) == "parse_args":  # return parser.parse_args()
        block = src.block(line)
        body = list(block.body)
        at = next(i for i, stmt in enumerate(body) if stmt is line)
        body[at:at + 1] = [
            statement(f"args = {code_of(src.module, call)}\n").with_changes(leading_lines=line.leading_lines),
            statement(_read("args", dest)), statement("return args\n")]
        module = replace_in_block(src, block, body)
    else:
        return None
    return with_import(module, "os")


def _read(args: str, dest: str) -> str:
    return f'{args}.{dest} = int(os.environ.get("LOCAL_RANK", {args}.{dest}))\n'


def _dest(src: Source, declared: cst.Call) -> str | None:
    """``local_rank`` for ``add_argument("--local_rank")`` / ``"--local-rank"``, or its ``dest=``."""
    for arg in declared.args:
        if arg.keyword is not None and arg.keyword.value == "dest" and isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            return value if isinstance(value, str) else None
    for arg in declared.args:
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            if isinstance(value, str) and value.startswith("--"):
                return value[2:].replace("-", "_")
    return None
