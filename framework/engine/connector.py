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

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from framework.components.config_sink import ConfigSink
from framework.components.context import BuildContext
from framework.components.custom.loader import CodeLoader, custom_code_allowed
from framework.components.delegating import Delegation, listed_streams
from framework.components.dynamic import Templates, resolve_templates
from framework.components.http.in_flight import InFlight, Ledger, Limit, Pace, build_in_flight
from framework.components.http.response_cache import ResponseCache
from framework.components.job_slots import offer_job_slots
from framework.components.partitions import parent_stream_names
from framework.components.stream import Stream
from framework.components.stream_groups import StreamGroups, build_stream_groups
from framework.engine.config_fit import surely_fits
from framework.errors import ConfigError, FrameworkError, ManifestError
from framework.interpolation import TemplateEngine
from framework.manifest import check_manifest, check_manifest_text
from framework.manifest.config_check import (
    ConfigFile,
    check_config,
    check_config_value,
    read_config_file,
    secret_names,
    secret_values,
)
from framework.masking import Masker
from framework.models import CheckDynamicStream, DeclarativeSource
from framework.temporal.clock import Clock, SystemClock
from framework.values import replace

if TYPE_CHECKING:  # pragma: no cover
    from framework.engine.config_migration import NormalizedConfig  # loaded only for a spec with config rules


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
    #: the StateDelegatingStreams' two definitions, by stream name (``streams`` holds the incremental one)
    delegations: Mapping[str, Delegation] = field(default_factory=dict)
    #: the config as given, migrated and transformed by the spec's ``config_normalization_rules``
    #: (None without rules: ``config`` is the config as given)
    normalized: NormalizedConfig | None = None
    #: the source's ``stream_groups``: :meth:`StreamGroups.reading` keeps two streams of a group from being read at once
    groups: StreamGroups = field(default_factory=StreamGroups, compare=False, repr=False)
    #: the stream templates ``dynamic_streams`` made for the config (read once, on the driver; shipped to workers)
    templates: Templates = ()
    #: the sync's requests in flight (a sync-wide service: on the Spark driver, every task's requests count)
    ledger: Ledger | None = field(default=None, compare=False, repr=False)

    @property
    def given_config(self) -> Mapping[str, Any]:
        """The config as it was given (what a worker rebuilds the connector from: it normalizes it again)."""
        return self.normalized.given if self.normalized is not None else self.config

    def stream_for_start(self, stream: Stream, start_state: Mapping[str, Any] | None) -> Stream:
        """The definition a unit of ``stream`` is read with, for a sync that started from ``start_state``
        (a StateDelegatingStream's ``start_state``, see :class:`framework.engine.sync.DelegatedSync`)."""
        found = self.delegations.get(stream.name)
        return found.for_start(start_state) if found is not None and stream.bridge is None else stream

    @property
    def shipped_files(self) -> dict[str, str]:
        """The custom code files shipped with the manifest that the connector loaded (relative path -> text)."""
        return self.context.code.shipped_files()

    @property
    def custom_code_allowed(self) -> bool:
        return self.context.code.allowed

    @property
    def runs_own_code(self) -> bool:
        """Whether the manifest's custom components loaded Python code of their own into this process."""
        return self.context.code.loaded_any

    def with_catalog(self, catalog: Mapping[str, Any] | None) -> Connector:
        """This connector asking each stream's API for what the configured ``catalog`` selects (a
        JsonSchemaPropertySelector narrows its query properties to the catalog's schema)."""
        if catalog is None:
            return self
        from framework.components.query_properties import with_catalog  # loaded by the first catalog only

        return replace(self, streams=with_catalog(self.streams, catalog))

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
        """The streams the connection check reads from: a CheckStream's names, then the first streams of each
        DynamicDeclarativeStream its ``dynamic_streams_check_configs`` names; a CheckDynamicStream's first
        ``stream_count`` streams (none without ``use_check_availability``)."""
        check = self.source.check
        if isinstance(check, CheckDynamicStream):
            return tuple(self.streams)[:max(0, check.stream_count)] if check.use_check_availability else ()
        names = list(check.stream_names)
        made = {(d.name or f"dynamic_stream_{i}"): [str(t.get("name")) for t in templates]
                for i, (d, templates) in enumerate(zip(self.source.dynamic_streams, self.templates))}
        for wanted in check.dynamic_streams_check_configs:
            if wanted.dynamic_stream_name not in made:
                known = ", ".join(made) or "none"
                raise ConfigError(f"the check names dynamic stream `{wanted.dynamic_stream_name}`, which the manifest "
                                  f"does not have; its dynamic streams are: {known}")
            streams = made[wanted.dynamic_stream_name]
            names.extend(streams if wanted.stream_count is None else streams[:wanted.stream_count])
        return tuple(names)

    def stream(self, name: str) -> Stream:
        try:
            return self.streams[name]
        except KeyError:
            known = ", ".join(self.streams) or "none"
            raise ConfigError(f"the manifest has no stream `{name}`; its streams are: {known}") from None

    def mask(self, text: str) -> str:
        return self.context.mask(text)

    def in_flight_limit(self, requested: int | str | None = None) -> Limit:
        """How many requests the sync keeps in flight: ``requested`` (``--concurrency``: a number or ``auto``),
        else the manifest's ``concurrency_level``, else airbyte-cdk's default
        (:mod:`framework.components.http.in_flight`)."""
        if requested == "auto":
            return Limit.auto()
        if requested:
            return Limit.fixed(int(requested), "flag")
        level = self.source.concurrency_level
        if level is None:
            return Limit.default()
        value = self.context.render(level.default_concurrency, level.parameters, "integer")
        if level.max_concurrency:
            value = min(value, level.max_concurrency)
        return Limit.fixed(int(value), "manifest")

    def limit_in_flight(self, limit: Limit) -> None:
        """Keep at most ``limit`` requests in flight from now on (the front end's choice, before the sync)."""
        if self.ledger is not None:
            self.ledger.set_limit(limit)

    def settle_requests(self) -> None:
        """Give the permits this process holds back to the sync's ledger (a group's end: see
        :meth:`framework.components.http.in_flight.InFlight.settle`)."""
        pool = self.context.in_flight
        if isinstance(pool, InFlight):
            pool.settle()

    def pace(self) -> Pace | None:
        """What the sync's requests in flight were: the most at once, the 429s and the level they left."""
        return self.ledger.pace() if self.ledger is not None else None

    def concurrency(self, requested: int | str | None = None) -> int:
        """Units read at once: the most requests the sync may keep in flight (:meth:`in_flight_limit`)."""
        return self.in_flight_limit(requested).ceiling


def airbyte_spec(source: DeclarativeSource) -> dict[str, Any] | None:
    """The manifest's spec as Airbyte's SPEC message carries it (None when the manifest has none)."""
    spec = source.spec_
    if spec is None:
        return None
    out: dict[str, Any] = {"connectionSpecification": dict(spec.connection_specification)}
    if spec.documentation_url:
        out["documentationUrl"] = spec.documentation_url
    if spec.advanced_auth is not None:
        out["advanced_auth"] = spec.advanced_auth.as_message()
    return out


def read_config(path: str) -> dict[str, Any]:
    """The config file as a mapping; ConfigError naming the file when it is not a JSON object."""
    return read_config_file(path).data


def open_connector(manifest_path: str, config: Mapping[str, Any], *, config_path: str | ConfigFile | None = None,
                   transport: Any = None, clock: Clock | None = None,
                   sleep: Callable[[float], None] = time.sleep, allow_custom_code: bool | None = None,
                   on_config: Callable[[NormalizedConfig], None] | None = None,
                   config_sink: ConfigSink | None = None) -> Connector:
    """Load ``manifest_path`` and build its streams for ``config``.

    ``config_sink`` is where the components save a config they change during the run (rotated OAuth
    refresh tokens; :mod:`framework.engine.config_sink`); None: such changes are not saved.

    ``on_config`` is called with the config's normalization (the spec's ``config_normalization_rules``) as soon
    as it is known: before the config is checked against the spec and the rules' validations, as airbyte-cdk
    announces a migrated config before it checks it.
    """
    checked = check_manifest(manifest_path)
    return _build(checked, config, os.path.dirname(os.path.abspath(manifest_path)), config_path=config_path,
                  transport=transport, clock=clock, sleep=sleep, allow_custom_code=allow_custom_code,
                  on_config=on_config, config_sink=config_sink)


def open_connector_text(text: str, config: Mapping[str, Any], *, file: str = "<manifest>",
                        base_dir: str | None = None, schemas: Mapping[str, Mapping[str, Any]] | None = None,
                        transport: Any = None, clock: Clock | None = None,
                        sleep: Callable[[float], None] = time.sleep,
                        allow_custom_code: bool | None = None, templates: Templates | None = None,
                        keep_responses: bool = True) -> Connector:
    """Like :func:`open_connector` for manifest text in memory (what a Spark executor gets).

    ``schemas`` are stream schemas already loaded (by the driver), used instead of reading
    schema files, which an executor on another machine may not have; ``templates`` are the
    streams ``dynamic_streams`` made on the driver (None: resolved here, reading their endpoints).
    ``keep_responses`` False: no response cache (a Spark task reads units, never a substream's parents,
    so it would only hold pages it never reads again).
    """
    checked = check_manifest_text(text, file, base_dir)
    return _build(checked, config, base_dir, transport=transport, clock=clock, sleep=sleep,
                  schemas=schemas or {}, allow_custom_code=allow_custom_code, templates=templates,
                  keep_responses=keep_responses)


def _build(checked: Any, config: Mapping[str, Any], base_dir: str | None, *,
           config_path: str | ConfigFile | None = None, transport: Any = None, clock: Clock | None = None,
           sleep: Callable[[float], None] = time.sleep,
           schemas: Mapping[str, Mapping[str, Any]] | None = None,
           allow_custom_code: bool | None = None,
           on_config: Callable[[NormalizedConfig], None] | None = None,
           templates: Templates | None = None, config_sink: ConfigSink | None = None,
           keep_responses: bool = True) -> Connector:
    if not checked.ok or checked.source is None:
        raise ManifestError(checked.diagnostics)
    source = checked.source
    clock = clock or SystemClock()
    code = CodeLoader(base_dir, custom_code_allowed(allow_custom_code))
    config, normalized, mask = prepare_config(checked, config, config_path, clock=clock, code=code,
                                              on_config=on_config)
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
        code=code,
        config_sink=config_sink,
    )
    if source.api_budget is not None:  # every HttpRequester sends through it
        context = context.with_budget(context.build(source.api_budget, ("api_budget",)))
    # every HttpRequester's requests hold a permit of the sync's ledger; the front end may set another limit
    in_flight, ledger = build_in_flight(context.service, Limit.default())
    context = context.with_in_flight(in_flight)
    streams: dict[str, Stream] = {}
    migrations = {}
    delegations = {}
    try:
        offer_job_slots(context, source, checked.data)  # asynchronous jobs: the sync-wide job slots
        if templates is None:
            templates = resolve_templates(source, checked.data, context)
        listed = list(listed_streams(source, context, checked, templates))
        # the streams used as parents send through the sync's response cache, as airbyte-cdk's do
        if keep_responses:
            context = context.with_response_cache(ResponseCache(), parent_stream_names(model for _, model in listed))
        for path, model in listed:
            built = context.build(model, path)
            if isinstance(built, Delegation):
                delegations[model.name] = built
                built = built.incremental
            streams[model.name] = built
            # a StateDelegatingStream's saved state is read by its incremental definition: its migrations apply
            owner, where = (model.incremental_stream, path + ("incremental_stream",)) \
                if model.type == "StateDelegatingStream" else (model, path)
            if owner.state_migrations:  # their module loads only for a stream that has some
                from framework.components.state_migrations import build_state_migrations

                migrations[model.name] = build_state_migrations(owner, context.within_stream(model.name), where)
    except FrameworkError as exc:  # a template rendered a secret into a value that is wrong where it went
        masked = mask(str(exc))
        if masked != str(exc):
            raise ConfigError(masked) from None
        raise
    manifest = dict(checked.data) if isinstance(checked.data, Mapping) else {}
    if "dynamic_streams" in manifest:  # airbyte-cdk (the bridge) gets the made streams: it must not read the API
        manifest["streams"] = [*manifest.get("streams", ()), *(made for group in templates for made in group)]
        del manifest["dynamic_streams"]
    if normalized is not None and isinstance(manifest.get("spec"), Mapping):
        # airbyte-cdk (the bridge) gets the normalized config: it must not normalize it again
        manifest["spec"] = {k: v for k, v in manifest["spec"].items() if k != "config_normalization_rules"}
    groups = build_stream_groups(source.stream_groups, streams, context)
    connector = Connector(source, config, context, streams, migrations, manifest, delegations=delegations,
                          normalized=normalized, groups=groups, templates=templates, ledger=ledger)
    ledger.set_limit(connector.in_flight_limit())  # the manifest's concurrency_level, until the front end says
    return connector


def prepare_config(checked: Any, config: Mapping[str, Any], config_path: str | ConfigFile | None, *, clock: Clock,
                   code: CodeLoader, on_config: Callable[[NormalizedConfig], None] | None = None,
                   ) -> tuple[Mapping[str, Any], NormalizedConfig | None, Masker]:
    """The config the streams read, its normalization (None without rules) and the masker of its secrets.

    As airbyte-cdk: the spec's config rules first (migrations, transformations), then the check against
    the spec (of the file, with its lines, when no rule changed the config), then the rules' validations.
    """
    source = checked.source
    spec = source.spec_.connection_specification if source.spec_ is not None else None
    mask = Masker.of(secret_values(spec, config), secret_names(spec, config)) if spec else Masker()
    normalized = None
    if has_rules(source):
        from framework.engine.config_migration import normalize_config

        rules_ctx = BuildContext(config=config, engine=TemplateEngine(clock), clock=clock, base_dir=code.manifest_dir,
                                 locate=checked.locate, mask=mask, code=code)
        normalized = normalize_config(source, config, rules_ctx)
        config = normalized.config
        if on_config is not None:
            on_config(normalized)
        if spec:
            mask = Masker.of(secret_values(spec, normalized.given) | secret_values(spec, config),
                             secret_names(spec, normalized.given) | secret_names(spec, config))
    # jsonschema (about 0.1 s to import) is asked only when the quick check cannot vouch for the config
    if spec and config_path is not None and (normalized is None or not normalized.changed):
        given = config_path if isinstance(config_path, ConfigFile) else None
        if given is None or given.doc.problems or not surely_fits(spec, given.data):
            problems = [d for d in check_config(spec, config_path) if d.severity == "error"]
            if problems:
                raise ConfigError("\n".join(d.format() for d in problems))
    elif spec and not surely_fits(spec, config, formats=False):
        check_config_value(spec, config, mask)
    if normalized is not None:
        from framework.engine.config_migration import validate_config

        rules_ctx = BuildContext(config=config, engine=TemplateEngine(clock), clock=clock, base_dir=code.manifest_dir,
                                 locate=checked.locate, mask=mask, code=code)
        validate_config(source, config, rules_ctx)
    return config, normalized, mask


def has_rules(source: DeclarativeSource) -> bool:
    """Whether the spec has config normalization rules (migrations, transformations or validations); only
    then their module (:mod:`framework.engine.config_migration`) is loaded."""
    rules = source.spec_.config_normalization_rules if source.spec_ is not None else None
    return rules is not None and bool(rules.config_migrations or rules.transformations or rules.validations)


__all__ = ["Connector", "airbyte_spec", "has_rules", "open_connector", "open_connector_text", "prepare_config",
           "read_config"]
