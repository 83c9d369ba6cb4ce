"""Checks of ``dynamic_streams`` that a schema cannot make.

* a ``ComponentMappingDefinition``'s ``field_path`` is not empty;
* its ``condition`` is read by a ConfigComponentsResolver only (elsewhere a warning that it is ignored,
  as airbyte-cdk ignores it);
* an ``HttpComponentsResolver``'s retriever lists its partitions without reading parent streams
  (a ListPartitionRouter, or several): the values are read once, before any stream exists;
* a ``DynamicStreamCheckConfig`` names a DynamicDeclarativeStream of the manifest, and counts (like a
  ``CheckDynamicStream``) at least one stream.

The stream template itself is a stream of the manifest for every other check.
"""

from __future__ import annotations

from collections.abc import Iterator

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.models import (
    CheckDynamicStream,
    ComponentMappingDefinition,
    ConfigComponentsResolver,
    DynamicDeclarativeStream,
    DynamicStreamCheckConfig,
    HttpComponentsResolver,
)

__all__ = ["dynamic_checks", "in_template"]

_PLAIN_ROUTERS = ("ListPartitionRouter",)


def in_template(site: Site) -> bool:
    """Whether ``site`` is a DynamicDeclarativeStream's stream template (a stream made later, named by a mapping)."""
    return len(site.path) == 3 and site.path[0] == "dynamic_streams" and site.path[2] == "stream_template"


def dynamic_checks(sites: list[Site], place: Placement) -> Iterator[Diagnostic]:
    by_path = {site.path: site for site in sites}
    definitions = [site for site in sites if site.model is DynamicDeclarativeStream]
    names = [site.data.get("name") or f"dynamic_stream_{site.path[1]}" for site in definitions]
    for site in sites:
        if site.model in (DynamicStreamCheckConfig, CheckDynamicStream):
            count = site.data.get("stream_count")
            if isinstance(count, int) and count < 1:
                yield place.diagnostic(site.path + ("stream_count",), "bad-count",
                                       f"`stream_count` is {count}; the check reads from at least one stream",
                                       "give a positive count" + (", or leave it out to check them all"
                                                                  if site.model is DynamicStreamCheckConfig else ""))
        if site.model is DynamicStreamCheckConfig:
            wanted = site.data.get("dynamic_stream_name")
            if isinstance(wanted, str) and wanted not in names:
                yield place.diagnostic(site.path + ("dynamic_stream_name",), "unknown-stream",
                                       f"no DynamicDeclarativeStream is named `{wanted}`",
                                       f"dynamic streams are: {', '.join(names)}" if names
                                       else "add the DynamicDeclarativeStream to `dynamic_streams`")
        if site.model is ComponentMappingDefinition:
            if site.data.get("field_path") == []:
                yield place.diagnostic(site.path + ("field_path",), "empty-path", "`field_path` is empty",
                                       "name the keys leading to the place in the stream template, like `[name]`")
            owner = by_path.get(site.path[:-2])
            if site.data.get("condition") and owner is not None and owner.model is not ConfigComponentsResolver:
                yield place.diagnostic(site.path + ("condition",), "ignored-condition",
                                       f"a mapping's `condition` is read by a ConfigComponentsResolver only; this "
                                       f"{owner.model.type_name()} ignores it (as airbyte-cdk does)",
                                       "remove `condition`, or move the condition into `value`", severity="warning")
        elif site.model is HttpComponentsResolver:
            retriever = site.data.get("retriever")
            router = retriever.get("partition_router") if isinstance(retriever, dict) else None
            routers = router if isinstance(router, list) else [router] if router is not None else []
            for index, item in enumerate(routers):
                kind = item.get("type") if isinstance(item, dict) else None
                if kind not in _PLAIN_ROUTERS:
                    at = site.path + ("retriever", "partition_router") + ((index,) if isinstance(router, list)
                                                                          else ())
                    yield place.diagnostic(at, "resolver-router",
                                           f"an HttpComponentsResolver's retriever cannot use a {kind}: its values "
                                           "are read once, before any stream is made",
                                           "list the values with a ListPartitionRouter, or leave the router out")
