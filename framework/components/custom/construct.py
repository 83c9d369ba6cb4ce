"""Building a custom component's object the way Airbyte does, so classes written for Airbyte need no change.

* The class's declared fields (``typing.get_type_hints`` over the class and
  its bases, dataclass fields included) pick which of the manifest's keys are
  passed, as keyword arguments; other keys are left out.
* ``config`` (the connector config) and ``parameters`` (the component's
  ``$parameters``) are passed when the class declares them.
* A key's value that is a mapping with a ``type`` (or a list of them) is built
  as a component first, with the component's ``$parameters`` passed down: a
  custom one (``Custom*``) becomes its object, a built-in one its runtime, seen
  through Airbyte's method name where the framework has one
  (``extract_records`` of a ``DpathExtractor``, ``transform`` of ``AddFields``).
  A mapping without ``type`` whose field is declared with a component class
  (``extractor: DpathExtractor``) takes that class's name as its ``type``.

An exception raised by the class's constructor is a
:class:`~framework.components.custom.loader.UserCodeError` naming the class
and the manifest place.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import requests

from framework.components.custom.loader import UserCodeError, user_traceback
from framework.components.custom.responses import http_response_of
from framework.errors import ConfigError, FrameworkError, place_suffix
from framework.models import REGISTRY
from framework.models.custom import CUSTOM_KINDS

if TYPE_CHECKING:
    from framework.components.context import BuildContext
    from framework.models.custom import CustomComponent

__all__ = ["build_nested", "construct", "declared_fields"]


def declared_fields(cls: type) -> dict[str, Any]:
    """The fields ``cls`` declares (type hints over its bases, dataclass fields too), by name."""
    fields: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        try:
            hints = typing.get_type_hints(klass)
        except Exception:  # noqa: BLE001 - hints naming what is not importable here: their names still count
            hints = dict(getattr(klass, "__annotations__", {}))
        fields.update(hints)
    if dataclasses.is_dataclass(cls):
        for item in dataclasses.fields(cls):
            fields.setdefault(item.name, item.type)
    return fields


def _component_type(hint: Any) -> str | None:
    """The component ``type`` a field's declared class names (``Optional[DpathExtractor]`` -> ``DpathExtractor``)."""
    candidates = [hint, *typing.get_args(hint)]
    for candidate in candidates:
        if isinstance(candidate, typing.ForwardRef):
            candidate = candidate.__forward_arg__
        name = candidate.split(".")[-1].strip("'\" ") if isinstance(candidate, str) else \
            getattr(candidate, "__name__", None)
        if isinstance(name, str) and name in REGISTRY:
            return name
    return None


def construct(cls: type, model: CustomComponent, ctx: BuildContext, path: tuple) -> Any:
    """An object of ``cls`` built from ``model`` by Airbyte's convention (see the module docs)."""
    fields = declared_fields(cls)
    kwargs: dict[str, Any] = {}
    for key, value in model.options.items():
        if key in fields:
            kwargs[key] = build_nested(value, fields[key], model.parameters, ctx, path + (key,))
    if "config" in fields:
        kwargs["config"] = ctx.config
    if "parameters" in fields:
        kwargs["parameters"] = dict(model.parameters)
    place = ctx.place(path)
    try:
        return cls(**kwargs)
    except FrameworkError:
        raise
    except TypeError as exc:
        if exc.__traceback__ is not None and exc.__traceback__.tb_next is None:  # the call itself: arguments
            given = ", ".join(sorted(kwargs)) or "none"
            raise ConfigError(f"`{model.class_name}` could not be built with the keys the manifest gives it "
                              f"({given}): {exc}; give the keys its fields need{place_suffix(place)}") from exc
        raise _constructor_error(exc, model, place, ctx) from exc
    except Exception as exc:
        raise _constructor_error(exc, model, place, ctx) from exc


def _constructor_error(exc: Exception, model: CustomComponent, place: str | None, ctx: BuildContext) -> UserCodeError:
    return UserCodeError(f"building the {model.kind} `{model.class_name}` raised {type(exc).__name__}: "
                         f"{ctx.mask(str(exc))}", user_traceback=user_traceback(exc, 1, ctx.mask), place=place)


def build_nested(value: Any, hint: Any, parameters: Mapping[str, Any], ctx: BuildContext, path: tuple) -> Any:
    """A manifest value as the class gets it: components built (see the module docs), the rest as it is."""
    if isinstance(value, list):
        return [_maybe_component(item, hint, parameters, ctx, path + (index,)) for index, item in enumerate(value)]
    return _maybe_component(value, hint, parameters, ctx, path)


def _maybe_component(value: Any, hint: Any, parameters: Mapping[str, Any], ctx: BuildContext, path: tuple) -> Any:
    if not isinstance(value, Mapping):
        return value
    kind = value.get("type")
    if kind is None:
        inner = typing.get_args(hint)[0] if typing.get_origin(hint) in (list, typing.List) else hint  # noqa: UP006
        kind = _component_type(inner)
        if kind is None:
            return value
    model_class = REGISTRY.get(kind) or CUSTOM_KINDS.get(kind)
    if model_class is None:
        raise ConfigError(f"the component type `{kind}` is not one this framework knows"
                          f"{place_suffix(ctx.place(path))}")
    data = {**value, "type": kind, "$parameters": {**parameters, **(value.get("$parameters") or {})}}
    model = model_class.model_validate(data)
    built = ctx.build(model, path)
    return _facade(built, ctx)


class _ExtractorFacade:
    """A built-in extractor seen through Airbyte's ``extract_records(response)``."""

    def __init__(self, runtime: Any):
        self.runtime = runtime

    def extract_records(self, response: requests.Response) -> list[dict]:
        return self.runtime.extract(http_response_of(response))


class _TransformationFacade:
    """A built-in transformation seen through Airbyte's ``transform(record, config, stream_state, stream_slice)``."""

    def __init__(self, runtime: Any, config: Mapping[str, Any]):
        self.runtime = runtime
        self.config = config

    def transform(self, record: dict, config: Mapping[str, Any] | None = None,
                  stream_state: Mapping[str, Any] | None = None, stream_slice: Mapping[str, Any] | None = None) -> None:
        changed = self.runtime.apply(record, {"config": config if config is not None else self.config,
                                              "stream_state": stream_state or {}, "stream_slice": stream_slice or {}})
        if changed is not record:
            record.clear()
            record.update(changed)


def _facade(built: Any, ctx: BuildContext) -> Any:
    """What a class gets for a built component: its object as it is, or a built-in seen through Airbyte's names."""
    from framework.components.records.extraction import DpathExtractor
    from framework.components.records.transformations import AddFields, RemoveFields

    if isinstance(built, DpathExtractor):
        return _ExtractorFacade(built)
    if isinstance(built, (AddFields, RemoveFields)):
        return _TransformationFacade(built, ctx.config)
    return getattr(built, "user_object", built)
