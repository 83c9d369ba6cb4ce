"""Changing records: the runtimes of ``AddFields`` and ``RemoveFields``.

A :class:`~framework.components.records.conditions.Transformation` changes a record in place and returns it. Work that
does not depend on the record is done once, at build time: a value without
template markup is evaluated then and reused, and a condition without markup
is decided then. Templates see the read's variables plus ``record``;
conditions see ``property`` (the value added, or the value to remove) and
``record``; AddFields' condition also sees the added field's ``value`` and
``path``, as Airbyte's does.

Besides ``apply`` (one record), a transformation may offer ``apply_page``
(every record of a page, in a list it may change and returns): the selector
runs each transformation over the whole page in turn, so per-page work
(rendering a template without ``record``, say) is done once.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.records.conditions import Condition, Transformation
from framework.components.records.extraction import WILDCARD, json_type_name
from framework.errors import DecodeError, FrameworkError
from framework.interpolation import TemplateEngine
from framework.interpolation.checks import has_markup
from framework.models import records as models


def _context(variables: Mapping[str, Any], parameters: Mapping[str, Any], record: dict) -> dict:
    context = dict(variables)
    if parameters:
        context["parameters"] = parameters
    context["record"] = record
    return context


_UNSET: Any = object()


class AddedField(Struct, frozen=True):
    """One field to add: where, its template, its result type and, when it has no markup, its value."""

    path: tuple[str, ...]
    source: str
    result: str
    parameters: Mapping[str, Any]
    constant: Any = _UNSET

    def value(self, engine: TemplateEngine, variables: Mapping[str, Any], record: dict,
              context: dict | None) -> tuple[Any, dict | None]:
        if self.constant is not _UNSET:
            value = self.constant
            return (copy.deepcopy(value) if isinstance(value, (dict, list)) else value), context
        if context is None:
            context = _context(variables, self.parameters, record)
        elif self.parameters:
            context["parameters"] = self.parameters
        return engine.evaluate(self.source, context, self.result), context


class AddFields(Struct, frozen=True):
    """Sets each field's path in the record to its value (creating objects on the way)."""

    fields: tuple[AddedField, ...]
    condition: Condition | None
    parameters: Mapping[str, Any]
    engine: TemplateEngine
    place: str | None = None

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict:
        context: dict | None = None
        for field in self.fields:
            value, context = field.value(self.engine, variables, record, context)
            if self.condition is not None:
                if context is None:
                    context = _context(variables, self.parameters, record)
                if not self.condition.holds_for_field(self.engine, context, value, field.path):
                    continue
            _set(record, field.path, value, self.place)
        return record


def _set(record: dict, path: tuple[str, ...], value: Any, place: str | None) -> None:
    target = record
    for depth, key in enumerate(path[:-1]):
        inner = target.get(key)
        if inner is None:
            inner = target[key] = {}
        elif type(inner) is not dict:
            raise DecodeError(
                f"cannot add the field `{'.'.join(path)}`: the record's `{'.'.join(path[:depth + 1])}` "
                f"is {json_type_name(inner)}, not an object; choose a path that does not pass "
                "through a value that is not an object",
                place=place,
            )
        target = inner
    target[path[-1]] = value


class RemoveFields(Struct, frozen=True):
    """Deletes the values at each pointer (``*`` matching every key or item) when present."""

    pointers: tuple[tuple[str, ...], ...]
    condition: Condition | None
    parameters: Mapping[str, Any]
    engine: TemplateEngine

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict:
        if self.condition is None:
            for pointer in self.pointers:
                _remove(record, pointer, 0, None)
        elif not self.condition.never:
            context = _context(variables, self.parameters, record)
            condition = self.condition

            def keep_out(value: Any) -> bool:
                return condition.holds(self.engine, context, value)

            for pointer in self.pointers:
                _remove(record, pointer, 0, keep_out)
        return record


def _remove(node: Any, pointer: tuple[str, ...], depth: int, removable: Any) -> None:
    key = pointer[depth]
    last = depth == len(pointer) - 1
    if type(node) is dict:
        keys = list(node) if key == WILDCARD else ([key] if key in node else [])
        for name in keys:
            if last:
                if removable is None or removable(node[name]):
                    del node[name]
            else:
                _remove(node[name], pointer, depth + 1, removable)
    elif type(node) is list:
        if key == WILDCARD:
            indexes = range(len(node))
        elif key.isascii() and key.isdigit() and int(key) < len(node):
            indexes = range(int(key), int(key) + 1)
        else:
            return
        if last:
            doomed = [i for i in indexes if removable is None or removable(node[i])]
            for index in reversed(doomed):
                del node[index]
        else:
            for index in indexes:
                _remove(node[index], pointer, depth + 1, removable)


@builds("AddFields")
def build_add_fields(model: models.AddFields, ctx: BuildContext, path: tuple) -> AddFields:
    place = ctx.place(path)
    fields = []
    for index, definition in enumerate(model.fields):
        if not definition.path:
            where = place or ".".join(map(str, path + ("fields", index)))
            raise FrameworkError(
                f"AddFields at {where}: field {index} has an empty path; "
                "give the key (or keys, for a nested field) the value goes to"
            )
        result = definition.value_type or "any"
        parameters = definition.parameters or model.parameters
        constant = _UNSET
        if not has_markup(definition.value):
            constant = ctx.engine.evaluate(definition.value, {}, result)
        else:
            ctx.engine.compile(definition.value)
        fields.append(AddedField(tuple(definition.path), definition.value, result, parameters, constant))
    return AddFields(
        tuple(fields), Condition.of(model.condition, ctx.engine), model.parameters, ctx.engine, place
    )


@builds("RemoveFields")
def build_remove_fields(model: models.RemoveFields, ctx: BuildContext, path: tuple) -> RemoveFields:
    pointers = tuple(tuple(pointer) for pointer in model.field_pointers if pointer)
    return RemoveFields(pointers, Condition.of(model.condition, ctx.engine), model.parameters, ctx.engine)


__all__ = ["AddFields", "AddedField", "Condition", "RemoveFields", "Transformation"]
