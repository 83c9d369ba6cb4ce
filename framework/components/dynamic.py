"""``dynamic_streams``: the streams a DynamicDeclarativeStream makes, for a config.

Resolving happens in two steps, so that a Spark executor never asks the API:

* :func:`resolve_templates` (on the driver, once per run) asks each
  definition's resolver for its ``components_values`` (an endpoint's records,
  config entries, values written in the manifest) and writes each mapping's
  rendered value into a copy of the stream template, as airbyte-cdk 7.39 does:
  ``field_path`` keys match the template's keys as globs (``*``), a value is
  written only where the template has the place unless ``create_or_update``
  (config and parametrized resolvers) creates it, text that reads as YAML
  becomes that value (not with the HTTP resolver), and a mapping's
  ``condition`` is rendered by the config resolver only. The result
  (:data:`Templates`) is JSON: it travels to executors as it is.
* :func:`template_streams` turns those templates into stream models (types
  and ``$parameters`` filled in as for a stream written in the manifest), each
  an ordinary stream of the connector placed at its definition's template.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import yaml
from msgspec import Struct
from pydantic import ValidationError

from framework.catalog import builds
from framework.components.context import BuildContext
from framework.components.partitions import ParentConfig, ParentPages, build_router
from framework.components.slices import StreamSlice
from framework.errors import ConfigError, ReadError, place_suffix
from framework.manifest.components import Preparation
from framework.models import (
    ConfigComponentsResolver,
    DeclarativeSource,
    DeclarativeStream,
    DynamicDeclarativeStream,
    HttpComponentsResolver,
    ParametrizedComponentsResolver,
    StateDelegatingStream,
)
from framework.models.dynamic import ComponentMappingDefinition

__all__ = ["ComponentsResolver", "ConfigResolver", "HttpResolver", "ParametrizedResolver", "Templates", "apply_mapping",
           "build_config_resolver", "build_http_resolver", "build_parametrized_resolver", "resolve_templates",
           "template_streams"]

#: Per DynamicDeclarativeStream of the manifest, in order: the stream templates its values made (JSON values).
Templates = tuple[tuple[dict[str, Any], ...], ...]

_GLOB = frozenset("*?[")


def resolve_templates(source: DeclarativeSource, data: Any, ctx: BuildContext) -> Templates:
    """The templates each definition makes for the context's config (reads the HTTP resolvers' endpoints).

    ``data`` is the prepared manifest mapping the source was built from (its templates as written).
    """
    if not source.dynamic_streams:
        return ()
    written = data.get("dynamic_streams") if isinstance(data, Mapping) else None
    found = []
    for index, definition in enumerate(source.dynamic_streams):
        path = ("dynamic_streams", index)
        template = written[index]["stream_template"] if isinstance(written, list) else {}
        found.append(tuple(_resolve(definition, template, ctx, path)))
    return tuple(found)


def _resolve(definition: DynamicDeclarativeStream, template: Mapping[str, Any], ctx: BuildContext,
             path: tuple) -> Iterator[dict[str, Any]]:
    model = definition.components_resolver
    where = path + ("components_resolver",)
    plain: dict[str, Any] = _plain(template)
    resolver: ComponentsResolver = ctx.build(model, where)
    for variables in resolver.values(definition.name):
        yield _mapped(plain, model.components_mapping, model.parameters, ctx, where, variables, kind=resolver.kind)


class ComponentsResolver(Protocol):
    """What a DynamicDeclarativeStream's ``components_resolver`` builds to: the variables of each stream it makes.

    ``kind`` says how its mappings' values are written (``http``, ``config`` or ``parametrized``:
    :func:`_mapped`); :meth:`values` gives, per stream, the variables its mappings render with
    (``components_values``, and an HTTP resolver's ``stream_slice``).
    """

    @property
    def kind(self) -> str: ...

    def values(self, name: str) -> Iterator[dict[str, Any]]: ...


class HttpResolver(Struct, frozen=True):
    """``HttpComponentsResolver``: a stream per record its retriever reads from the API."""

    model: HttpComponentsResolver
    ctx: BuildContext
    path: tuple
    kind = "http"

    def values(self, name: str) -> Iterator[dict[str, Any]]:
        for values, stream_slice in _endpoint_values(self.model, self.ctx, self.path, name):
            yield {"components_values": values, "stream_slice": stream_slice}


class ConfigResolver(Struct, frozen=True):
    """``ConfigComponentsResolver``: a stream per combination of the entries the config holds."""

    model: ConfigComponentsResolver
    ctx: BuildContext
    kind = "config"

    def values(self, name: str) -> Iterator[dict[str, Any]]:
        for values in _config_values(self.model, self.ctx):
            yield {"components_values": values}


class ParametrizedResolver(Struct, frozen=True):
    """``ParametrizedComponentsResolver``: a stream per set of parameters written in the manifest."""

    model: ParametrizedComponentsResolver
    kind = "parametrized"

    def values(self, name: str) -> Iterator[dict[str, Any]]:
        for values in self.model.stream_parameters.list_of_parameters_for_stream:
            yield {"components_values": _plain(values)}


@builds("HttpComponentsResolver")
def build_http_resolver(model: HttpComponentsResolver, ctx: BuildContext, path: tuple) -> HttpResolver:
    return HttpResolver(model, ctx, path)


@builds("ConfigComponentsResolver")
def build_config_resolver(model: ConfigComponentsResolver, ctx: BuildContext, path: tuple) -> ConfigResolver:
    return ConfigResolver(model, ctx)


@builds("ParametrizedComponentsResolver")
def build_parametrized_resolver(model: ParametrizedComponentsResolver, ctx: BuildContext,
                                path: tuple) -> ParametrizedResolver:
    return ParametrizedResolver(model)


def _no_parent(parent: ParentConfig) -> ParentPages:
    raise ConfigError("an HttpComponentsResolver's retriever cannot read parent streams; list its values with a "
                      "ListPartitionRouter instead")


def _endpoint_values(resolver: HttpComponentsResolver, ctx: BuildContext, where: tuple,
                     name: str) -> Iterator[tuple[Any, Any]]:
    """``(record, stream_slice)`` for each record the resolver's retriever reads, per partition."""
    retriever = ctx.build(resolver.retriever, where + ("retriever",))
    model = resolver.retriever
    router = build_router(model.partition_router, ctx, where + ("retriever", "partition_router")) \
        if model.partition_router is not None else None
    slices = [StreamSlice(p.partition, {}, p.extra_fields) for p in router.partitions(_no_parent)] \
        if router is not None else [StreamSlice()]
    for stream_slice in slices:
        options = router.apply if router is not None else None
        try:
            pages = retriever.read(stream_slice, ctx.config, slice_options=options) if options is not None \
                else retriever.read(stream_slice, ctx.config)
            for page in pages:
                for record in page:
                    yield record, stream_slice.view()
        except ReadError as exc:
            exc.with_context(stream=name or None, place=ctx.place(where))
            raise


def _dig(config: Any, pointer: Sequence[str]) -> Any:
    node = config
    for key in pointer:
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.lstrip("-").isdigit() and -len(node) <= int(key) < len(node):
            node = node[int(key)]
        else:
            return []
    return node


def _config_values(resolver: ConfigComponentsResolver, ctx: BuildContext) -> Iterator[dict[str, Any]]:
    """One ``components_values`` per combination of the stream configs' entries (Airbyte's merge)."""
    columns = []
    for stream_config in resolver.stream_configs:
        pointer = [str(ctx.render(key, stream_config.parameters)) for key in stream_config.configs_pointer]
        raw = _dig(ctx.config, pointer)
        entries = list(raw) if isinstance(raw, list) else [raw]
        entries.extend(_plain(stream_config.default_values or ()))
        columns.append(list(enumerate(entries)))
    for combination in itertools.product(*columns):
        merged: dict[str, Any] = {}
        for config_index, (entry_index, entry) in enumerate(combination):
            if isinstance(entry, dict):
                merged.update(entry)
            else:  # a value that is not a mapping is kept under an artificial name, as Airbyte does
                merged.setdefault(f"source_config_{config_index}", (entry_index, entry))
        yield merged


def _mapped(template: dict[str, Any], mappings: Sequence[ComponentMappingDefinition], parameters: Mapping[str, Any],
            ctx: BuildContext, where: tuple, variables: dict[str, Any], *, kind: str) -> dict[str, Any]:
    """A copy of ``template`` with every mapping's value written in."""
    out = copy.deepcopy(template)
    variables = {"stream_template_config": template, **variables}
    for index, mapping in enumerate(mappings):
        at = where + ("components_mapping", index)
        try:
            if kind == "config" and mapping.condition and \
                    not ctx.render(mapping.condition, parameters, "boolean", **variables):
                continue
            value = ctx.render(mapping.value, parameters, mapping.value_type or "any", **variables)
            keys = [str(ctx.render(key, parameters, **variables)) for key in mapping.field_path]
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - any error of the template (Jinja's, a filter's): name the mapping
            raise ConfigError(f"a ComponentMappingDefinition could not be rendered: {exc}"
                              f"{place_suffix(ctx.place(at))}") from None
        if kind != "http" and not (kind == "config" and mapping.value_type == "string"):
            value = _yaml_value(value)
        apply_mapping(out, keys, _plain(value), create=kind != "http" and mapping.create_or_update)
    return out


def _yaml_value(value: Any) -> Any:
    """Text that reads as YAML becomes that value; other text stays text (Airbyte's reading)."""
    if not isinstance(value, str):
        return value
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        return value


def apply_mapping(document: Any, path: Sequence[str], value: Any, *, create: bool = False) -> int:
    """Write ``value`` at every place of ``document`` that ``path`` matches (its keys are globs; a list's
    items are matched by their index); answer how many. With ``create``, a truthy value is written at the
    path taken literally when nothing matched, making the mappings on the way."""
    if not path:
        return 0
    count = _set(document, list(path), value)
    if count == 0 and create and value:
        node = document
        for key in path[:-1]:
            child = node.get(key) if isinstance(node, dict) else None
            if not isinstance(child, dict):
                child = {}
                node[key] = child
            node = child
        node[path[-1]] = value
        return 1
    return count


def _set(node: Any, path: list[str], value: Any) -> int:
    key, rest = path[0], path[1:]
    if isinstance(node, dict):
        names = [k for k in node if isinstance(k, str) and fnmatch.fnmatchcase(k, key)] if _GLOB & set(key) \
            else ([key] if key in node else [])
    elif isinstance(node, list):
        indices = [str(i) for i in range(len(node))]
        names = [int(i) for i in indices if fnmatch.fnmatchcase(i, key)]  # type: ignore[misc]
    else:
        return 0
    count = 0
    for name in names:
        if rest:
            count += _set(node[name], rest, value)
        else:
            node[name] = value
            count += 1
    return count


def _plain(value: Any) -> Any:
    """``value`` as plain JSON-like Python values (dicts and lists, not frozen mappings or tuples)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _push_parameters(node: Any, inherited: Mapping[str, Any], root: bool = True) -> None:
    """Give the stream ``node`` and every component in it that holds ``$parameters`` (after preparation, each
    that inherited some) its parent's parameters over its own."""
    if isinstance(node, list):
        for item in node:
            _push_parameters(item, inherited, False)
        return
    if not isinstance(node, dict):
        return
    own = node.get("$parameters")
    if isinstance(own, dict) or (root and inherited):
        node["$parameters"] = {**(own if isinstance(own, dict) else {}), **inherited}
        inherited = node["$parameters"]
    for key, value in node.items():
        if key != "$parameters":
            _push_parameters(value, inherited, False)


def template_streams(source: DeclarativeSource, templates: Templates, checked: Any,
                     ctx: BuildContext) -> Iterator[tuple[tuple, DeclarativeStream | StateDelegatingStream]]:
    """``(path, model)`` of every stream the templates make; ``path`` is its definition's template."""
    seen: dict[str, tuple] = {}
    written = checked.data.get("dynamic_streams") if isinstance(checked.data, Mapping) else None
    for index, (definition, made) in enumerate(zip(source.dynamic_streams, templates)):
        path = ("dynamic_streams", index, "stream_template")
        inherited = written[index].get("$parameters", {}) if isinstance(written, list) else {}
        for template in made:
            data = copy.deepcopy(template)
            if definition.use_parent_parameters:  # the definition's parameters win over the template's own,
                _push_parameters(data, inherited)  # and a component's parent's over its own, as airbyte-cdk
            data.setdefault("type", "DeclarativeStream")
            name = data.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError(f"a stream made by the DynamicDeclarativeStream `{definition.name}` has no name "
                                  f"(got {name!r}); map one into `name`{place_suffix(ctx.place(path))}")
            if name in seen:
                raise ConfigError(f"two streams made by dynamic_streams are named `{name}`; each must have its own "
                                  f"name (check the config or the endpoint's answer){place_suffix(ctx.place(path))}")
            seen[name] = path
            preparation = Preparation(checked.placement)
            prepared = preparation.component(data, path, (DeclarativeStream, StateDelegatingStream),
                                             "DeclarativeStream", {}, {})
            problems = [d for d in preparation.problems if d.severity == "error"]
            model_type = StateDelegatingStream if prepared.get("type") == "StateDelegatingStream" \
                else DeclarativeStream
            try:
                model = model_type.model_validate(prepared)
            except ValidationError as exc:
                problems_text = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                          for e in exc.errors(include_url=False)[:5])
                raise ConfigError(f"the stream `{name}` made by dynamic_streams is not a valid stream: "
                                  f"{problems_text}{place_suffix(ctx.place(path))}") from None
            if problems:
                raise ConfigError(f"the stream `{name}` made by dynamic_streams is not a valid stream: "
                                  + "; ".join(d.message for d in problems) + place_suffix(ctx.place(path)))
            yield path, model
