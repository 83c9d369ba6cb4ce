"""The component reference (``docs/reference.md``), generated from the models.

Every supported manifest component, in the order of
:data:`framework.models.REGISTRY` grouped by the module that defines it,
with each field's key, type, default, description, template variables and an
example, all read from the field declarations (:func:`framework.models.base.spec`).
The settings of ``run-manifest --destination`` follow, then the components of
Airbyte's language that are not supported. A test regenerates the page and
fails when the committed file differs. Regenerate with::

    python -m framework.models.reference docs/reference.md
"""

from __future__ import annotations

import json
import re
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from framework.models import REGISTRY, UNSUPPORTED
from framework.models.base import Component, Model, field_types, format_of, is_secret, template_of
from framework.models.destination import DestinationSettings

COMMAND = "python -m framework.models.reference docs/reference.md"

# Sections of the component reference: module of the models -> title and a line about them.
GROUPS: tuple[tuple[str, str, str], ...] = (
    ("framework.models.source", "Source and streams",
     "The file's root, its streams and how each is read, the spec and the connection check."),
    ("framework.models.dynamic", "Streams made from the API or the config",
     "A stream template, and the values (an endpoint's records, config entries) each made stream gets."),
    ("framework.models.requests", "Requests", "Where requests go and what they carry."),
    ("framework.models.async_jobs", "Asynchronous jobs",
     "Reports the API prepares: one job per partition, created, polled until done, downloaded."),
    ("framework.models.query_properties", "Query properties",
     "Which properties requests ask for, split over several requests and merged back by key."),
    ("framework.models.request_bodies", "Request bodies",
     "What a POST request carries: JSON, a form, text or a GraphQL query."),
    ("framework.models.auth", "Authentication", "How a request proves who is asking."),
    ("framework.models.pagination", "Pagination", "How the next page is asked for and when to stop."),
    ("framework.models.decoders", "Response formats",
     "How a response body is read: JSON, JSON lines, CSV, XML, lines of text, gzip, zip."),
    ("framework.models.records", "Records and schemas",
     "Where records are in a response, which are kept, how they are changed, and their schema."),
    ("framework.models.transformations", "Record transformations",
     "How a stream changes its records: fields added or removed, keys renamed, objects flattened, and the "
     "extractor's expansion of a record into the items of a list."),
    ("framework.models.schema_loaders", "Schemas read from the API",
     "A stream schema built from a record an endpoint returns: fields, names and type mappings."),
    ("framework.models.files", "Files",
     "CSV responses read through a temporary file, and a file downloaded for each record."),
    ("framework.models.error_handling", "Error handling", "Which responses are errors, and how long to wait."),
    ("framework.models.budgets", "API budgets",
     "How many requests the whole sync may send to the API in a time window (docs/api-budgets.md)."),
    ("framework.models.incremental", "Incremental syncs",
     "Reading in datetime windows and remembering where to resume."),
    ("framework.models.partitions", "Partitions", "Splitting a stream into partitions read independently."),
    ("framework.models.stream_groups", "Stream groups",
     "Streams that share a resource of the API and are never read at the same time."),
    ("framework.models.migrations", "State and config migrations",
     "A saved state of an older shape made current, and the config migrated, transformed and validated."),
    ("framework.models.custom", "Custom components",
     "A Python class named by `class_name`, where the language has no component for a need; "
     "the component's other keys go to the class."),
)

_PARAMETERS = "$parameters"


class FieldRow(Struct, frozen=True):
    """One field of a model as the reference shows it."""

    key: str
    type: str
    default: str  # "required" or the default as inline code
    description: str
    example: str


def anchor(name: str) -> str:
    """The Markdown heading anchor of a component heading (GitHub's rule for a single word)."""
    return name.lower()


def type_text(annotation: Any, linked: frozenset[str]) -> str:
    """A field's type in words: ``string``, ``list of string``, links to components, literal choices."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0], linked)
    if origin is typing.Literal:
        return " \\| ".join(f"`{json.dumps(arg)}`" for arg in args)
    if origin in (typing.Union, types.UnionType):
        # Python caches unions by equality, so `Union[int, str]` may come back as `Union[str, int]`
        # depending on import order: put plain types last, in a fixed order, so the page is stable.
        options = sorted((arg for arg in args if arg is not type(None)), key=_union_rank)
        texts: list[str] = []
        for option in options:
            text = type_text(option, linked)
            if text not in texts:
                texts.append(text)
        return " \\| ".join(texts)
    if origin is tuple:
        inner = [arg for arg in args if arg is not Ellipsis]
        item = type_text(inner[0], linked) if inner else "any"
        return f"list of ({item})" if " \\| " in item else f"list of {item}"
    if origin is Mapping:
        value = args[1] if len(args) == 2 else Any
        if value is Any:
            return "mapping"
        return "mapping of string to " + type_text(value, linked)
    if annotation is Any:
        return "any"
    if isinstance(annotation, type) and issubclass(annotation, Model):
        name = _type_name(annotation)
        return f"[{name}](#{anchor(name)})" if name in linked else f"`{name}`"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))


_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SCALAR_ORDER = (int, float, str, bool)


def _union_rank(option: Any) -> int:
    """Sort key of a union's options: everything else first (as declared), then the plain types."""
    return 1 + _SCALAR_ORDER.index(option) if option in _SCALAR_ORDER else 0


def _type_name(model: type[Model]) -> str:
    if issubclass(model, Component):
        return model.type_name()
    return model.__name__


def _json(value: Any) -> str:
    if isinstance(value, Model):
        value = value.model_dump(by_alias=True, mode="json")
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, frozenset)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"cannot show {type(value).__name__} in the reference")


def _code(text: str) -> str:
    """Inline code safe inside a table cell (backticks doubled when the text holds one, pipes escaped)."""
    text = text.replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def default_text(info: FieldInfo) -> str:
    if info.default_factory is not None:
        return _code(_json(info.get_default(call_default_factory=True, validated_data={})))
    if info.default is PydanticUndefined:
        return "required"
    if info.default is None:
        return "none"
    return _code(_json(info.default))


_RESULTS = {"string": "text", "integer": "an integer", "number": "a number", "boolean": "true or false",
            "object": "a mapping or a list",
            "any": "any value (a single expression keeps its type; text that reads as a number, "
                   "list or mapping becomes one)"}


def notes(info: FieldInfo) -> list[str]:
    """What the field's metadata adds to its description: templates, syntax, secrets."""
    found = []
    template = template_of(info)
    if template is not None:
        variables = ", ".join(f"`{name}`" for name in sorted(template.variables))
        kind = _RESULTS[template.result]
        found.append(f"Template: may use {variables}; renders {kind}.")
    syntax = format_of(info)
    if syntax == "duration":
        found.append("An ISO 8601 duration.")
    elif syntax == "strftime":
        found.append("A datetime format.")
    if is_secret(info):
        found.append("A secret: masked in every message.")
    return found


def field_rows(model: type[Model], linked: frozenset[str]) -> list[FieldRow]:
    """The model's fields in declaration order, leaving out ``type`` and ``$parameters``."""
    annotations = field_types(model)
    rows = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key in ("type", _PARAMETERS):
            continue
        description = " ".join([info.description or ""] + notes(info))
        example = _code(_json(info.examples[0])) if info.examples else ""
        rows.append(FieldRow(key, type_text(annotations[name], linked), default_text(info),
                             _cell(description), example))
    return rows


def _summary(model: type) -> str:
    doc = (model.__doc__ or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


def _model_section(model: type[Model], level: str, linked: frozenset[str], head: Iterable[str] = ()) -> list[str]:
    name = _type_name(model)
    lines = [f"{level} {name}", "", _summary(model), ""]
    lines.extend(head)
    rows = field_rows(model, linked)
    if rows:
        lines += ["| key | type | default | description | example |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| `{r.key}` | {r.type} | {r.default} | {r.description} | {r.example} |" for r in rows]
    else:
        lines.append("No fields besides `type`.")
    lines.append("")
    return lines


def _component_head(model: type[Component]) -> list[str]:
    head = [f"Written as `type: {model.type_name()}`."]
    if not model.takes_parameters:
        head.append("Its fields are never filled from inherited `$parameters`.")
    return [" ".join(head), ""]


def _groups() -> list[tuple[str, str, list[type[Component]]]]:
    by_module: dict[str, list[type[Component]]] = {}
    for model in REGISTRY.values():
        by_module.setdefault(model.__module__, []).append(model)
    known = [module for module, _, _ in GROUPS]
    missing = sorted(set(by_module) - set(known))
    if missing:
        raise RuntimeError(f"components defined in {', '.join(missing)} have no section in GROUPS; add one")
    return [(title, line, by_module[module]) for module, title, line in GROUPS if module in by_module]


def _destination_models() -> list[type[Model]]:
    """DestinationSettings and the settings models it holds, in first-seen order."""
    found: list[type[Model]] = []
    pending: list[type[Model]] = [DestinationSettings]
    while pending:
        model = pending.pop(0)
        if model in found:
            continue
        found.append(model)
        for annotation in field_types(model).values():
            pending.extend(m for m in _models_in(annotation) if m not in found)
    return found


def _models_in(annotation: Any) -> list[type[Model]]:
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return [annotation]
    if typing.get_origin(annotation) is typing.Literal:
        return []
    out: list[type[Model]] = []
    for arg in typing.get_args(annotation):
        if arg is not Ellipsis:
            out.extend(_models_in(arg))
    return out


def render() -> str:
    """The whole reference page."""
    groups = _groups()
    names = frozenset(model.type_name() for model in REGISTRY.values())
    lines = [
        "# Manifest component reference",
        "",
        f"<!-- Generated from framework/models by `{COMMAND}`; do not edit by hand. -->",
        "",
        "Every component a manifest may use, with its fields. The [guide](manifest-guide.md) shows how they",
        "fit together; `schemas/manifest.schema.json` holds the same facts for editors.",
        "",
        "How to read the tables:",
        "",
        "- **key** is the key written in the manifest; **default** is `required` for a key that must be",
        "  given, `none` for one that is simply absent when left out, or the value used when left out.",
        "- A component may be written as `$ref: \"#/definitions/<name>\"` plus keys that override the",
        "  referenced ones. A mapping without `type` gets the type its place implies (a `retriever` is a",
        "  SimpleRetriever); where several types fit, `type` is needed.",
        "- Every component also accepts `$parameters`: values handed down to it and to the components",
        "  inside it, readable in templates as `parameters`. A field a component leaves out takes the",
        "  parameter of the same name, unless the component says it does not.",
        "- **Template** fields hold Jinja templates (`{{ ... }}`); the note names the variables the",
        "  template may use and what its rendered text is turned into. Text without `{{` is used as it is.",
        "",
        "## Contents",
        "",
    ]
    for title, _, models in groups:
        links = ", ".join(f"[{m.type_name()}](#{anchor(m.type_name())})" for m in models)
        lines.append(f"- **{title}**: {links}")
    lines += ["- [Destination settings](#destination-settings)", "- [Not supported](#not-supported)", ""]
    for title, line, models in groups:
        lines += [f"## {title}", "", line, ""]
        for model in models:
            lines += _model_section(model, "###", names, _component_head(model))
    destination = _destination_models()
    local = frozenset(model.__name__ for model in destination)
    lines += [
        "## Destination settings",
        "",
        "The JSON file given to `run-manifest --destination` (Airbyte's S3 destination settings, with our",
        "additions). Not part of a manifest; `schemas/destination.schema.json` holds the same facts.",
        "",
    ]
    for settings_model in destination:
        lines += _model_section(settings_model, "###", local)
    lines += [
        "## Not supported",
        "",
        "A manifest using one of these components of Airbyte's language gets one error naming it.",
        "",
        "| component | why |",
        "| --- | --- |",
    ]
    lines += [f"| `{name}` | {reason} |" for name, reason in sorted(UNSUPPORTED.items())]
    text = "\n".join(lines).rstrip("\n") + "\n"
    return re.sub(r"\n{3,}", "\n\n", text)


def write(path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render())


if __name__ == "__main__":  # pragma: no cover
    target = sys.argv[1] if len(sys.argv) > 1 else "docs/reference.md"
    write(target)
    print(target)
