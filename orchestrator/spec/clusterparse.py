"""cluster.yaml text -> a Cluster: the YAML parsed, the models validated, and one error naming every bad
field with its fix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from orchestrator.errors import ConfigError
from orchestrator.spec.cluster import Cluster


def parse_cluster(text: str, source: str = "cluster.yaml") -> Cluster:
    """Parse and validate cluster.yaml text."""
    return validate_cluster(parse_yaml(text, source), source)


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    """The top-level mapping of cluster.yaml text; ConfigError for invalid YAML or another top level."""
    import yaml

    try:
        # libyaml's loader when built in (10x faster); on an error the pure-Python loader parses again,
        # so the message (line, column, context) is the same with or without libyaml
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, RecursionError):
        data = None
    try:
        data = yaml.safe_load(text) if data is None else data
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML: {exc}", hint="check indentation and quoting") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of thousands of digits, deep nesting
        raise ConfigError(f"{source}: a value cannot be read: {str(exc)[:200]}",
                          hint="check the numbers in it (a typo with many digits?) and its nesting") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must be a mapping at the top level", hint="start with 'name: mycluster'")
    return data


def validate_cluster(data: Mapping[str, Any], source: str) -> Cluster:
    try:
        return Cluster.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, source) from None


_FIX_BY_TYPE = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    **dict.fromkeys(("int_parsing", "int_type", "int_from_float"), "use a whole number"),
    "float_parsing": "use a number",
    "bool_parsing": "use true or false",
    "greater_than_equal": "use a larger value",
    "less_than_equal": "use a smaller value",
    "too_short": "add at least one entry",
    "literal_error": "use one of the values listed",
    "string_type": "use text (quote it in YAML)",
    "list_type": "use a YAML list (one '- item' per line, or [a, b])",
    "tuple_type": "use a YAML list of two numbers, e.g. [20000, 32767]",
    "dict_type": "use a mapping (one 'key: value' per line)",
}
_FIX_BY_FIELD = {  # fields whose fix is their own, whatever pydantic's error type
    "doctor.ignore": "list codes of orch doctor's catalog, e.g. ignore: [DDP001, DDP005]",
    "launcher.umask": 'quote it (YAML reads a bare 0022 as the number 18), e.g. umask: "0022"',
}


def validation_error(exc: ValidationError, source: str) -> ConfigError:
    """Turn a pydantic error into one ConfigError that names every bad field and its fix."""
    lines = []
    hints = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{field}: {msg}")
        fix = next((f for name, f in _FIX_BY_FIELD.items() if field.startswith(name)), _FIX_BY_TYPE.get(err["type"]))
        if fix:
            hints.append(f"{field}: {fix}")
    hint = "; ".join(hints) if hints else "see the cluster.yaml reference in README.md"
    return ConfigError(f"invalid {source}:\n  " + "\n  ".join(lines), hint=hint)
