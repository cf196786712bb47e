"""One table declares every option (orchestrator/spec/options.py): a flag of orch submit / orch run / orch exec,
a keyword of ``orchestrator.submit()``, a field of ``SubmitOptions`` or of the MCP plan tool that the table does
not declare fails here, and so does a declared option that an interface lost."""

from __future__ import annotations

import argparse
import inspect
from collections import Counter
from dataclasses import fields

from orchestrator import api
from orchestrator.cli import build_parser
from orchestrator.commands._common import add_options
from orchestrator.commands._mcp_plan import PlanInput, plan_signature
from orchestrator.service.request import SubmitOptions, submit_options
from orchestrator.spec.options import (
    API,
    BY_NAME,
    EXEC,
    GROUPS,
    KINDS,
    MCP,
    OPTIONS,
    RUN,
    SUBMIT,
    VERBS,
    markdown_table,
    options_of,
    request_fields,
)


def _verb_parser(verb: str) -> argparse.ArgumentParser:
    parser = build_parser(only=verb)
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = sub.choices[verb]
    assert isinstance(found, argparse.ArgumentParser)
    return found


def undeclared(parser: argparse.ArgumentParser, verb: str) -> list[str]:
    """The parser's arguments that the table does not declare for ``verb`` (by dest and spelling)."""
    declared = {option.key: option for option in options_of(verb)}
    wrong = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        option = declared.get(action.dest)
        spelled = {*option.flags, *(s.flag for s in option.switches)} if option is not None else set()
        if option is None or not set(action.option_strings) <= spelled:
            wrong.append("/".join(action.option_strings) or action.dest)
    return wrong


def test_every_flag_of_the_launching_verbs_is_declared_in_the_table() -> None:
    for verb in (SUBMIT, RUN, EXEC):
        assert undeclared(_verb_parser(verb), verb) == [], verb


def test_the_check_names_a_flag_added_outside_the_table() -> None:
    parser = argparse.ArgumentParser()
    add_options(parser, SUBMIT)
    parser.add_argument("--nodes-per-rack", type=int)
    parser.add_argument("--wait", dest="nodes", action="store_true")  # a declared dest under another spelling
    assert undeclared(parser, SUBMIT) == ["--nodes-per-rack", "--wait"]


def test_every_declared_flag_reaches_its_verbs_parser() -> None:
    for verb in (SUBMIT, RUN, EXEC):
        dests = {action.dest for action in _verb_parser(verb)._actions}
        missing = [o.name for o in options_of(verb) if (o.flags or o.switches) and o.key not in dests]
        assert missing == [], verb


def test_the_api_keywords_are_the_tables() -> None:
    named = [p.name for p in inspect.signature(api.submit).parameters.values() if p.kind != p.VAR_KEYWORD]
    keywords = {*named, *api.REQUEST_FIELDS}
    assert keywords - {"overrides"} == {o.name for o in options_of(API)} - {"overrides"}
    assert [o for o in options_of(API) if o.name == "overrides"]  # **overrides: the hyperparameters


def test_submit_options_has_one_field_per_request_option() -> None:
    assert Counter(f.name for f in fields(SubmitOptions)) == Counter(request_fields())


def test_the_mcp_plan_tool_takes_the_tables_mcp_options() -> None:
    names = [o.name for o in options_of(MCP)]
    assert list(PlanInput.model_fields) == names
    assert list(plan_signature().parameters) == names
    assert set(names) <= set(request_fields())  # the plan becomes the submit's options, field for field


def test_the_mcp_fields_follow_the_declared_kinds() -> None:
    plan = PlanInput(world_check="strict", preflight="exclude", env=["A=1"], nodes=2)
    dumped = plan.model_dump()
    assert dumped["world_check"] == "strict" and dumped["no_check"] is False and dumped["ignore"] == []
    assert dumped["script_args"] is None and dumped["env"] == ["A=1"]
    for bad in ({"preflight": "later"}, {"world_check": "loose"}, {"bogus": 1}):
        try:
            PlanInput(**bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad}")


def test_parsed_arguments_become_submit_options_by_their_dest() -> None:
    args = _verb_parser(SUBMIT).parse_args(["mnist", "--sbatch-arg", "hold", "--strict-world", "--nodes", "2"])
    options = submit_options(vars(args))
    assert (options.sbatch_args, options.world_check, options.nodes, options.job) == (["hold"], "strict", 2, "mnist")


def test_each_option_is_declared_once_and_well_formed() -> None:
    assert len(BY_NAME) == len(OPTIONS)
    for verb in VERBS:
        spelled = [f for o in options_of(verb) for f in (*o.flags, *(s.flag for s in o.switches))]
        assert len(spelled) == len(set(spelled)), verb
    for option in OPTIONS:
        assert option.kind in KINDS and set(option.verbs) <= set(VERBS), option.name
        assert option.group is None or option.group in GROUPS, option.name
        assert all(verb in option.verbs for verb, _ in (*option.helps, *option.place)), option.name
        assert all(verb in BY_NAME[other].verbs for verb, other in option.place), option.name
        assert (option.kind == "switch") == bool(option.switches), option.name


def test_the_docs_table_has_a_row_per_option() -> None:
    rows = markdown_table().splitlines()[2:]
    assert [row.split(" | ")[0].strip("| `") for row in rows] == [o.name for o in OPTIONS]
