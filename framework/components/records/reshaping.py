"""Transformations that reshape records: ``KeysToLower``, ``KeysToSnakeCase``, ``KeysReplace``,
``FlattenFields`` and ``DpathFlattenFields``.

Each runs over a whole page (``apply_page``) as well as one record
(``apply``), and answers new dicts where keys change (the values are shared,
not copied). Renaming keys costs one dict per object; a key's new name is
worked out once per distinct key (a bounded cache), since pages repeat the
same keys record after record. Behaviour follows Airbyte's:

* ``KeysToLower``: top-level keys only. When two keys lower-case alike, a key
  that was not already lower case wins over the one that was;
* ``KeysToSnakeCase``: every object's keys, recursively through objects (not
  through lists). A key is transliterated to ASCII (with ``anyascii``, as
  Airbyte does), cut into words (runs of capitals with
  their lower-case tail, lower-case runs, digit runs; anything else separates
  words, and separators at either end are kept as an empty word), lower-cased
  and joined with ``_``; a key that starts with digits gets a leading ``_``
  (``2fa`` -> ``_2fa``). Keys that end up alike: the later one wins;
* ``KeysReplace``: ``str.replace(old, new)`` on every key, recursively through
  objects; ``old`` and ``new`` may use ``record`` and the slice;
* ``FlattenFields``: one level; a nested key keeps its own name unless a
  field already emitted has it, and once a list has been flattened every key
  met afterwards is written with its parent's (``parent.key``, list items as
  ``parent.0``); the top-level parent is ``_``. Empty objects and lists
  disappear. This is the walk Airbyte's does (last child first), whose quirks
  decide names on collisions;
* ``DpathFlattenFields``: the fields of the object at ``field_path`` (the
  first match with ``*``) are lifted to the top of the record, prefixed and
  suffixed by ``key_transformation``; with ``replace_record`` (and a non-empty
  object) they become the whole record; otherwise they are lifted only when
  none of them is a key the record has already, and ``delete_origin_value``
  then removes the object (a list item is set to null unless it is the last,
  which is removed).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.records.extraction import WILDCARD
from framework.interpolation import TemplateEngine
from framework.interpolation.checks import has_markup
from framework.interpolation.conversions import literal
from framework.models import transformations as models

_KEY_CACHE = 65536  # distinct keys remembered per renaming rule



# ------------------------------------------------------------------ KeysToLower


class KeysToLower(Struct, frozen=True):
    """Lower-cases the top-level keys."""

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict:
        return _lower(record)

    def apply_page(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        return [_lower(record) for record in records]


def _lower(record: dict) -> dict:
    renamed = {key.lower(): value for key, value in record.items()}
    if len(renamed) == len(record):
        return renamed
    # two keys lower-case alike: the one that was already lower case loses
    renamed = {key: value for key, value in record.items() if key == key.lower()}
    renamed.update((key.lower(), value) for key, value in record.items() if key != key.lower())
    return renamed


# ------------------------------------------------------------------ KeysToSnakeCase

_WORDS = re.compile(r"[A-Z]+[a-z]*|[a-z]+|\d+|(?P<gap>[^a-zA-Z\d]+)")


@functools.lru_cache(maxsize=_KEY_CACHE)
def snake_case(key: str) -> str:
    """``key`` in snake case, as Airbyte's KeysToSnakeCase writes it."""
    from anyascii import anyascii  # here: only KeysToSnakeCase needs it (keys are cached by the caller)

    words = ["" if match.group("gap") is not None else match.group(0) for match in _WORDS.finditer(anyascii(key))]
    if len(words) >= 3:
        words = [words[0], *(word for word in words[1:-1] if word), words[-1]]
    if words and words[0].isdigit():
        words.insert(0, "")
    return "_".join(word.lower() for word in words)


def _rename_nested(record: dict, rename: Callable[[str], str]) -> dict:
    return {rename(key): _rename_nested(value, rename) if type(value) is dict else value
            for key, value in record.items()}


class KeysToSnakeCase(Struct, frozen=True):
    """Renames every key (recursively through objects) to snake case."""

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict:
        return _rename_nested(record, snake_case)

    def apply_page(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        return [_rename_nested(record, snake_case) for record in records]


# ------------------------------------------------------------------ KeysReplace


def _replacer(old: str, new: str) -> Callable[[str], str]:
    @functools.lru_cache(maxsize=_KEY_CACHE)
    def replace(key: str) -> str:
        return key.replace(old, new)

    return replace


def _as_text(value: Any) -> str:
    return "" if value is None else str(value)


def _rendered_text(engine: TemplateEngine, source: str, context: Mapping[str, Any]) -> str:
    """A template's text as Airbyte reads it: a Python literal in it is read and written back (``"01"`` stays,
    ``"1.50"`` becomes ``"1.5"``); blank text is kept as it is."""
    text = engine.evaluate(source, dict(context), "string")
    return str(literal(text)) if text.strip() else text


class KeysReplace(Struct, frozen=True):
    """Replaces ``old`` by ``new`` in every key; constant texts are decided at build time."""

    old: str
    new: str
    parameters: Mapping[str, Any]
    engine: TemplateEngine
    constant: Callable[[str], str] | None = None  # the renaming, when neither text has markup

    def _rename_for(self, record: dict, variables: Mapping[str, Any]) -> Callable[[str], str]:
        context = dict(variables)
        context["parameters"] = self.parameters
        context["record"] = record
        return _replacer(_rendered_text(self.engine, self.old, context), _rendered_text(self.engine, self.new, context))

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict:
        rename = self.constant or self._rename_for(record, variables)
        return _rename_nested(record, rename)

    def apply_page(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        rename = self.constant
        if rename is not None:
            return [_rename_nested(record, rename) for record in records]
        return [_rename_nested(record, self._rename_for(record, variables)) for record in records]


# ------------------------------------------------------------------ FlattenFields


def flatten(record: dict, flatten_lists: bool = True) -> dict:
    """``record`` on one level, named as Airbyte's FlattenFields names the fields."""
    flat: dict[str, Any] = {}
    with_parent = False  # set for good once a list has been flattened
    pending: list[tuple[Any, str]] = [(record, "_")]
    while pending:
        value, name = pending.pop()
        if type(value) is dict:
            for key, inner in value.items():
                pending.append((inner, f"{name}.{key}" if with_parent or key in flat else key))
        elif type(value) is list and flatten_lists:
            for index, item in enumerate(value):
                with_parent = True
                pending.append((item, f"{name}.{index}"))
        else:
            flat[name] = value
    return flat


class FlattenFields(Struct, frozen=True):
    flatten_lists: bool = True

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict:
        return flatten(record, self.flatten_lists)

    def apply_page(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        lists = self.flatten_lists
        return [flatten(record, lists) for record in records]


# ------------------------------------------------------------------ DpathFlattenFields


def _delete(node: Any, path: tuple[str, ...], depth: int = 0) -> None:
    """Delete what ``path`` selects (``*``: every key or item); a list item that is not the last becomes null."""
    key = path[depth]
    last = depth == len(path) - 1
    if type(node) is dict:
        names = list(node) if key == WILDCARD else ([key] if key in node else [])
        for name in names:
            if last:
                del node[name]
            else:
                _delete(node[name], path, depth + 1)
    elif type(node) is list:
        if key == WILDCARD:
            indexes = list(range(len(node)))
        elif key.isascii() and key.isdigit() and int(key) < len(node):
            indexes = [int(key)]
        else:
            return
        for index in indexes:
            if not last:
                _delete(node[index], path, depth + 1)
            elif index == len(node) - 1:
                node.pop()
            elif index < len(node):
                node[index] = None


class DpathFlattenFields(Struct, frozen=True):
    field_path: tuple[str, ...]
    delete_origin_value: bool = False
    replace_record: bool = False
    prefix: str = ""
    suffix: str = ""

    def _found(self, record: dict) -> Any:
        path = self.field_path
        if WILDCARD in path:
            matches = matching_values(record, path)
            return matches[0] if matches else None
        value: Any = record
        for key in path:
            if type(value) is dict:
                value = value.get(key)
            elif type(value) is list and key.isascii() and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                return None
        return value

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict:
        found = self._found(record)
        if type(found) is not dict:
            return record
        if self.prefix or self.suffix:
            found = {f"{self.prefix}{key}{self.suffix}": value for key, value in found.items()}
        if self.replace_record and found:
            return dict(found)
        if any(key in record for key in found):
            return record
        if self.delete_origin_value and self.field_path:
            _delete(record, self.field_path)
        record.update(found)
        return record

    def apply_page(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        return [self.apply(record, variables) for record in records]


def matching_values(body: Any, path: tuple[str, ...]) -> list[Any]:
    """Every value ``path`` matches (``*`` at any level), lists not opened, in document order."""
    found: list[Any] = []

    def walk(value: Any, depth: int) -> None:
        if depth == len(path):
            found.append(value)
            return
        key = path[depth]
        if key == WILDCARD:
            children = value.values() if type(value) is dict else value if type(value) is list else ()
            for child in children:
                walk(child, depth + 1)
        elif type(value) is dict:
            if key in value:
                walk(value[key], depth + 1)
        elif type(value) is list and key.isascii() and key.isdigit() and int(key) < len(value):
            walk(value[int(key)], depth + 1)

    walk(body, 0)
    return found


# ------------------------------------------------------------------ builders


@builds("KeysToLower")
def build_keys_to_lower(model: models.KeysToLower, ctx: BuildContext, path: tuple) -> KeysToLower:
    return KeysToLower()


@builds("KeysToSnakeCase")
def build_keys_to_snake_case(model: models.KeysToSnakeCase, ctx: BuildContext, path: tuple) -> KeysToSnakeCase:
    return KeysToSnakeCase()


@builds("KeysReplace")
def build_keys_replace(model: models.KeysReplace, ctx: BuildContext, path: tuple) -> KeysReplace:
    constant = None
    if not has_markup(model.old) and not has_markup(model.new):
        variables = ctx.variables(model.parameters)
        constant = _replacer(_rendered_text(ctx.engine, model.old, variables),
                             _rendered_text(ctx.engine, model.new, variables))
    else:
        ctx.engine.compile(model.old)
        ctx.engine.compile(model.new)
    return KeysReplace(model.old, model.new, model.parameters, ctx.engine, constant)


@builds("FlattenFields")
def build_flatten_fields(model: models.FlattenFields, ctx: BuildContext, path: tuple) -> FlattenFields:
    return FlattenFields(model.flatten_lists)


@builds("DpathFlattenFields")
def build_dpath_flatten_fields(model: models.DpathFlattenFields, ctx: BuildContext,
                                path: tuple) -> DpathFlattenFields:
    field_path = tuple(_as_text(ctx.render(key, model.parameters)) for key in model.field_path)
    prefix = suffix = ""
    keys = model.key_transformation
    if keys is not None:
        prefix = _as_text(ctx.render(keys.prefix, model.parameters)) if keys.prefix else ""
        suffix = _as_text(ctx.render(keys.suffix, model.parameters)) if keys.suffix else ""
    return DpathFlattenFields(field_path, model.delete_origin_value, model.replace_record, prefix, suffix)


__all__ = ["DpathFlattenFields", "FlattenFields", "KeysReplace", "KeysToLower", "KeysToSnakeCase", "flatten",
           "matching_values", "snake_case"]
