"""Turning the prepared manifest into frozen models, and pydantic's errors into diagnostics."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from pydantic import ValidationError

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, field_aliases
from framework.models import REGISTRY, Component, DeclarativeSource, template_of

_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping",
    "mapping_type": "a mapping",
    "tuple_type": "a list",
    "list_type": "a list",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def build_source(data: Any, place: Placement, claimed: list) -> tuple[DeclarativeSource | None, list[Diagnostic]]:
    """Validate ``data`` into a DeclarativeSource; problems under ``claimed`` paths are already reported."""
    try:
        return DeclarativeSource.model_validate(data), []
    except ValidationError as exc:
        return None, _diagnostics(exc, data, place, claimed)


def _clean_path(loc: tuple, data: Any) -> tuple[tuple, Any, Any]:
    """Drop pydantic's union-tag steps from ``loc``; also return the value and its parent."""
    path: list = []
    node: Any = data
    parent: Any = None
    for step in loc:
        if isinstance(node, dict) and step in node:
            parent, node = node, node[step]
            path.append(step)
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            parent, node = node, node[step]
            path.append(step)
        elif isinstance(node, dict) and step not in node and step not in REGISTRY and not _is_tag(step):
            path.append(step)  # a missing or unknown key
            parent, node = node, None
            break
    return tuple(path), node, parent


def _is_tag(step: Any) -> bool:
    return isinstance(step, str) and (step in _TAGS or step.startswith(("tuple[", "function-", "union[", "Mapping[",
                                                                         "tagged-union[", "nullable[", "literal[",
                                                                         "dict[", "list[", "json-or-python")))


_TAGS = {"str", "int", "float", "bool", "dict", "list", "tuple", "none", "Mapping", "union"}


def _model_of(parent: Any) -> type[Component] | None:
    if isinstance(parent, dict):
        kind = parent.get("type")
        if isinstance(kind, str):
            return REGISTRY.get(kind)
    return None


def _diagnostics(exc: ValidationError, data: Any, place: Placement, claimed: list) -> list[Diagnostic]:
    grouped: dict[tuple, list] = {}
    for error in exc.errors(include_url=False):
        path, value, parent = _clean_path(tuple(error["loc"]), data)
        grouped.setdefault(path, []).append((error, value, parent))
    for path in claimed:
        grouped.setdefault(path, [])
    # A value that fits one option of a union but is wrong inside gets errors from every
    # option; the ones from options of another shape say nothing useful when deeper ones exist.
    for path in list(grouped):
        deeper = any(other[: len(path)] == path and len(other) > len(path) for other in grouped)
        if deeper and all(error["type"] in _TYPE_WORDS or error["type"] == "literal_error"
                          for error, _, _ in grouped[path]):
            del grouped[path]
    out: list[Diagnostic] = []
    for path, errors in grouped.items():
        if not errors or any(path[: len(c)] == c for c in claimed):
            continue
        out.append(_one(path, errors, place, data))
    return out


def _one(path: tuple, errors: list, place: Placement, data: Any) -> Diagnostic:
    error, value, parent = errors[0]
    kind = error["type"]
    name = path[-1] if path else ""
    model = _model_of(parent) if kind in ("missing", "extra_forbidden") else None
    owner = model.type_name() if model else "this component"
    if kind == "extra_forbidden":
        fields = sorted(a for a in field_aliases(model) if a != "type") if model else []
        close = difflib.get_close_matches(str(name), fields, n=1, cutoff=0.5)
        fix = f"did you mean `{close[0]}`?" if close else (
            f"remove it; {owner} accepts: {', '.join(fields)}" if fields else "remove it")
        return place.diagnostic(path, "unknown-field", f"unknown field `{name}` in {owner}", fix, key=True)
    if kind == "missing":
        fix = f"add `{name}:` to {owner}"
        if model is not None:
            info = model.model_fields.get(field_aliases(model).get(str(name), ""), None)
            if info is not None and info.examples:
                fix = f"add `{name}: {_short(info.examples[0])}`"
        if name == "name" and owner == "DeclarativeStream":
            fix += " (or give it through `$parameters: {name: ...}`)"
        return place.diagnostic(path[:-1], "missing-field", f"{owner} is missing required field `{name}`", fix,
                                key=True)
    if kind == "value_error":
        message = str(error.get("ctx", {}).get("error", error["msg"]))
        target = path
        if isinstance(value, dict):
            for mentioned in re.findall(r"`([a-z_]+)`", message):
                if mentioned in value:
                    target = path + (mentioned,)
                    break
        return place.diagnostic(target, "invalid-component", message, None, key=target != path)
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        fix = f"use one of {expected}"
        if value == "path" and name == "inject_into":
            fix = "to put a page token in the path, use `type: RequestPath` instead of a RequestOption"
        close = difflib.get_close_matches(str(value), re.findall(r"'([^']*)'", expected), n=1)
        if close and value != "path":
            fix = f"did you mean `{close[0]}`?"
        return place.diagnostic(path, "invalid-value", f"`{value}` is not allowed for `{name}`", fix)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        expected = error.get("ctx", {}).get("expected_tags", "")
        return place.diagnostic(path, "unknown-type", f"unknown or missing component type at `{name}`",
                                f"use one of: {expected}")
    wanted = sorted({_TYPE_WORDS.get(e["type"], e["msg"]) for e, _, _ in errors})
    if _is_template_field(path, data) and len(wanted) > 1 and "a string" in wanted:
        wanted = [w for w in wanted if w != "a string"] + ["a template string"]
    got = type(value).__name__ if value is not None else "nothing"
    got = {"dict": "a mapping", "list": "a list", "str": "a string", "int": "an integer", "float": "a number",
           "bool": "a boolean", "NoneType": "null"}.get(got, got)
    return place.diagnostic(path, "wrong-type", f"`{name}` must be {' or '.join(wanted)}, not {got}",
                            None)


def _is_template_field(path: tuple, data: Any) -> bool:
    """Whether the value at ``path`` is a field whose strings are templates."""
    if not path or not isinstance(path[-1], str):
        return False
    _, _, parent = _clean_path(path, data)
    model = _model_of(parent)
    if model is None:
        return False
    name = field_aliases(model).get(path[-1])
    return name is not None and template_of(model.model_fields[name]) is not None


def _short(example: Any) -> str:
    text = example if isinstance(example, str) else json.dumps(example)
    return text if len(text) <= 60 else text[:57] + "..."
