"""What a schema cannot check: templates, durations, datetime formats, stream graph, schema files,
and custom components' Python source (:mod:`framework.manifest.custom_checks`).

Each check reads the :class:`~framework.manifest.components.Site` list of the
prepared manifest, so it sees every component once, wherever it came from.
"""

from __future__ import annotations

import difflib
import graphlib
import json
import os
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from framework.diagnostics import Diagnostic
from framework.interpolation import DEPRECATED_VARIABLES, VARIABLES, TemplateEngine, analyze_template
from framework.manifest.async_checks import async_checks
from framework.manifest.auth_checks import auth_checks
from framework.manifest.budget_checks import budget_checks
from framework.manifest.components import Placement, Site, field_aliases
from framework.manifest.config_dates import config_date_checks
from framework.manifest.decoder_checks import decoder_checks
from framework.manifest.dynamic_checks import dynamic_checks, in_template
from framework.manifest.migration_checks import listed_stream_group, migration_checks
from framework.manifest.query_properties_checks import query_properties_checks
from framework.manifest.spec_shape import plainly_valid
from framework.manifest.stream_group_checks import stream_group_checks
from framework.manifest.url_checks import url_base_checks
from framework.models import (
    REGISTRY,
    CustomComponent,
    DeclarativeSource,
    DeclarativeStream,
    InlineSchemaLoader,
    JsonFileSchemaLoader,
    ParentStreamConfig,
    RequestBodyGraphQL,
    Spec,
    format_of,
    template_of,
)
from framework.output_names import folder_problems, stream_folder
from framework.temporal.datetime_formats import format_problems
from framework.temporal.durations import duration_problem

if TYPE_CHECKING:
    from framework.manifest.config_check import ConfigFile


@dataclass(frozen=True)
class KnownConfig:
    """The config keys a template may read: those the spec declares (None: no spec lists them) and, with a
    config given (``validate-manifest --config``), those the config has, in the file ``config_file``."""

    declared: frozenset[str] | None
    present: frozenset[str] | None = None
    config_file: str = ""


def run_checks(sites: list[Site], data: Any, place: Placement, manifest_dir: str | None,
               config: ConfigFile | None = None) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    known = KnownConfig(_declared_config_keys(data), frozenset(config.data) if config is not None else None,
                        config.path if config is not None else "")
    partitions = _partition_keys(data)
    for site in sites:
        found.extend(_field_checks(site, place, known, _partitions_at(site.path, partitions)))
        if site.model is RequestBodyGraphQL:
            found.extend(_graphql_checks(site, place))
    found.extend(_stream_checks(sites, data, place, manifest_dir))
    found.extend(query_properties_checks(sites, place))
    found.extend(decoder_checks(sites, place))
    found.extend(async_checks(sites, place))  # asynchronous jobs (AsyncRetriever)
    found.extend(auth_checks(sites, place))
    found.extend(migration_checks(sites, place))
    found.extend(stream_group_checks(sites, data, place))
    found.extend(dynamic_checks(sites, place))
    found.extend(budget_checks(sites, place))  # the source's api_budget
    found.extend(url_base_checks(sites, place))  # an HTTP url_base
    if manifest_dir is not None and any(issubclass(site.model, CustomComponent) for site in sites):
        from framework.manifest.custom_checks import custom_checks  # reads Python source: only when needed

        found.extend(custom_checks(sites, place, manifest_dir))  # from the files beside the manifest
    if config is not None:  # the config's dates, in the formats of the cursors that read them
        found.extend(config_date_checks(sites, place, config, _secret_keys(data, config)))
    return found


def _strings(value: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        if isinstance(value.get("type"), str) and value["type"] in REGISTRY:
            return  # a component of its own: checked as its own site
        for key, item in value.items():
            if key == "$parameters":
                continue
            if isinstance(key, str) and "{" in key:
                yield path + (key,), key
            yield from _strings(item, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _strings(item, path + (index,))


def _declared_config_keys(data: Any) -> frozenset[str] | None:
    """The config keys the spec declares at its top level (and any key the config rules name), or None when
    the manifest has no spec listing its properties (then nothing is said about config keys)."""
    spec = data.get("spec") if isinstance(data, dict) else None
    connection = spec.get("connection_specification") if isinstance(spec, dict) else None
    properties = connection.get("properties") if isinstance(connection, dict) else None
    if not isinstance(properties, dict) or not properties:
        return None
    keys = {str(key) for key in properties}

    def words(node: Any) -> None:  # migrations and transformations may add keys: every string they name
        if isinstance(node, str):
            keys.add(node)
        elif isinstance(node, dict):
            for item in node.values():
                words(item)
        elif isinstance(node, list):
            for item in node:
                words(item)

    words(spec.get("config_normalization_rules") if isinstance(spec, dict) else None)
    return frozenset(keys)


#: keys every partition may have besides its router's fields
_PARTITION_ALWAYS = frozenset({"parent_slice", "extra_fields"})


def _router_keys(router: Any) -> frozenset[str] | None:
    """The partition keys a router gives (None when they cannot be known statically: a template, custom code)."""
    if router is None:
        return frozenset()
    if isinstance(router, list):
        keys: set[str] = set()
        for one in router:
            found = _router_keys(one)
            if found is None:
                return None
            keys |= found
        return frozenset(keys)
    if not isinstance(router, dict):
        return None
    kind = router.get("type")
    if kind == "ListPartitionRouter":
        names = [router.get("cursor_field")]
    elif kind == "SubstreamPartitionRouter":
        names = [c.get("partition_field") if isinstance(c, dict) else None
                 for c in router.get("parent_stream_configs") or [None]]
    elif kind == "GroupingPartitionRouter":
        return _router_keys(router.get("underlying_partition_router"))
    elif kind == "UnionPartitionRouter":
        return _router_keys(router.get("routers") or router.get("partition_routers"))
    else:
        return None
    if not names or any(not isinstance(name, str) or "{" in name for name in names):
        return None
    return frozenset(names)  # type: ignore[arg-type]


def _partition_keys(data: Any) -> dict[int, frozenset[str]]:
    """Per stream index, the partition keys its router gives, where they are known."""
    streams = data.get("streams") if isinstance(data, dict) else None
    found: dict[int, frozenset[str]] = {}
    for index, stream in enumerate(streams if isinstance(streams, list) else []):
        retriever = stream.get("retriever") if isinstance(stream, dict) else None
        if not isinstance(retriever, dict) or retriever.get("type", "SimpleRetriever") != "SimpleRetriever":
            continue
        keys = _router_keys(retriever.get("partition_router"))
        if keys is not None:
            found[index] = keys | _PARTITION_ALWAYS
    return found


def _secret_keys(data: Any, config: ConfigFile) -> frozenset[str]:
    """The config's top-level keys the spec marks secret (``airbyte_secret``): their values are never shown."""
    spec = data.get("spec") if isinstance(data, dict) else None
    connection = spec.get("connection_specification") if isinstance(spec, dict) else None
    properties = connection.get("properties") if isinstance(connection, dict) else None
    if not isinstance(properties, dict):
        return frozenset()
    return frozenset(str(key) for key, schema in properties.items()
                     if isinstance(schema, dict) and schema.get("airbyte_secret") is True)


def _partitions_at(path: tuple, partitions: dict[int, frozenset[str]]) -> frozenset[str] | None:
    """The partition keys templates at ``path`` may read, when the path is a stream's own (not a parent's)."""
    if len(path) < 2 or path[0] != "streams" or not isinstance(path[1], int) or "parent_stream_configs" in path:
        return None
    return partitions.get(path[1])


def _field_checks(site: Site, place: Placement, known: KnownConfig,
                  partition: frozenset[str] | None = None) -> Iterator[Diagnostic]:
    aliases = field_aliases(site.model)
    for alias, value in site.data.items():
        if alias not in aliases:
            continue
        info = site.model.model_fields[aliases[alias]]
        spec = template_of(info)
        fmt = format_of(info)
        if spec is not None:
            for path, text in _strings(value, site.path + (alias,)):
                yield from _template_checks(text, path, alias, spec.variables, place, known, partition)
        if fmt is not None:
            for path, text in _strings(value, site.path + (alias,)):
                if "{{" in text or "{%" in text:
                    continue
                yield from _format_checks(fmt, text, path, alias, place)


def _template_checks(text: str, path: tuple, alias: str, allowed: frozenset, place: Placement,
                     known: KnownConfig, partition: frozenset[str] | None = None) -> Iterator[Diagnostic]:
    info = analyze_template(text)
    if not info.is_template:
        return
    if partition is not None:
        for key in sorted(info.partition_keys - partition):
            given = sorted(partition - _PARTITION_ALWAYS)
            hint = _suggest(key, given)
            yield place.diagnostic(path, "partition-key-unknown",
                                   f"`{alias}` reads `stream_partition.{key}`, which the stream's partition router "
                                   f"does not give ({'it gives ' + ', '.join(given) if given else 'it has none'}): "
                                   "it renders empty", hint or "read a field the partition router names "
                                   "(`cursor_field`, a parent's `partition_field`)", severity="warning")
    yield from _config_key_checks(info, path, alias, place, known)
    if info.syntax_error is not None:
        problem = info.syntax_error
        where = f" (line {problem.line} of the template)" if problem.line and problem.line > 1 else ""
        yield place.diagnostic(path, "template-syntax", f"template syntax error in `{alias}`: {problem.message}{where}",
                               problem.fix or "fix the Jinja expression; values are written `{{ config['key'] }}`")
        return
    for problem in info.forbidden:
        yield place.diagnostic(path, "template-unsafe", f"template in `{alias}`: {problem.message}",
                               problem.fix or "use only the documented variables, macros and filters")
    for problem in info.unknown_filters:
        yield place.diagnostic(path, "template-filter", f"template in `{alias}`: {problem.message}", problem.fix)
    for problem in info.loops:
        yield place.diagnostic(path, problem.code, f"template in `{alias}`: {problem.message}", problem.fix,
                               severity="warning")
    for name in sorted(info.variables - allowed):
        if name in VARIABLES:
            available = ", ".join(sorted(allowed - set(DEPRECATED_VARIABLES)))
            yield place.diagnostic(path, "template-variable", f"`{name}` is not available in `{alias}`",
                                   f"variables available here: {available}")
        else:
            yield place.diagnostic(path, "template-variable", f"unknown variable `{name}` in `{alias}`",
                                   _suggest(name, sorted(allowed)) or
                                   f"variables available here: {', '.join(sorted(allowed))}")


def _config_key_checks(info: Any, path: tuple, alias: str, place: Placement,
                       known: KnownConfig) -> Iterator[Diagnostic]:
    """A config key the template reads that the spec does not declare: a warning (a config that fits the spec
    may lack it); with a config given that lacks it too, an error, unless the template reads it with a fallback."""
    declared, present = known.declared, known.present
    for key in sorted(info.config_keys - (declared or frozenset())):
        if present is not None and key not in present and key not in info.config_fallbacks:
            options = sorted((declared or frozenset()) | present)
            close = difflib.get_close_matches(key, options, n=1)
            where = "the config has it" if close and close[0] in present else "the spec declares it"
            yield place.diagnostic(path, "config-key-unknown",
                                   f"`{alias}` reads `config['{key}']`, which neither the config "
                                   f"({known.config_file}) nor the spec's connection_specification has: it "
                                   "renders empty",
                                   f"did you mean `{close[0]}`? ({where})" if close else
                                   f"add `{key}` to the config, or read one of: {', '.join(options[:8])}")
        elif declared is not None:
            hint = _suggest(key, sorted(declared))
            yield place.diagnostic(path, "config-key-undeclared",
                                   f"`{alias}` reads `config['{key}']`, which the spec's connection_specification "
                                   "does not declare: a config that fits the spec may lack it, and then it "
                                   "renders empty",
                                   hint or f"declare `{key}` in spec.connection_specification.properties, or read "
                                   f"one of: {', '.join(sorted(declared)[:8])}", severity="warning")


def _suggest(name: str, options: Any) -> str | None:
    close = difflib.get_close_matches(name, list(options), n=1)
    return f"did you mean `{close[0]}`?" if close else None


def _format_checks(fmt: str, text: str, path: tuple, alias: str, place: Placement) -> Iterator[Diagnostic]:
    if fmt == "duration":
        problem = duration_problem(text)
        if problem:
            yield place.diagnostic(path, "bad-duration", f"`{alias}`: {problem}",
                                   "write an ISO 8601 duration such as `P1D`, `PT1H` or `P1M`")
    elif fmt == "strftime":
        for format_problem in format_problems(text):
            yield place.diagnostic(path, "bad-datetime-format", f"`{alias}`: {format_problem.message}",
                                   getattr(format_problem, "fix", None))


def _stream_checks(sites: list[Site], data: Any, place: Placement, manifest_dir: str | None) -> Iterator[Diagnostic]:
    is_source = any(site.model is DeclarativeSource and site.path == () for site in sites)  # (not a fragment)
    if is_source and isinstance(data, dict) and "streams" not in data and not data.get("dynamic_streams"):
        # `streams` may be left out only when `dynamic_streams` makes the streams (Airbyte's schema says the same)
        yield place.diagnostic((), "missing-field", "DeclarativeSource is missing required field `streams`",
                               "add `streams` (or `dynamic_streams`, whose streams are made from the API or the "
                               "config)")
    # the streams the source lists: at the top, or in a ConditionalStreams (group: its index; None at the top)
    streams = [(s, listed_stream_group(s)) for s in sites]
    names: dict[str, tuple] = {}
    groups: dict[str, set] = {}
    for site, group in streams:
        name = site.data.get("name") if group is not False else None
        if isinstance(name, str):
            seen = groups.get(name, set())
            # streams of two ConditionalStreams may share a name (their conditions may exclude each other)
            if seen and (group is None or None in seen or group in seen):
                yield place.diagnostic(site.path + ("name",), "duplicate-stream",
                                       f"duplicate stream name `{name}` (also {_at(place, names[name])})",
                                       "give every stream a unique name")
            else:
                names.setdefault(name, site.path + ("name",))
            groups.setdefault(name, set()).add(group)
    check = data.get("check") if isinstance(data, dict) else None
    if isinstance(check, dict) and isinstance(check.get("stream_names"), list):
        for index, name in enumerate(check["stream_names"]):
            if isinstance(name, str) and names and name not in names and not data.get("dynamic_streams"):
                # as in airbyte-cdk, only the connection check fails on it: discover and read work
                yield place.diagnostic(("check", "stream_names", index), "unknown-stream",
                                       f"check names stream `{name}`, which does not exist: `run-manifest --check` "
                                       "will fail on it (as Airbyte's check does); discover and read are not "
                                       "affected", _suggest(name, names) or f"streams are: {', '.join(names)}",
                                       severity="warning")
    # each stream's folder of the output: none is an internal one, inside another or another's in other case
    for name, (problem, fix) in folder_problems({n: stream_folder(n) for n in names}).items():
        yield place.diagnostic(names[name], "stream-folder-collides", problem, fix)
    yield from _parent_checks(sites, names, place)
    for site in sites:
        if site.model is DeclarativeStream and not in_template(site):  # a template's name comes from a mapping
            yield from _schema_checks(site, place, manifest_dir)
            yield from _count_cursor_checks(site, place)
        if site.model is Spec:
            yield from _spec_checks(site, place)


def _spec_checks(site: Site, place: Placement) -> Iterator[Diagnostic]:
    """The connection specification must be a JSON Schema. A `required` list naming a property twice
    breaks the meta-schema but not a config check, and Airbyte runs such a manifest: a warning."""
    spec = site.data.get("connection_specification")
    if not isinstance(spec, dict) or plainly_valid(spec):  # nearly every spec: no need to import jsonschema
        return
    import jsonschema  # only here: it finds and words what is wrong

    meta = jsonschema.Draft7Validator(jsonschema.Draft7Validator.META_SCHEMA)
    for error in sorted(meta.iter_errors(spec), key=lambda e: [str(p) for p in e.absolute_path]):
        at = site.path + ("connection_specification",) + tuple(error.absolute_path)
        if (error.validator == "uniqueItems" and error.absolute_path and error.absolute_path[-1] == "required"
                and all(isinstance(name, str) for name in error.instance)):
            twice = ", ".join(f"`{name}`" for name in sorted({n for n in error.instance
                                                              if error.instance.count(n) > 1}, key=str))
            yield place.diagnostic(at, "spec-required-twice",
                                   f"connection_specification's `required` names {twice} "
                                   "more than once", "list each required property once", severity="warning")
        else:
            yield place.diagnostic(at, "bad-spec", f"connection_specification is not a valid JSON Schema: "
                                   f"{error.message}")


def _count_cursor_checks(site: Site, place: Placement) -> Iterator[Diagnostic]:
    """An IncrementingCountCursor under a partition router runs here (one value per partition), but
    airbyte-cdk refuses the manifest: say so, as a warning."""
    cursor, retriever = site.data.get("incremental_sync"), site.data.get("retriever")
    if isinstance(cursor, dict) and cursor.get("type") == "IncrementingCountCursor" \
            and isinstance(retriever, dict) and retriever.get("partition_router"):
        yield place.diagnostic(site.path + ("incremental_sync", "type"), "not-portable",
                               "an IncrementingCountCursor under a partition router keeps one value per partition "
                               "here, but airbyte-cdk refuses this pairing",
                               "to run the manifest in Airbyte too, drop the partition router or use a "
                               "DatetimeBasedCursor", severity="warning")


def _at(place: Placement, path: tuple) -> str:
    return f"at line {place.where(path)[0]}"


def _owner_stream(sites: list[Site], path: tuple) -> Site | None:
    best = None
    for site in sites:
        if site.model is DeclarativeStream and path[: len(site.path)] == site.path and site.path != path:
            if best is None or len(site.path) > len(best.path):
                best = site
    return best


def _parent_checks(sites: list[Site], names: dict, place: Placement) -> Iterator[Diagnostic]:
    graph: dict[str, set] = {}
    where: dict[tuple, tuple] = {}
    for site in sites:
        if site.model is not ParentStreamConfig:
            continue
        child = _owner_stream(sites, site.path)
        parent = site.data.get("stream")
        if isinstance(parent, str):
            yield place.diagnostic(site.path + ("stream",), "unknown-parent",
                                   f"parent stream `{parent}` does not exist",
                                   "point at a stream definition: `stream: {$ref: '#/definitions/<name>'}`")
            continue
        if not (child and isinstance(parent, dict)):
            continue
        child_name, parent_name = child.data.get("name"), parent.get("name")
        if isinstance(child_name, str) and isinstance(parent_name, str):
            graph.setdefault(child_name, set()).add(parent_name)
            where.setdefault((child_name, parent_name), site.path + ("stream",))
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        path = where.get((cycle[0], cycle[1]), ())
        yield place.diagnostic(path, "parent-cycle",
                               f"parent streams form a cycle: {' -> '.join(cycle)}",
                               "a stream cannot be its own ancestor; remove one parent link")


def _schema_checks(site: Site, place: Placement, manifest_dir: str | None) -> Iterator[Diagnostic]:
    loader = site.data.get("schema_loader")
    schema: Any
    if isinstance(loader, list) and loader:
        # several loaders (Airbyte's CompositeSchemaLoader): each is checked; their properties are merged, an
        # earlier loader's winning; the keys are checked against them when none is read from the API or code
        merged: dict = {}
        known = True
        for index, item in enumerate(loader):
            found = yield from _loader_schema(site, item, ("schema_loader", index), place, manifest_dir)
            found = found.get("properties") if isinstance(found, dict) else None
            known = known and isinstance(found, dict)
            merged = {**found, **merged} if isinstance(found, dict) else merged
        schema = {"properties": merged} if known else None
    else:
        schema = yield from _loader_schema(site, loader or None, ("schema_loader",), place, manifest_dir)
    name = site.data.get("name")
    if not isinstance(schema, dict):
        return
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return
    cursor = site.data.get("incremental_sync")
    if isinstance(cursor, dict):
        field = cursor.get("cursor_field")
        if isinstance(field, str) and "{" not in field and field not in properties:
            yield place.diagnostic(site.path + ("incremental_sync", "cursor_field"), "cursor-not-in-schema",
                                   f"cursor field `{field}` is not in the schema of stream `{name}`",
                                   _suggest(field, properties) or "add it to the schema's properties",
                                   severity="warning")
    key = site.data.get("primary_key")
    paths = [] if not key else [[key]] if isinstance(key, str) else [
        [part] if isinstance(part, str) else part for part in key if isinstance(part, (str, list))]
    for key_path in paths:
        node: Any = properties
        for part in key_path:
            if not isinstance(node, dict) or part not in node:
                yield place.diagnostic(site.path + ("primary_key",), "key-not-in-schema",
                                       f"primary key `{'.'.join(key_path)}` is not in the schema of stream `{name}`",
                                       _suggest(part, node) if isinstance(node, dict) else None, severity="warning")
                break
            node = node[part].get("properties") if isinstance(node[part], dict) else None


def _loader_schema(site: Site, loader: Any, at_loader: tuple, place: Placement,
                   manifest_dir: str | None) -> Generator[Diagnostic, None, Any]:
    """The schema one loader of the stream at ``site`` gives, when the manifest alone tells it (an inline
    schema, a file beside the manifest; None otherwise), after the problems found on the way.
    ``loader`` None is the stream without one (the default file, optional)."""
    name = site.data.get("name")
    if isinstance(loader, dict) and loader.get("type") == InlineSchemaLoader.type_name():
        return loader.get("schema")
    if not (loader is None or isinstance(loader, dict) and loader.get("type") == JsonFileSchemaLoader.type_name()) \
            or manifest_dir is None or not isinstance(name, str):
        return None
    options = loader or {}
    file_path = options.get("file_path") or f"schemas/{name}.json"
    rendered = _render_static(file_path, options.get("$parameters", site.data.get("$parameters", {})))
    if rendered is None:
        return None
    candidates = [os.path.normpath(os.path.join(base, rendered))
                  for base in (manifest_dir, os.path.dirname(manifest_dir))]
    found = next((c for c in candidates if os.path.isfile(c)), None)
    if "file_path" in options:
        at = site.path + at_loader + ("file_path",)
    elif loader:
        at = site.path + at_loader
    else:
        at = site.path + ("name",)
    if found is None and not loader:  # as in Airbyte, the stream reads untyped
        yield place.diagnostic(at, "file-not-found", f"stream `{name}` has no `schema_loader` and its default "
                               f"schema file `{rendered}` does not exist: its records are read with an empty "
                               "schema, untyped", f"create {candidates[0]} or set `schema_loader`",
                               severity="warning")
        return None
    if found is None:
        yield place.diagnostic(at, "file-not-found", f"schema file `{rendered}` of stream `{name}` does not exist",
                               f"create {candidates[0]} or set `schema_loader`")
        return None
    try:
        with open(found, "rb") as handle:
            return json.loads(handle.read())
    except (OSError, ValueError) as exc:
        yield place.diagnostic(at, "bad-schema-file", f"schema file `{rendered}` is not valid JSON: {exc}",
                               "fix the JSON in the schema file")
        return None


def _render_static(text: str, parameters: Any) -> str | None:
    """Render a template that needs only ``parameters``; None when it needs more."""
    if "{{" not in text and "{%" not in text:
        return text
    info = analyze_template(text)
    if info.syntax_error is not None or info.variables - {"parameters"}:
        return None
    try:
        return TemplateEngine().render(text, {"parameters": parameters if isinstance(parameters, dict) else {}})
    except Exception:  # noqa: BLE001 - a template failing here is reported elsewhere
        return None


def _graphql_checks(site: Site, place: Placement) -> Iterator[Diagnostic]:
    """A GraphQL query without templates must parse (graphql-core, imported only here). A warning: Airbyte
    sends the query unchecked, and the API would refuse it on the first request."""
    value = site.data.get("value")
    query = value.get("query") if isinstance(value, dict) else None
    if not isinstance(query, str) or "{{" in query or "{%" in query or "{#" in query:
        return
    from graphql import GraphQLSyntaxError, parse

    try:
        parse(query, no_location=True)
    except GraphQLSyntaxError as exc:
        where = exc.locations[0] if exc.locations else None
        at = f" (line {where.line}, column {where.column} of the query)" if where is not None else ""
        yield place.diagnostic(site.path + ("value", "query"), "graphql-syntax",
                               f"the GraphQL query does not parse: {exc.message}{at}",
                               "fix the query; the API would refuse it", severity="warning")
