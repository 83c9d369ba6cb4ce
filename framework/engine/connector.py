"""A manifest built for one config: the streams, the spec, the connection check.

:func:`open_connector` reads and checks the manifest (raising
:class:`~framework.errors.ManifestError` with every problem), checks the
config against the spec (:class:`~framework.errors.ConfigError`), and builds
the runtime streams with the injected transport, clock and sleep. Secret
config values (``airbyte_secret: true`` in the spec) are masked in every
message the connector produces.

Custom components' code shipped with the manifest (a ``components.py`` beside
it, a ``source_<name>/`` package folder) runs only when ``allow_custom_code``
is true, or, when it is None, as the environment says
(:func:`~framework.components.custom.loader.custom_code_allowed`); the files
loaded are kept (:attr:`Connector.shipped_files`) for Spark executors.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from framework.components.custom.loader import CodeLoader, custom_code_allowed
from framework.components.query_properties import with_catalog
from framework.components.registry import BuildContext
from framework.components.stream import Stream
from framework.errors import ConfigError, FrameworkError, ManifestError
from framework.interpolation import TemplateEngine
from framework.manifest.config_check import (
    ConfigFile,
    check_config,
    check_config_value,
    read_config_file,
    secret_values,
)
from framework.masking import Masker
from framework.models import DeclarativeSource
from framework.temporal.clock import Clock, SystemClock


@dataclass(frozen=True)
class Connector:
    source: DeclarativeSource
    config: Mapping[str, Any]
    context: BuildContext
    streams: Mapping[str, Stream] = field(default_factory=dict)
    #: each stream's state migrations (``state_migrations``), applied to its saved state before a sync
    state_migrations: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    #: the resolved manifest as a mapping (what airbyte-cdk reads a stream from, see :mod:`.bridge`)
    manifest: Mapping[str, Any] = field(default_factory=dict)
    #: what this process built to read units of streams airbyte-cdk reads (one per stream and start state)
    readers: dict[tuple[str, bytes], Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def shipped_files(self) -> dict[str, str]:
        """The custom code files shipped with the manifest that the connector loaded (relative path -> text)."""
        return self.context.code.shipped_files()

    @property
    def custom_code_allowed(self) -> bool:
        return self.context.code.allowed

    def with_catalog(self, catalog: Mapping[str, Any] | None) -> Connector:
        """This connector asking each stream's API for what the configured ``catalog`` selects (a
        JsonSchemaPropertySelector narrows its query properties to the catalog's schema)."""
        if catalog is None:
            return self
        return dataclasses.replace(self, streams=with_catalog(self.streams, catalog))

    def migrate_state(self, stream: str, state: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """``state`` after the stream's state migrations (each applied when it says it should)."""
        for migration in self.state_migrations.get(stream, ()):
            if state is not None:
                state = migration.apply(state)
        return state

    @property
    def spec(self) -> dict[str, Any] | None:
        return airbyte_spec(self.source)

    @property
    def check_streams(self) -> tuple[str, ...]:
        return tuple(self.source.check.stream_names)

    def stream(self, name: str) -> Stream:
        try:
            return self.streams[name]
        except KeyError:
            known = ", ".join(self.streams) or "none"
            raise ConfigError(f"the manifest has no stream `{name}`; its streams are: {known}") from None

    def mask(self, text: str) -> str:
        return self.context.mask(text)

    def concurrency(self, requested: int | None = None) -> int:
        """Partitions read at once: ``requested`` (a flag), else the manifest's level, else 1."""
        if requested:
            return max(1, requested)
        level = self.source.concurrency_level
        if level is None:
            return 1
        value = self.context.render(level.default_concurrency, level.parameters, "integer")
        if level.max_concurrency:
            value = min(value, level.max_concurrency)
        return max(1, int(value))


def airbyte_spec(source: DeclarativeSource) -> dict[str, Any] | None:
    """The manifest's spec as Airbyte's SPEC message carries it (None when the manifest has none)."""
    spec = source.spec_
    if spec is None:
        return None
    out: dict[str, Any] = {"connectionSpecification": dict(spec.connection_specification)}
    if spec.documentation_url:
        out["documentationUrl"] = spec.documentation_url
    if spec.advanced_auth:
        out["advanced_auth"] = dict(spec.advanced_auth)
    return out


def read_config(path: str) -> dict[str, Any]:
    """The config file as a mapping; ConfigError naming the file when it is not a JSON object."""
    return read_config_file(path).data


def open_connector(manifest_path: str, config: Mapping[str, Any], *, config_path: str | ConfigFile | None = None,
                   transport: Any = None, clock: Clock | None = None,
                   sleep: Callable[[float], None] = time.sleep, allow_custom_code: bool | None = None) -> Connector:
    """Load ``manifest_path`` and build its streams for ``config``."""
    from framework.manifest import check_manifest

    checked = check_manifest(manifest_path)
    return _build(checked, config, os.path.dirname(os.path.abspath(manifest_path)), config_path=config_path,
                  transport=transport, clock=clock, sleep=sleep, allow_custom_code=allow_custom_code)


def open_connector_text(text: str, config: Mapping[str, Any], *, file: str = "<manifest>",
                        base_dir: str | None = None, schemas: Mapping[str, Mapping[str, Any]] | None = None,
                        transport: Any = None, clock: Clock | None = None,
                        sleep: Callable[[float], None] = time.sleep,
                        allow_custom_code: bool | None = None) -> Connector:
    """Like :func:`open_connector` for manifest text in memory (what a Spark executor gets).

    ``schemas`` are stream schemas already loaded (by the driver), used instead of reading
    schema files, which an executor on another machine may not have.
    """
    from framework.manifest import check_manifest_text

    checked = check_manifest_text(text, file, base_dir)
    return _build(checked, config, base_dir, transport=transport, clock=clock, sleep=sleep,
                  schemas=schemas or {}, allow_custom_code=allow_custom_code)


def _build(checked: Any, config: Mapping[str, Any], base_dir: str | None, *,
           config_path: str | ConfigFile | None = None, transport: Any = None, clock: Clock | None = None,
           sleep: Callable[[float], None] = time.sleep,
           schemas: Mapping[str, Mapping[str, Any]] | None = None,
           allow_custom_code: bool | None = None) -> Connector:
    if not checked.ok or checked.source is None:
        raise ManifestError(checked.diagnostics)
    source = checked.source
    spec = source.spec_.connection_specification if source.spec_ is not None else None
    mask = Masker.of(secret_values(spec, config)) if spec else Masker()
    if spec and config_path is not None:
        problems = [d for d in check_config(spec, config_path) if d.severity == "error"]
        if problems:
            raise ConfigError("\n".join(d.format() for d in problems))
    elif spec:
        check_config_value(spec, config, mask)
    clock = clock or SystemClock()
    context = BuildContext(
        config=config,
        engine=TemplateEngine(clock),
        transport=transport,
        clock=clock,
        sleep=sleep,
        base_dir=base_dir,
        locate=checked.locate,
        mask=mask,
        schemas=schemas or {},
        code=CodeLoader(base_dir, custom_code_allowed(allow_custom_code)),
    )
    streams = {}
    migrations = {}
    try:
        for index, model in enumerate(source.streams):
            streams[model.name] = context.build(model, ("streams", index))
            found = getattr(model, "state_migrations", None)
            if found:
                migrations[model.name] = tuple(context.build(m, ("streams", index, "state_migrations", i))
                                               for i, m in enumerate(found))
    except FrameworkError as exc:  # a template rendered a secret into a value that is wrong where it went
        masked = mask(str(exc))
        if masked != str(exc):
            raise ConfigError(masked) from None
        raise
    return Connector(source, config, context, streams, migrations, checked.data if isinstance(checked.data, Mapping)
                     else {})


__all__ = ["Connector", "airbyte_spec", "open_connector", "open_connector_text", "read_config"]
