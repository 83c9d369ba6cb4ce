"""A quick yes for a prepared manifest that pydantic's validator would accept, without building that validator.

Building the validator of :class:`~framework.models.DeclarativeSource` (its core schema: every component
model, once, cold) was the largest single cost of a cold start. :func:`quick_build` walks the prepared
mapping by the models' own field annotations instead (read from the classes, so it cannot drift from them),
makes each model with ``model_construct`` and runs its validators on what it made: the same models
pydantic makes, or None when it cannot vouch for them.

It says yes only when it understands every step: exact types (a ``str`` field takes a string, an ``int``
field an integer, never a coercion from text), ``Literal`` values, tuples, mappings, unions (one arm, or
several that build the same value), ``type``-discriminated unions and callable discriminators, the
models' keys (``extra``), required fields, every ``mode="after"`` model validator (run on the built
instance), a model's one ``mode="before"`` validator and one ``mode="after"`` validator a field, each
taking the value alone. Anything else (a ``wrap`` or ``plain`` validator, one that asks for
``ValidationInfo``, a constraint such as ``ge``, a type it does not know, a validator that raises for any
reason) makes it answer no, and the caller has pydantic validate, with its messages and places. So it may
say no to a valid manifest; it must never say yes to one pydantic rejects, nor build anything else
(tests/manifest/test_vouch.py holds it to that over every manifest the tests, examples and corpora have,
and over mutated ones).
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from typing import Any

from pydantic import BaseModel, Discriminator, Tag
from pydantic.fields import FieldInfo

from framework.models import DeclarativeSource
from framework.models.base import field_types


class _Unsure(Exception):
    """Raised inside the walk as soon as something is not plainly what pydantic accepts."""


def vouches(data: Any, model: type[BaseModel] = DeclarativeSource) -> bool:
    """Whether ``model.model_validate(data)`` certainly succeeds (False: it may or may not; ask pydantic)."""
    return quick_build(data, model) is not None


def quick_build(data: Any, model: type[BaseModel] = DeclarativeSource) -> Any:
    """What ``model.model_validate(data)`` returns (an equal instance, built without pydantic's validator), or
    None when the walk cannot vouch for ``data`` (ask pydantic)."""
    try:
        return _model(data, model)
    except (_Unsure, RecursionError):  # components nested past Python's limit: pydantic says what becomes of it
        return None


class _Plan:
    """What checking a mapping against one model class takes: its fields by alias, and its validators.

    (A plain class: a frozen dataclass costs about 0.3 ms to make, at every start.)"""

    __slots__ = ("fields", "names", "required", "extra", "after", "before")

    def __init__(self, fields: dict[str, tuple[str, Any, Any]], names: frozenset[str], required: frozenset[str],
                 extra: str, after: tuple[Any, ...], before: Any):
        self.fields = fields  # alias -> (attribute name, annotation, its `mode="after"` field validator or None)
        self.names = names  # attribute names that differ from their alias: given as keys, pydantic refuses them
        self.required = required
        self.extra = extra
        self.after = after  # model validators (mode="after"), as functions of the instance
        self.before = before  # the one model validator (mode="before") of the input mapping, or None


# Model options that change nothing of what validation accepts or builds; any other makes the walk unsure.
_PLAIN_CONFIG = frozenset({"frozen", "extra", "populate_by_name", "protected_namespaces", "defer_build", "title"})
_PLANS: dict[type, _Plan | None] = {}


def _plan(cls: type[BaseModel]) -> _Plan:
    if cls in _PLANS:
        plan = _PLANS[cls]
        if plan is None:
            raise _Unsure
        return plan
    plan = _make_plan(cls)
    _PLANS[cls] = plan
    if plan is None:
        raise _Unsure
    return plan


def _make_plan(cls: type[BaseModel]) -> _Plan | None:
    config = cls.model_config
    if set(config) - _PLAIN_CONFIG or config.get("populate_by_name") or cls.__pydantic_root_model__:
        return None
    if cls.model_post_init is not BaseModel.model_post_init or "__get_pydantic_core_schema__" in vars(cls):
        return None
    decorators = cls.__pydantic_decorators__
    if decorators.root_validators or decorators.validators:
        return None
    after: list[Any] = []
    before: list[Any] = []
    for decorator in decorators.model_validators.values():
        if decorator.info.mode not in ("after", "before") or not _one_argument(decorator.func):
            return None
        (after if decorator.info.mode == "after" else before).append(decorator.func)
    checks: dict[str, Any] = {}
    for field_check in decorators.field_validators.values():
        if field_check.info.mode != "after" or not _one_argument(field_check.func):
            return None
        for name in field_check.info.fields:
            if name in checks or name not in cls.model_fields:  # two on one field: their order is pydantic's
                return None
            checks[name] = field_check.func
    if len(before) > 1:
        return None
    annotations = field_types(cls)
    fields: dict[str, tuple[str, Any, Any]] = {}
    names = set()
    required = set()
    for name, info in cls.model_fields.items():
        if info.validation_alias is not None and info.validation_alias != info.alias:
            return None
        if any(not _plain_marker(item) for item in info.metadata):
            return None
        alias = info.alias or name
        if alias != name:
            names.add(name)
        fields[alias] = (name, annotations[name], checks.get(name))
        if info.is_required():
            required.add(alias)
    return _Plan(fields, frozenset(names), frozenset(required), str(config.get("extra") or "ignore"), tuple(after),
                 before[0] if before else None)


def _one_argument(function: Any) -> bool:
    """Whether a validator (bound to its class where a classmethod) takes the value alone, no ValidationInfo."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return len(parameters) == 1 and all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def _plain_marker(item: Any) -> bool:
    """Metadata that does not change what validation accepts: a discriminator, a tag, a JSON Schema note."""
    if isinstance(item, (Discriminator, Tag)):
        return True
    if isinstance(item, FieldInfo):
        return not item.metadata and item.validation_alias is None and item.default_factory is None
    kind = type(item)
    return hasattr(kind, "__get_pydantic_json_schema__") and not hasattr(kind, "__get_pydantic_core_schema__")


def _model(value: Any, cls: type[BaseModel]) -> BaseModel:
    plan = _plan(cls)
    if plan.before is not None and isinstance(value, dict):
        value = _run(plan.before, value)
    if not isinstance(value, dict):
        raise _Unsure
    values: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, item in value.items():
        field = plan.fields.get(key)
        if field is None:
            if plan.extra == "ignore":
                continue
            if plan.extra != "allow" or not isinstance(key, str) or key in plan.names:
                raise _Unsure
            extras[key] = item
            continue
        built = _value(item, field[1])
        values[field[0]] = built if field[2] is None else _run(field[2], built)
    if not plan.required <= value.keys():
        raise _Unsure
    instance = cls.model_construct(_fields_set={*values, *extras}, **values, **extras)
    for check in plan.after:
        try:
            same = check(instance) is instance
        except Exception as exc:  # a problem, or a value it did not expect: pydantic says which
            raise _Unsure from exc
        if not same:  # a validator that gives another object: pydantic's would be kept
            raise _Unsure
    return instance


def _run(validator: Any, value: Any) -> Any:
    """A `before` model validator's or an `after` field validator's result: any exception leaves it to pydantic."""
    try:
        return validator(value)
    except Exception as exc:
        raise _Unsure from exc


_SCALARS: dict[Any, tuple[type, ...]] = {str: (str,), int: (int,), float: (float, int), bool: (bool,)}


def _value(value: Any, annotation: Any) -> Any:
    """``value`` as pydantic would build it for ``annotation``; raises _Unsure when not plainly accepted."""
    if annotation is Any:
        return value
    if annotation is None or annotation is type(None):
        if value is None:
            return None
        raise _Unsure
    accepted = _SCALARS.get(annotation)
    if accepted is not None:
        if isinstance(value, accepted) and (annotation is bool or not isinstance(value, bool)):
            return float(typing.cast(float, value)) if annotation is float else value
        raise _Unsure
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model(value, annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _annotated(value, args[0], args[1:])
    if origin is typing.Literal:
        if any(type(value) is type(option) and value == option for option in args):
            return value
        raise _Unsure
    if origin in (typing.Union, types.UnionType):
        return _union(value, args)
    if origin is tuple:
        if len(args) != 2 or args[1] is not Ellipsis or not isinstance(value, (list, tuple)):
            raise _Unsure
        return tuple(_value(item, args[0]) for item in value)
    if origin is list:
        if len(args) != 1 or not isinstance(value, list):
            raise _Unsure
        return [_value(item, args[0]) for item in value]
    if origin in (dict, collections.abc.Mapping):
        if len(args) != 2 or not isinstance(value, dict):
            raise _Unsure
        return {_value(key, args[0]): _value(item, args[1]) for key, item in value.items()}
    raise _Unsure  # a type this walk does not know


def _annotated(value: Any, inner: Any, metadata: tuple) -> Any:
    discriminator: Any = None
    for item in metadata:
        if not _plain_marker(item):
            raise _Unsure
        if isinstance(item, FieldInfo) and item.discriminator is not None:
            discriminator = item.discriminator
        elif isinstance(item, Discriminator):
            discriminator = item
    if discriminator is None:
        return _value(value, inner)
    arms = typing.get_args(inner) if typing.get_origin(inner) in (typing.Union, types.UnionType) else (inner,)
    if isinstance(discriminator, Discriminator):
        discriminator = discriminator.discriminator
    if isinstance(discriminator, str):  # the arm whose model's Literal field of that name holds the value's
        tag = value.get(discriminator) if isinstance(value, dict) else None
        for arm in arms:
            if _tag_of(arm, discriminator) == tag and isinstance(tag, str):
                return _value(value, arm)
        raise _Unsure
    if callable(discriminator):  # a function that names the arm's Tag
        try:
            tag = discriminator(value)
        except Exception as exc:
            raise _Unsure from exc
        for arm in arms:
            if typing.get_origin(arm) is typing.Annotated and \
                    any(isinstance(m, Tag) and m.tag == tag for m in typing.get_args(arm)[1:]):
                return _value(value, arm)
    raise _Unsure


def _tag_of(arm: Any, name: str) -> Any:
    """The one value a model arm's Literal field ``name`` allows (None when it is not so)."""
    while typing.get_origin(arm) is typing.Annotated:
        arm = typing.get_args(arm)[0]
    if not (isinstance(arm, type) and issubclass(arm, BaseModel)):
        return None
    info = arm.model_fields.get(name)
    if info is None or info.alias not in (None, name):
        return None
    options = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is typing.Literal else ()
    return options[0] if len(options) == 1 else None


def _union(value: Any, arms: tuple) -> Any:
    """A value more than one arm takes is vouched for only when they build the same thing: which arm pydantic's
    smart mode picks then makes no difference to the model validators."""
    built: list[Any] = []
    for arm in arms:
        try:
            built.append(_value(value, arm))
        except _Unsure:
            continue
    if not built:
        raise _Unsure
    first = built[0]
    for other in built[1:]:
        if isinstance(other, BaseModel) or isinstance(first, BaseModel) or type(other) is not type(first) \
                or other != first:
            raise _Unsure
    return first
