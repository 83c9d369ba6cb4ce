"""The spec's ``config_normalization_rules``: config transformations and validations, as airbyte-cdk 7.39 runs them.

Transformations change a config (a plain dict) in place, with templates
rendered against that config:

* ``ConfigAddFields`` renders each field's value, then (when there is a
  ``condition``) the condition with ``value`` (also as ``property``) and
  ``path``, and sets the path, creating objects on the way;
* ``ConfigRemapField`` renders its path and map, and replaces the value at the
  path by the map's value for it; a path that is not there, or a value the map
  does not know, leaves the config alone;
* ``ConfigRemoveFields`` renders its condition once, and removes each pointer
  that is there (``*`` matches every key);
* ``CustomConfigTransformation``: the class's ``transform(config)``, in place.

A ``ConfigMigration`` is its transformations in order. Validators raise
:class:`ValidationFailed` with what failed: ``DpathValidator`` checks the value
at its path (each value a ``*`` matches; nothing when the path is absent),
``PredicateValidator`` its own value (a template rendered with the config);
their strategy is ``ValidateAdheresToSchema`` (the value, parsed from JSON when
it is text, fits the JSON Schema) or a ``CustomValidationStrategy`` (the
class's ``validate(value)`` raises to reject).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, Protocol

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.custom.builders import UserCall, user_component
from framework.components.records.transformations import _remove
from framework.errors import ConfigError, FrameworkError
from framework.interpolation import TemplateEngine
from framework.interpolation.checks import has_markup
from framework.models import custom as custom_models
from framework.models import migrations as models

__all__ = [
    "AddConfigFields", "ConfigTransformer", "CustomConfigTransformer", "CustomValidation", "PathValidator",
    "RemapConfigField", "RemoveConfigFields", "SchemaValidation", "ValidationFailed", "ValueValidator",
]

WILDCARD = "*"


class ValidationFailed(Exception):
    """A config value a validation rejects: ``reason`` says why, ``path`` where (None for a predicate)."""

    def __init__(self, reason: str, path: tuple | None = None):
        super().__init__(reason)
        self.reason = reason
        self.path = path


class ConfigTransformer(Protocol):
    def transform(self, config: dict) -> None: ...


def _variables(config: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    return {"config": config, "parameters": {}, **more}


def _render(engine: TemplateEngine, source: Any, config: Mapping[str, Any], result: str = "string",
            **more: Any) -> Any:
    if not isinstance(source, str) or not has_markup(source):
        return source
    return engine.evaluate(source, _variables(config, **more), result)


def _condition(engine: TemplateEngine, source: str, config: Mapping[str, Any], **more: Any) -> bool:
    if not source.strip():
        return True
    return bool(engine.evaluate(source, {"config": config, "parameters": {}, **more}, "boolean"))


# -- transformations ------------------------------------------------------------------------------


class AddConfigFields(Struct, frozen=True):
    fields: tuple[tuple[tuple[str, ...], str, str], ...]  # path, template, result type
    condition: str
    engine: TemplateEngine
    place: str | None = None

    def transform(self, config: dict) -> None:
        for path, source, result in self.fields:
            value = _render(self.engine, source, config, result) if has_markup(source) else \
                self.engine.evaluate(source, {}, result)
            if self.condition and not _condition(self.engine, self.condition, config, value=value,
                                                 property=value, path=list(path)):
                continue
            target = config
            for depth, key in enumerate(path[:-1]):
                inner = target.get(key)
                if inner is None:
                    inner = target[key] = {}
                elif not isinstance(inner, dict):
                    raise ConfigError(f"ConfigAddFields cannot set `{'.'.join(path)}`: the config's "
                                      f"`{'.'.join(path[:depth + 1])}` is not an object"
                                      f"{_at(self.place)}; choose another path")
                target = inner
            target[path[-1]] = value


class RemapConfigField(Struct, frozen=True):
    field_path: tuple[str, ...]
    map: Mapping[str, Any] | str
    engine: TemplateEngine
    place: str | None = None

    def transform(self, config: dict) -> None:
        path = [str(_render(self.engine, part, config)) for part in self.field_path]
        current: Any = config
        for key in path[:-1]:
            if not isinstance(current, dict) or key not in current:
                return
            current = current[key]
        if not isinstance(current, dict) or path[-1] not in current:
            return
        mapping = self._mapping(config)
        value = current[path[-1]]
        if isinstance(value, Hashable) and value in mapping:
            current[path[-1]] = mapping[value]

    def _mapping(self, config: Mapping[str, Any]) -> Mapping[Any, Any]:
        if isinstance(self.map, str):
            found = _render(self.engine, self.map, config, "any")
            if isinstance(found, str):
                found = _json(found, "map", self.place)
            if not isinstance(found, Mapping):
                raise ConfigError(f"ConfigRemapField: `map` rendered {type(found).__name__}, not an object"
                                  f"{_at(self.place)}; make the template render a mapping")
            return found
        # as airbyte-cdk's mapping: keys rendered as text, text values read as literals too ("1" is 1)
        return {_render(self.engine, key, config): self.engine.evaluate(value, _variables(config), "any")
                if isinstance(value, str) else value for key, value in self.map.items()}


class RemoveConfigFields(Struct, frozen=True):
    pointers: tuple[tuple[str, ...], ...]
    condition: str
    engine: TemplateEngine

    def transform(self, config: dict) -> None:
        if self.condition and not _condition(self.engine, self.condition, config):
            return
        for pointer in self.pointers:
            _remove(config, pointer, 0, None)


class CustomConfigTransformer:
    """``transform(config)`` of the user's class, changing the config in place."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object

    def transform(self, config: dict) -> None:
        self.call(self.user_object.transform, config)


class Migration(Struct, frozen=True):
    description: str | None
    transformations: tuple[ConfigTransformer, ...]

    def transform(self, config: dict) -> None:
        for transformation in self.transformations:
            transformation.transform(config)


# -- validations ----------------------------------------------------------------------------------


class SchemaValidation(Struct, frozen=True):
    schema: Mapping[str, Any] | str
    engine: TemplateEngine
    place: str | None = None

    def validate(self, value: Any, config: Mapping[str, Any]) -> None:
        import jsonschema  # lazy: most connectors have no validations

        schema = self.schema
        if isinstance(schema, str):
            rendered = _render(self.engine, schema, config, "object")
            schema = rendered if not isinstance(rendered, str) else _json(rendered, "base_schema", self.place)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValidationFailed(f"the value is not valid JSON: {value!r}") from None
        try:
            jsonschema.validate(instance=value, schema=schema)
        except jsonschema.ValidationError as exc:
            where = "".join(f"[{part!r}]" for part in exc.absolute_path)
            raise ValidationFailed(f"{exc.message}" + (f" (at {where})" if where else "")) from None
        except jsonschema.SchemaError as exc:
            raise ConfigError(f"`base_schema` is not a valid JSON Schema: {exc.message}{_at(self.place)}") \
                from None


class CustomValidation:
    """``validate(value)`` of the user's class: raising (a ValueError, say) rejects the value."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object

    def validate(self, value: Any, config: Mapping[str, Any]) -> None:
        try:
            self.user_object.validate(value)
        except FrameworkError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the user's class raises is its way of saying no
            raise ValidationFailed(str(exc) or type(exc).__name__) from None


class PathValidator(Struct, frozen=True):
    field_path: tuple[str, ...]
    strategy: Any
    engine: TemplateEngine

    def validate(self, config: Mapping[str, Any]) -> None:
        path = tuple(str(_render(self.engine, part, config)) for part in self.field_path)
        for where, value in _values_at(config, path, ()):
            try:
                self.strategy.validate(value, config)
            except ValidationFailed as exc:
                raise ValidationFailed(exc.reason, where) from None


class ValueValidator(Struct, frozen=True):
    value: Any
    strategy: Any
    engine: TemplateEngine

    def validate(self, config: Mapping[str, Any]) -> None:
        self.strategy.validate(_render(self.engine, self.value, config, "any"), config)


def _values_at(node: Any, path: tuple[str, ...], where: tuple) -> Iterator[tuple[tuple, Any]]:
    """The values at ``path`` (``*`` matching every key or item), with where each is; none when absent."""
    if not path:
        yield where, node
        return
    key, rest = path[0], path[1:]
    if isinstance(node, Mapping):
        keys = list(node) if key == WILDCARD else [key] if key in node else []
        for name in keys:
            yield from _values_at(node[name], rest, where + (name,))
    elif isinstance(node, list):
        if key == WILDCARD:
            indexes: Any = range(len(node))
        elif key.isdigit() and int(key) < len(node):
            indexes = (int(key),)
        else:
            return
        for index in indexes:
            yield from _values_at(node[index], rest, where + (index,))


def _json(text: str, what: str, place: str | None) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"`{what}` rendered text that is not JSON ({exc}){_at(place)}") from None


def _at(place: str | None) -> str:
    return f" (manifest: {place})" if place else ""


# -- builders -------------------------------------------------------------------------------------


@builds("ConfigAddFields")
def build_config_add_fields(model: models.ConfigAddFields, ctx: BuildContext, path: tuple) -> AddConfigFields:
    fields = []
    for index, definition in enumerate(model.fields):
        if not definition.path:
            raise ConfigError(f"ConfigAddFields: field {index} has an empty path{_at(ctx.place(path))}; give the "
                              "key (or keys) the value goes to")
        ctx.engine.compile(definition.value)
        fields.append((tuple(definition.path), definition.value, definition.value_type or "any"))
    if model.condition:
        ctx.engine.compile(model.condition)
    return AddConfigFields(tuple(fields), model.condition, ctx.engine, ctx.place(path))


@builds("ConfigRemapField")
def build_config_remap_field(model: models.ConfigRemapField, ctx: BuildContext, path: tuple) -> RemapConfigField:
    if not model.field_path:
        raise ConfigError(f"ConfigRemapField: `field_path` is empty{_at(ctx.place(path))}; name the keys leading to "
                          "the value")
    return RemapConfigField(tuple(model.field_path), model.map, ctx.engine, ctx.place(path))


@builds("ConfigRemoveFields")
def build_config_remove_fields(model: models.ConfigRemoveFields, ctx: BuildContext, path: tuple) -> RemoveConfigFields:
    if model.condition:
        ctx.engine.compile(model.condition)
    return RemoveConfigFields(tuple(tuple(p) for p in model.field_pointers if p), model.condition, ctx.engine)


@builds("CustomConfigTransformation")
def build_custom_config_transformation(model: custom_models.CustomConfigTransformation, ctx: BuildContext,
                           path: tuple) -> CustomConfigTransformer:
    return CustomConfigTransformer(user_component(model, ctx, path))


@builds("ConfigMigration")
def build_config_migration(model: models.ConfigMigration, ctx: BuildContext, path: tuple) -> Migration:
    return Migration(model.description, tuple(ctx.build(t, path + ("transformations", i))
                                              for i, t in enumerate(model.transformations)))


@builds("ValidateAdheresToSchema")
def build_schema_validation(model: models.ValidateAdheresToSchema, ctx: BuildContext, path: tuple) -> SchemaValidation:
    schema = model.base_schema
    if isinstance(schema, str) and not has_markup(schema):
        schema = _json(schema, "base_schema", ctx.place(path + ("base_schema",)))
    return SchemaValidation(schema, ctx.engine, ctx.place(path))


@builds("CustomValidationStrategy")
def build_custom_validation(model: custom_models.CustomValidationStrategy, ctx: BuildContext,
                       path: tuple) -> CustomValidation:
    return CustomValidation(user_component(model, ctx, path))


@builds("DpathValidator")
def build_dpath_validator(model: models.DpathValidator, ctx: BuildContext, path: tuple) -> PathValidator:
    if not model.field_path:
        raise ConfigError(f"DpathValidator: `field_path` is empty{_at(ctx.place(path))}; name the keys leading to "
                          "the value")
    return PathValidator(tuple(model.field_path), ctx.build(model.validation_strategy, path + ("validation_strategy",)),
                         ctx.engine)


@builds("PredicateValidator")
def build_predicate_validator(model: models.PredicateValidator, ctx: BuildContext, path: tuple) -> ValueValidator:
    return ValueValidator(model.value, ctx.build(model.validation_strategy, path + ("validation_strategy",)),
                          ctx.engine)
