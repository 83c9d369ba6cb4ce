"""framework.values: copies of Structs and dataclasses; and the rule for which a value class is."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec import Struct

import framework
from framework.values import replace


class _Point(Struct, frozen=True):
    x: int
    y: int = 0
    total: int = 0

    def __post_init__(self) -> None:
        from msgspec.structs import force_setattr

        force_setattr(self, "total", self.x + self.y)


@dataclasses.dataclass(frozen=True)
class _Pair:
    x: int
    y: int = 0


@given(st.integers(), st.integers(), st.integers())
def test_replace_changes_only_the_given_fields_of_either_kind(x, y, new):
    point = _Point(x, y)
    moved = replace(point, y=new)
    assert (moved.x, moved.y, moved.total) == (x, new, x + new)  # __post_init__ ran again
    assert (point.x, point.y) == (x, y)
    pair = _Pair(x, y)
    assert replace(pair, y=new) == _Pair(x, new) and pair == _Pair(x, y)


def test_replace_refuses_a_field_the_class_does_not_have():
    with pytest.raises(TypeError):
        replace(_Point(1), z=2)
    with pytest.raises(TypeError):
        replace(_Pair(1), z=2)


def _framework_classes() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(framework.__path__, "framework."):
        module = importlib.import_module(info.name)
        found += [value for value in vars(module).values()
                  if inspect.isclass(value) and value.__module__ == info.name]
    return found


def _needs_a_dataclass(cls: type) -> bool:
    """What a Struct cannot do: a field out of repr or equality, one set after ``__init__`` (or an own
    ``__init__``), or a base that is neither a dataclass nor a plain object."""
    if not cls.__dataclass_params__.init:  # type: ignore[attr-defined]
        return True
    if any(not f.repr or not f.compare or not f.init for f in dataclasses.fields(cls)):
        return True
    return any(base is not object and not dataclasses.is_dataclass(base) for base in cls.__mro__[1:])


def test_a_value_class_is_a_struct_unless_it_needs_what_only_a_dataclass_does():
    """docs/architecture.md, "Value classes": a Struct is made in C, a dataclass compiles its methods from
    text at import (0.7 ms a class here), which every command's start-up pays."""
    plain = [f"{cls.__module__}.{cls.__qualname__}" for cls in _framework_classes()
             if dataclasses.is_dataclass(cls) and not _needs_a_dataclass(cls)]
    assert plain == [], f"make these msgspec Structs (class X(Struct, frozen=True)): {plain}"
