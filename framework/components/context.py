"""What builders see: the :class:`BuildContext`, the ``@builds`` mark, and the catalog's builders found.

Each runtime module marks the builder beside the component it builds::

    @builds("BearerAuthenticator")
    def build_bearer(model: BearerAuthenticator, ctx: BuildContext, path: tuple) -> BearerAuth:
        return BearerAuth(ctx.render(model.api_token, model.parameters), ...)

and :mod:`framework.catalog` names that function for the type, so
``ctx.build(model, path)`` imports the builder's module the first time a
manifest uses one of its types and calls it. Everything a component needs from
outside (config, clock, transport, sleep, the template engine, the manifest's
folder, where a changed config is saved) comes through the :class:`BuildContext`;
nothing reads a global. ``path`` is where the component sits in the resolved
manifest (``("streams", 0, "retriever")``), so errors can point at the manifest
place with :meth:`BuildContext.place`.

It imports nothing above :mod:`framework.components`' own seams (the transport,
the host circuits, the code loader, the config sink) and the template engine.
"""

from __future__ import annotations

import copy
import importlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from framework import coordination
from framework.catalog import builder_path, builds
from framework.components.config_sink import ConfigSink
from framework.components.custom.loader import CodeLoader, custom_code_allowed
from framework.components.http.circuit import HostCircuits
from framework.components.http.transport import RequestsTransport, Transport
from framework.interpolation import TemplateEngine
from framework.temporal.clock import Clock, SystemClock

if TYPE_CHECKING:  # pragma: no cover
    from framework.components.http.response_cache import ResponseCache
    from framework.models.base import Component

ModelT = TypeVar("ModelT", contravariant=True)
RuntimeT = TypeVar("RuntimeT", covariant=True)


class Builder(Protocol[ModelT, RuntimeT]):
    """A builder: the runtime component of a model, built with what the context gives, at a manifest path."""

    def __call__(self, model: ModelT, ctx: BuildContext, path: tuple, /) -> RuntimeT: ...


class RequestBudget(Protocol):
    """The source's API budget as requests see it (:class:`framework.components.http.budget.ApiBudget`)."""

    def acquire(self, request: Any) -> Any: ...

    def observe(self, ticket: Any, response: Any) -> None: ...


class RequestSlots(Protocol):
    """The sync's requests in flight as a request sees them (:class:`framework.components.http.in_flight.InFlight`):
    a permit held from the moment a request is sent until its answer is in."""

    def acquire(self) -> None: ...

    def release(self, status: int | None) -> None: ...


#: The builders found so far, by type (each found once through the catalog).
_FOUND: dict[str, Builder[Any, Any]] = {}


def builder_of(kind: str) -> Builder[Any, Any] | None:
    """The builder the catalog names for the component type ``kind`` (its module imported on first use)."""
    found = _FOUND.get(kind)
    if found is None:
        where = builder_path(kind)
        if where is None:
            return None
        module, name = where
        found = cast("Builder[Any, Any]", getattr(importlib.import_module(module), name))
        _FOUND[kind] = found
    return found


def _identity(text: str) -> str:
    return text


def _nowhere(path: tuple) -> str | None:
    return None


@dataclass(frozen=True, init=False)
class BuildContext:
    """What builders and the components they build may use from outside.

    ``engine`` is built on ``clock`` when not given (so macros read the same clock) and
    ``transport`` is a :class:`RequestsTransport` when not given. ``locate(path)`` gives
    ``file:line:col`` for a manifest path (or None); ``mask(text)`` hides secret config
    values in a message. ``schemas`` holds stream schemas loaded already (by the driver,
    for executors without the schema files). ``stream`` is the name of the stream whose
    components are being built (:meth:`within_stream`), None outside a stream.
    ``services`` holds the sync-wide services offered by the components built
    on this context (:meth:`service`), which the Spark driver serves to its tasks;
    ``circuits`` the connection failures per host that every request shares.
    """

    config: Mapping[str, Any]
    engine: TemplateEngine
    transport: Transport
    clock: Clock
    sleep: Callable[[float], None]
    base_dir: str | None
    locate: Callable[[tuple], str | None]
    mask: Callable[[str], str]
    schemas: Mapping[str, Mapping[str, Any]]
    code: CodeLoader
    stream: str | None
    services: dict[str, coordination.Handler]
    circuits: HostCircuits
    config_sink: ConfigSink | None  # where a config changed during the run is saved (rotated tokens), if anywhere
    budget: RequestBudget | None  # the source's API budget (framework.components.http.budget.ApiBudget)
    in_flight: RequestSlots | None  # the sync's requests in flight (framework.components.http.in_flight.InFlight)
    response_cache: ResponseCache | None  # the sync's kept responses (framework.components.http.response_cache)
    parent_streams: frozenset[str]  # the streams used as parents: their requesters send through the cache

    def __init__(self, config: Mapping[str, Any], engine: TemplateEngine | None = None,
                 transport: Transport | None = None, clock: Clock | None = None,
                 sleep: Callable[[float], None] = time.sleep, base_dir: str | None = None,
                 locate: Callable[[tuple], str | None] = _nowhere, mask: Callable[[str], str] = _identity,
                 schemas: Mapping[str, Mapping[str, Any]] | None = None, code: CodeLoader | None = None,
                 config_sink: ConfigSink | None = None) -> None:
        clock = clock if clock is not None else SystemClock()
        values = {"config": config, "engine": engine if engine is not None else TemplateEngine(clock),
                  "transport": transport if transport is not None else RequestsTransport(), "clock": clock,
                  "sleep": sleep, "base_dir": base_dir, "locate": locate, "mask": mask,
                  "schemas": schemas if schemas is not None else {},
                  "code": code if code is not None else CodeLoader(base_dir, custom_code_allowed()),
                  "stream": None, "services": {}, "circuits": HostCircuits(), "config_sink": config_sink,
                  "budget": None, "in_flight": None, "response_cache": None, "parent_streams": frozenset()}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def within_stream(self, name: str) -> BuildContext:
        """This context for the components of the stream ``name`` (Airbyte hands a stream's name to some)."""
        if self.stream == name:
            return self
        found = copy.copy(self)
        object.__setattr__(found, "stream", name)
        return found

    def with_budget(self, budget: RequestBudget | None) -> BuildContext:
        """This context with the source's API budget, which every HttpRequester built on it sends through."""
        found = copy.copy(self)
        object.__setattr__(found, "budget", budget)
        return found

    def with_in_flight(self, in_flight: RequestSlots | None) -> BuildContext:
        """This context with the sync's requests in flight, which every HttpRequester built on it sends within."""
        found = copy.copy(self)
        object.__setattr__(found, "in_flight", in_flight)
        return found

    def with_response_cache(self, cache: ResponseCache | None, parents: frozenset[str]) -> BuildContext:
        """This context with the sync's response cache, which the requesters of ``parents`` (the streams used as
        parents) and those that say ``use_cache: true`` send through."""
        found = copy.copy(self)
        object.__setattr__(found, "response_cache", cache)
        object.__setattr__(found, "parent_streams", parents)
        return found

    def service(self, name: str, handler: coordination.Handler) -> coordination.Handler:
        """Offer ``handler`` as the sync-wide service ``name``; what to call to use it.

        The first handler offered under a name is the one every component of the
        connector shares (give equal names to components that must share state,
        such as one token). In a Spark task the call goes to the driver's handler
        (:mod:`framework.coordination`).
        """
        found = self.services.setdefault(name, handler)
        return coordination.routed(name, found)

    def build(self, model: Component, path: tuple) -> Any:
        """The runtime component of ``model``: the builder the catalog names for its ``type``.

        What it answers is typed by the builder (``Builder[ModelT, RuntimeT]``); the caller
        knows the kind of component it asked for by the manifest field it read.
        """
        kind = getattr(model, "type", None)
        builder = builder_of(kind) if isinstance(kind, str) else None
        if builder is None:
            raise NotImplementedError(f"no builder for component type {kind!r} at {'.'.join(map(str, path))}"
                                      " (framework/catalog.py names each type's builder)")
        return builder(model, self, path)

    def variables(self, parameters: Mapping[str, Any], **more: Any) -> dict[str, Any]:
        """Template variables: ``config``, ``parameters`` and whatever else is given."""
        found = {"config": self.config, "parameters": parameters}
        found.update(more)
        return found

    def render(self, source: Any, parameters: Mapping[str, Any], result: str = "string", **more: Any) -> Any:
        """Evaluate a template field with ``config``, ``parameters`` and ``more``.

        Non-text values (numbers in the manifest) are returned as they are.
        """
        if not isinstance(source, str):
            return source
        return self.engine.evaluate(source, self.variables(parameters, **more), result)

    def place(self, path: tuple) -> str | None:
        return self.locate(path)


__all__ = ["BuildContext", "Builder", "RequestBudget", "builder_of", "builds"]
