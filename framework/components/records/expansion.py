"""``RecordExpander``: each extracted record becomes the items of a list inside it.

Behaviour, as Airbyte's:

* the items of every list ``expand_records_from_field`` matches (``*`` at any
  level) are emitted in document order; a match that is not a list is ignored;
* an object item is emitted as a shallow copy; any other item as it is, or as
  ``{"value": item}`` when the item is to carry something of its record;
* with ``merge_parent`` the record's fields come first (the expanded lists
  left out, everything copied per item) and the item's own keys win; then each
  of ``parent_fields`` is copied onto the item (a value the record lacks is
  null; objects on the way are created); then, with
  ``remain_original_record``, a copy of the whole record goes under
  ``original_record``;
* no item at all (no list, or empty lists): nothing, or with
  ``on_no_records: emit_parent`` the record itself;
* a record that is not an object, or an empty path: the record as it is.

Copies are plain JSON copies (objects and lists rebuilt, scalars shared), so
a later transformation that writes into an item reaches neither the record
nor the other items.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.records.extraction import WILDCARD
from framework.errors import ConfigError, DecodeError
from framework.models import transformations as models

GLOB_CHARACTERS = ("*", "?", "[")
_MISSING: Any = object()


def json_copy(value: Any) -> Any:
    """A copy of a JSON value sharing no object or list with it."""
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    return value


def _list_paths(value: Any, path: tuple[str, ...], depth: int = 0,
                at: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], list]]:
    """``(concrete path, list)`` for every list ``path`` matches, in document order."""
    if depth == len(path):
        if type(value) is list:
            yield at, value
        return
    key = path[depth]
    if type(value) is dict:
        names = list(value) if key == WILDCARD else ([key] if key in value else [])
        for name in names:
            yield from _list_paths(value[name], path, depth + 1, at + (name,))
    elif type(value) is list:
        if key == WILDCARD:
            indexes: Sequence[int] = range(len(value))
        elif key.isascii() and key.isdigit() and int(key) < len(value):
            indexes = (int(key),)
        else:
            return
        for index in indexes:
            yield from _list_paths(value[index], path, depth + 1, at + (index,))


def _without(container: Any, path: tuple[Any, ...]) -> Any:
    """``container`` with the value at ``path`` removed, copying only the containers on the way."""
    head, rest = path[0], path[1:]
    copied: Any = dict(container) if type(container) is dict else list(container)
    if rest:
        copied[head] = _without(copied[head], rest)
    else:
        del copied[head]
    return copied


def _lookup(record: Any, path: tuple[str, ...]) -> Any:
    value = record
    for key in path:
        if type(value) is dict:
            if key not in value:
                return _MISSING
            value = value[key]
        elif type(value) is list:
            try:
                index = int(key)
            except ValueError:
                return _MISSING
            if not -len(value) <= index < len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


class ParentField(Struct, frozen=True):
    """Copies the value at ``parent_path`` of a record to ``record_path`` of an item."""

    parent_path: tuple[str, ...]
    record_path: tuple[str, ...]
    place: str | None = None

    def copy_onto(self, parent: dict, item: dict) -> None:
        value = _lookup(parent, self.parent_path)
        value = None if value is _MISSING else json_copy(value)
        path = self.record_path
        target: Any = item
        for depth, key in enumerate(path):
            last = depth == len(path) - 1
            # as Airbyte (dpath) writes: a container made on the way is a list when the next key is a number
            made: Any = None if last else ([] if _is_index(path[depth + 1]) else {})
            if type(target) is dict:
                if last:
                    target[key] = value
                    return
                if target.get(key) is None:
                    target[key] = made
                target = target[key]
            elif type(target) is list and _is_index(key):
                index = int(key)
                if index >= len(target):
                    target.extend([None] * (index + 1 - len(target)))
                if last:
                    target[index] = value
                    return
                if target[index] is None:
                    target[index] = made
                target = target[index]
            else:
                raise DecodeError(
                    f"cannot copy the record's `{'.'.join(self.parent_path)}` to `{'.'.join(path)}` of an "
                    f"expanded item: its `{'.'.join(path[:depth])}` is neither an object nor a list; "
                    "choose a record_path that does not pass through such a value",
                    place=self.place,
                )


def _is_index(key: str) -> bool:
    return key.isascii() and key.isdigit()


class RecordExpander(Struct, frozen=True):
    field_path: tuple[str, ...]
    remain_original_record: bool = False
    merge_parent: bool = False
    parent_fields: tuple[ParentField, ...] = ()
    emit_parent: bool = False  # on_no_records: emit_parent

    @property
    def carries_parent(self) -> bool:
        return self.remain_original_record or self.merge_parent or bool(self.parent_fields)

    def expand_all(self, records: list[Any]) -> list[Any]:
        out: list[Any] = []
        for record in records:
            out.extend(self.expand(record))
        return out

    def expand(self, record: Any) -> list[Any]:
        if type(record) is not dict or not self.field_path:
            return [record]
        found = list(_list_paths(record, self.field_path))
        items = [item for _, values in found for item in values]
        if not items:
            return [record] if self.emit_parent else []
        if not self.carries_parent:
            return [dict(item) if type(item) is dict else item for item in items]
        base: dict | None = None
        if self.merge_parent:
            base = record
            for at, _ in sorted(found, key=lambda one: _sort_key(one[0]), reverse=True):
                base = _without(base, at)
        out = []
        for item in items:
            child = dict(item) if type(item) is dict else {"value": item}
            if base is not None:
                merged = json_copy(base)
                merged.update(child)
                child = merged
            for parent_field in self.parent_fields:
                parent_field.copy_onto(record, child)
            if self.remain_original_record:
                child["original_record"] = json_copy(record)
            out.append(child)
        return out


def _sort_key(path: tuple[Any, ...]) -> list[tuple[int, Any]]:
    return [(0, step) if isinstance(step, int) else (1, str(step)) for step in path]


def _check_single(path: tuple[str, ...], name: str, where: str) -> None:
    if not path:
        raise ConfigError(f"{name} is empty at {where}; give the keys of one field")
    for key in path:
        if any(char in key for char in GLOB_CHARACTERS):
            raise ConfigError(f"{name} {list(path)} at {where} holds a glob character (`*`, `?` or `[`); "
                              "it must name one field: write its keys out")


@builds("RecordExpander")
def build_record_expander(model: models.RecordExpander, ctx: BuildContext, path: tuple) -> RecordExpander:
    parents = []
    for index, one in enumerate(model.parent_fields):
        where = ctx.place(path + ("parent_fields", index)) or ".".join(map(str, path + ("parent_fields", index)))
        parent_path = tuple(str(ctx.render(key, one.parameters)) for key in one.parent_path)
        record_path = tuple(str(ctx.render(key, one.parameters)) for key in one.record_path)
        _check_single(parent_path, "parent_path", where)
        _check_single(record_path, "record_path", where)
        parents.append(ParentField(parent_path, record_path, where))
    return RecordExpander(
        tuple(str(ctx.render(key, model.parameters)) for key in model.expand_records_from_field),
        model.remain_original_record, model.merge_parent, tuple(parents), model.on_no_records == "emit_parent",
    )


__all__ = ["GLOB_CHARACTERS", "ParentField", "RecordExpander", "json_copy"]
