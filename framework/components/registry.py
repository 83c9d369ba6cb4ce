"""Building runtime components from manifest models: a registry keyed by ``type``.

Each runtime module registers a builder next to the component it builds::

    @builds("BearerAuthenticator")
    def _bearer(model: BearerAuthenticator, ctx: BuildContext, path: tuple) -> BearerAuth:
        return BearerAuth(ctx.render(model.api_token, model.parameters), ...)

and ``ctx.build(model, path)`` finds the builder by the model's ``type``.
Everything a component needs from outside (config, clock, transport, sleep,
the template engine, the manifest's folder) comes through the
:class:`BuildContext`; nothing reads a global. ``path`` is where the
component sits in the resolved manifest (``("streams", 0, "retriever")``),
so errors can point at the manifest place with :meth:`BuildContext.place`.
"""

from __future__ import annotations

import copy
import importlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from framework import coordination
from framework.components.custom.loader import CodeLoader, custom_code_allowed
from framework.components.http.circuit import HostCircuits
from framework.components.http.transport import RequestsTransport, Transport
from framework.interpolation import TemplateEngine
from framework.models import Component
from framework.temporal.clock import Clock, SystemClock

if TYPE_CHECKING:  # pragma: no cover
    from framework.engine.config_sink import ConfigSink

Builder = Callable[[Any, "BuildContext", tuple], Any]

_BUILDERS: dict[str, Builder] = {}

# The modules that register builders; imported on first use so that importing the
# registry (or validate-manifest) stays cheap.
_MODULES = (
    "framework.components.http.auth.base",
    "framework.components.http.auth.static",
    "framework.components.http.auth.oauth",
    "framework.components.http.auth.jwt",
    "framework.components.http.auth.session_token",
    "framework.components.http.auth.selective",
    "framework.components.http.error_handler",
    "framework.components.pagination",
    "framework.components.records",
    "framework.components.records.transformations",  # AddFields and RemoveFields: on demand (issue 21)
    "framework.components.records.reshaping",  # its types and RecordExpander's load on demand (issue 21)
    "framework.components.records.expansion",
    "framework.components.records.dynamic_schema",
    "framework.components.records.file_extraction",
    "framework.components.records.file_upload",
    "framework.components.records.decoders",
    "framework.components.incremental",
    "framework.components.partitions",
    "framework.components.http.requester",
    "framework.components.retriever",
    "framework.components.query_properties",
    "framework.components.stream",
    "framework.components.custom.builders",
    "framework.components.config_rules",  # config migrations, transformations and validations (issue 16)
    "framework.components.delegating",  # StateDelegatingStream (issue 16)
    "framework.components.stream_groups",  # stream groups (issue 16)
    "framework.components.async_jobs",  # AsyncRetriever (issue 17)
    "framework.components.http.budget",  # API budgets (issue 17)
)
_loaded = False

# Builders whose modules load only when a manifest uses one of their types: a plain HTTP stream needs none of
# them, and each costs start-up time (each auth family's frozen dataclasses and budget's eight are made on import).
# A module of ``_MODULES`` not named here loads with the others on the first build.
# tests/components/test_registry.py checks this against what the modules register.
_ON_DEMAND: dict[str, str] = {
    "NoAuth": "framework.components.http.auth.base",
    **dict.fromkeys(("ApiKeyAuthenticator", "BasicHttpAuthenticator", "BearerAuthenticator"),
                    "framework.components.http.auth.static"),
    "OAuthAuthenticator": "framework.components.http.auth.oauth",
    "JwtAuthenticator": "framework.components.http.auth.jwt",
    **dict.fromkeys(("LegacySessionTokenAuthenticator", "SessionTokenAuthenticator"),
                    "framework.components.http.auth.session_token"),
    "SelectiveAuthenticator": "framework.components.http.auth.selective",
    "HTTPAPIBudget": "framework.components.http.budget",
    "DynamicSchemaLoader": "framework.components.records.dynamic_schema",
    "ResponseToFileExtractor": "framework.components.records.file_extraction",
    "FileUploader": "framework.components.records.file_upload",
    "AsyncRetriever": "framework.components.async_jobs",
    "RecordExpander": "framework.components.records.expansion",
    **dict.fromkeys(("AddFields", "RemoveFields"), "framework.components.records.transformations"),
    # the response formats other than JSON (a top-level JsonDecoder is read by the extractor itself)
    **dict.fromkeys(("CsvDecoder", "GzipDecoder", "IterableDecoder", "JsonDecoder", "JsonItemsDecoder",
                     "JsonlDecoder", "XmlDecoder", "ZipfileDecoder"), "framework.components.records.decoders"),
    **dict.fromkeys(("DpathFlattenFields", "FlattenFields", "KeysReplace", "KeysToLower", "KeysToSnakeCase"),
                    "framework.components.records.reshaping"),
    **dict.fromkeys(("ConfigAddFields", "ConfigMigration", "ConfigRemapField", "ConfigRemoveFields",
                     "CustomConfigTransformation", "CustomValidationStrategy", "DpathValidator",
                     "PredicateValidator", "ValidateAdheresToSchema"), "framework.components.config_rules"),
    **dict.fromkeys(("CustomAuthenticator", "CustomBackoffStrategy", "CustomDecoder", "CustomErrorHandler",
                     "CustomIncrementalSync", "CustomPaginationStrategy", "CustomPartitionRouter",
                     "CustomRecordExtractor", "CustomRecordFilter", "CustomRequester", "CustomRetriever",
                     "CustomSchemaLoader", "CustomSchemaNormalization", "CustomStateMigration",
                     "CustomTransformation"), "framework.components.custom.builders"),
}


def builds(*type_names: str) -> Callable[[Builder], Builder]:
    """Register the decorated function as the builder of components of these types."""

    def register(func: Builder) -> Builder:
        for name in type_names:
            if name in _BUILDERS and _BUILDERS[name] is not func:
                raise RuntimeError(f"two builders for component type {name!r}")
            _BUILDERS[name] = func
        return func

    return register


def _load() -> None:
    global _loaded
    if not _loaded:
        on_demand = set(_ON_DEMAND.values())
        for module in _MODULES:
            if module not in on_demand:
                importlib.import_module(module)
        _loaded = True


def builder_of(kind: str) -> Builder | None:
    """The builder registered for the component type ``kind``, its module imported first if need be."""
    builder = _BUILDERS.get(kind)
    if builder is None:
        _load()
        module = _ON_DEMAND.get(kind)
        if module is not None:
            importlib.import_module(module)
        builder = _BUILDERS.get(kind)
    return builder


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
    budget: Any  # the source's API budget (framework.components.http.budget.ApiBudget), None without one

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
                  "budget": None}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def within_stream(self, name: str) -> BuildContext:
        """This context for the components of the stream ``name`` (Airbyte hands a stream's name to some)."""
        if self.stream == name:
            return self
        found = copy.copy(self)
        object.__setattr__(found, "stream", name)
        return found

    def with_budget(self, budget: Any) -> BuildContext:
        """This context with the source's API budget, which every HttpRequester built on it sends through."""
        found = copy.copy(self)
        object.__setattr__(found, "budget", budget)
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
        """The runtime component of ``model`` (found by its ``type``)."""
        kind = getattr(model, "type", None)
        builder = builder_of(kind) if isinstance(kind, str) else None
        if builder is None:
            raise NotImplementedError(f"no builder for component type {kind!r} at {'.'.join(map(str, path))}")
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


__all__ = ["BuildContext", "builds"]
