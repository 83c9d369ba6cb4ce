"""framework/catalog.py is the one place where the language's types meet their models and builders.

Held to the code from both sides: every model with a ``type`` and every
``@builds`` function is in the catalog exactly once, every line of the catalog
names a model and a builder (or the types that build it as a part) that exist.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import Counter

import pytest

import framework.components
import framework.models
from framework.catalog import CATALOG, UNSUPPORTED, builder_path, model_path
from framework.models.base import Component


def _modules(package) -> list:
    return [importlib.import_module(info.name)
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]


def _models() -> list[type[Component]]:
    """Every model of a component type defined under framework/models/ (a ``type`` field with a default)."""
    found = []
    for module in _modules(framework.models):
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (issubclass(value, Component) and value.__module__ == module.__name__
                    and "type" in value.model_fields and value.model_fields["type"].default is not None):
                found.append(value)
    return found


def _marked_builders() -> dict[str, list[str]]:
    """type -> the ``module:function`` of every function marked ``@builds(type)`` under framework/components/."""
    marked: dict[str, list[str]] = {}
    for module in _modules(framework.components):
        for name, value in vars(module).items():
            if callable(value) and getattr(value, "__module__", None) == module.__name__:
                for kind in getattr(value, "__builds__", ()):
                    marked.setdefault(kind, []).append(f"{module.__name__}:{name}")
    return marked


def test_every_catalog_model_exists_and_has_the_type_of_its_line():
    for kind in CATALOG:
        module, name = model_path(kind)
        model = getattr(importlib.import_module(module), name, None)
        assert model is not None, f"{kind}: the catalog names {module}:{name}, which does not exist"
        assert model.type_name() == kind, f"{kind}: {module}:{name} is the model of {model.type_name()!r}"


def test_every_model_of_a_type_is_in_the_catalog_once():
    listed = Counter(model_path(kind) for kind in CATALOG)
    twice = sorted(f"{module}:{name}" for (module, name), count in listed.items() if count > 1)
    assert twice == [], f"models listed for more than one type: {twice}"
    missing = sorted(f"{model.type_name()}: {model.__module__}:{model.__name__}" for model in _models()
                     if (model.__module__, model.__name__) not in listed)
    assert missing == [], f"models with a `type` the catalog (framework/catalog.py) does not list: {missing}"


def test_every_builder_is_marked_for_its_type_and_every_marked_function_is_the_catalogs():
    marked = _marked_builders()
    twice = {kind: where for kind, where in marked.items() if len(where) > 1}
    assert twice == {}, f"more than one @builds function for a type: {twice}"
    for kind in CATALOG:
        where = builder_path(kind)
        if where is None:
            continue
        module, name = where
        builder = getattr(importlib.import_module(module), name, None)
        assert builder is not None, f"{kind}: the catalog names the builder {module}:{name}, which does not exist"
        assert kind in getattr(builder, "__builds__", ()), f"{kind}: {module}:{name} is not marked @builds({kind!r})"
    unlisted = sorted(f"{kind} ({where[0]})" for kind, where in marked.items()
                      if builder_path(kind) != tuple(where[0].split(":")))
    assert unlisted == [], f"@builds functions the catalog does not name for their type: {unlisted}"


def test_every_builder_takes_the_model_the_context_and_the_path():
    for kind in CATALOG:
        where = builder_path(kind)
        if where is None:
            continue
        builder = getattr(importlib.import_module(where[0]), where[1])
        names = list(inspect.signature(builder).parameters)
        assert names == ["model", "ctx", "path"], f"{kind}: {where[0]}:{where[1]}{tuple(names)} is not a Builder"


def test_a_part_names_the_types_that_build_it():
    roots = []
    for kind, entry in CATALOG.items():
        if entry.builder is not None:
            assert entry.within == (), f"{kind}: a type with a builder is not a part"
            continue
        if not entry.within:
            roots.append(kind)
        for owner in entry.within:
            assert owner in CATALOG, f"{kind}: part of {owner!r}, which the catalog does not list"
    assert roots == ["DeclarativeSource"], "only the source itself is built by no component (the connector opens it)"


def test_the_registry_of_models_is_the_catalog():
    assert list(framework.models.REGISTRY) == list(CATALOG)
    assert not set(CATALOG) & set(UNSUPPORTED)


@pytest.mark.parametrize("kind", ["CursorPagination", "PageIncrement", "OffsetIncrement", "ConstantBackoffStrategy",
                                  "ExponentialBackoffStrategy", "WaitTimeFromHeader", "WaitUntilTimeFromHeader",
                                  "HttpResponseFilter", "RequestOption"])
def test_strategies_and_options_have_builders_of_their_own(kind):
    assert builder_path(kind) is not None
