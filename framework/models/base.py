"""What every manifest component has in common, and how its fields are declared.

Components are pydantic models: typed, frozen, and they reject keys they do not
know. A field is declared with :func:`spec`, which insists on a description and
an example (both land in the JSON Schema under ``schemas/``) and records, for a
template field, which variables the template may use and what its rendered text
is turned into. Validators and the interpreter read that metadata back through
:func:`template_of`; nothing else says which fields are templates.

The model modules leave out ``from __future__ import annotations``: pydantic compiles and evaluates every
string annotation when it makes a class (a cold ``validate-manifest`` pays that for ~500 fields). Quote only
a name that is not defined yet when the class is made (a class further down, or a model of a module above,
which :mod:`framework.models.back_references` binds); tests/models/test_startup_cost.py keeps those few.
"""

import typing
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from msgspec import Struct
from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

Result = Literal["string", "integer", "number", "boolean", "object", "any"]

# Which variables a template may use depends on when it is rendered.
# ``config`` and ``parameters`` are always there.
BASE = frozenset({"config", "parameters"})
SLICE = frozenset({"stream_slice", "stream_interval", "stream_partition", "stream_state"})
REQUEST = BASE | SLICE | {"next_page_token"}
RESPONSE = BASE | SLICE | {"response", "headers", "last_record", "last_records", "last_page_size", "next_page_token"}
RECORD = REQUEST | {"record"}
ERROR = BASE | {"response", "headers"}
PROPERTY = BASE | {"property", "record"}
# AddFields' condition, as Airbyte renders it: also the value to add as `value`, its `path`, and the slice
ADDED_VALUE = PROPERTY | {"value", "path", "stream_slice", "stream_interval", "stream_partition"}
SESSION = BASE | {"session_token"}
# an AsyncRetriever's requests also read the job's responses and download target (Airbyte lists them on every
# HttpRequester's URL fields)
ASYNC_JOB = frozenset({"creation_response", "polling_response", "download_target"})

_REQUIRED: Any = ...


class TemplateSpec(Struct, frozen=True):
    """A field whose strings are Jinja templates.

    ``variables``: the names a template in this field may use (macros aside).
    ``result``: what the rendered text becomes: ``string`` keeps it as text;
    ``integer``, ``number``, ``boolean`` and ``object`` parse it into that type.
    """

    variables: frozenset[str]
    result: Result = "string"

    def as_schema(self) -> dict:
        return {"variables": sorted(self.variables), "result": self.result}


def spec(
    description: str,
    example: Any,
    default: Any = _REQUIRED,
    *,
    template: frozenset[str] | None = None,
    result: Result = "string",
    alias: str | None = None,
    default_type: str | None = None,
    default_factory: Any = None,
    format: Literal["duration", "strftime"] | None = None,
) -> Any:
    """Declare a component field with its description and an example value.

    ``template`` names the variables the field's templates may use (see the
    context sets above) and ``result`` how their rendered text is typed.
    ``default_type`` is the component ``type`` assumed when a manifest omits it
    on a field that accepts several component types. ``format`` marks strings
    that must be ISO 8601 durations (``duration``) or datetime formats
    (``strftime``); validators check them and the JSON Schema says so.
    """
    extra: dict[str, Any] = {}
    if format == "duration":
        extra["format"] = "duration"
    elif format == "strftime":
        extra["x-format"] = "strftime"
    if template is not None:
        extra["x-template"] = TemplateSpec(frozenset(template), result).as_schema()
    if default_type is not None:
        extra["x-default-type"] = default_type
    kwargs: dict[str, Any] = dict(description=description, examples=[example], json_schema_extra=extra or None)
    if alias is not None:
        kwargs["alias"] = alias
    if default_factory is not None:
        return Field(default_factory=default_factory, **kwargs)
    return Field(default, **kwargs)


def template_of(info: FieldInfo) -> TemplateSpec | None:
    """The template metadata of a field, or None when it holds no templates."""
    extra = info.json_schema_extra
    data = extra.get("x-template") if isinstance(extra, Mapping) else None
    if isinstance(data, Mapping):  # as :meth:`TemplateSpec.as_schema` wrote it
        return TemplateSpec(frozenset(typing.cast(list[str], data["variables"])), typing.cast(Result, data["result"]))
    return None


def format_of(info: FieldInfo) -> str | None:
    """``duration`` or ``strftime`` for fields whose strings have that syntax."""
    extra = info.json_schema_extra
    value = (extra.get("format") or extra.get("x-format")) if isinstance(extra, Mapping) else None
    return value if isinstance(value, str) else None


def field_types(model: type[BaseModel]) -> dict[str, Any]:
    """The declared type of each field of ``model`` (by attribute name), ``Annotated`` metadata kept.

    Models are built on first use (``defer_build``); until then pydantic may still hold a type that
    names a model of another module as text. This resolves the names in the modules that declare
    them, as pydantic does when it builds the model.
    """
    found = _FIELD_TYPES.get(model)
    if found is None:  # once per class: the loader's walk and its quick build both read them
        hints = typing.get_type_hints(model, include_extras=True)
        found = _FIELD_TYPES[model] = {name: hints[name] for name in model.model_fields}
    return dict(found)


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def default_type_of(info: FieldInfo) -> str | None:
    extra = info.json_schema_extra
    value = extra.get("x-default-type") if isinstance(extra, Mapping) else None
    return value if isinstance(value, str) else None


class AirbyteSecret(Struct, frozen=True):
    """Marks a field as a credential: ``airbyte_secret: true`` in its JSON Schema, so UIs mask it."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        schema["airbyte_secret"] = True
        return schema


# A credential: optional text, flagged secret in the JSON Schema and left out of the model's repr
# (so it stays out of logs). Declare the field with ``spec(...)`` as usual.
Secret = Annotated[str | None, AirbyteSecret(), Field(repr=False)]


def is_secret(info: FieldInfo) -> bool:
    """Whether a model field holds a credential."""
    return any(isinstance(item, AirbyteSecret) for item in info.metadata)


class Model(BaseModel):
    """Frozen and strict about keys: the base of every settings object."""

    # defer_build: validators are built on first use, so importing the models stays cheap and
    # the schema of a manifest is built once, for DeclarativeSource, not once per component.
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=False, protected_namespaces=(),
                              defer_build=True)


class Component(Model):
    """A manifest component: a mapping with a ``type`` and optional ``$parameters``.

    ``parameters`` holds the effective ``$parameters`` of the component: its own
    merged over those inherited from the components that contain it (the nearer
    value wins). Where a component leaves out one of its fields and a parameter
    has the same name, the loader fills the field from the parameter; a value
    the component sets itself is never overwritten.
    """

    parameters: Mapping[str, Any] = spec(
        "Values passed down to this component and the components inside it, "
        "readable in templates as `parameters`; a field this component leaves out "
        "takes the parameter of the same name.",
        {"name": "orders", "path": "/v1/orders"},
        alias="$parameters",
        default_factory=dict,
    )

    # Whether fields left out may be filled from ``$parameters`` of the same name. Small
    # value components (RequestOption, say) take no parameters, as in Airbyte: a stream's
    # `field_path` parameter must not turn up in its request options.
    takes_parameters: ClassVar[bool] = True

    @classmethod
    def type_name(cls) -> str:
        return cls.model_fields["type"].default
