"""Checks of query properties that a schema cannot say: where an HttpRequester takes them from.

Airbyte reads one QueryProperties per requester: from ``request_parameters``
(at most one value there), else from ``query_properties``, else from the
deprecated ``fetch_properties_from_endpoint``; a QueryProperties in
``request_parameters`` beside ``fetch_properties_from_endpoint`` is refused.
"""

from __future__ import annotations

from collections.abc import Iterator

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.models import HttpRequester


def query_properties_checks(sites: list[Site], place: Placement) -> Iterator[Diagnostic]:
    for site in sites:
        if site.model is HttpRequester:
            yield from _requester(site, place)


def _requester(site: Site, place: Placement) -> Iterator[Diagnostic]:
    params = site.data.get("request_parameters")
    in_params = [key for key, value in params.items()
                 if isinstance(value, dict) and value.get("type") == "QueryProperties"] \
        if isinstance(params, dict) else []
    path = site.path
    for key in in_params[1:]:
        yield place.diagnostic(path + ("request_parameters", key), "query-properties-twice",
                               f"`request_parameters` holds more than one QueryProperties "
                               f"({', '.join(f'`{k}`' for k in in_params)}); a requester takes one",
                               f"keep the properties in `{in_params[0]}` and remove `{key}`", key=True)
    endpoint = site.data.get("fetch_properties_from_endpoint")
    if in_params and endpoint is not None:
        yield place.diagnostic(path + ("fetch_properties_from_endpoint",), "query-properties-twice",
                               "PropertiesFromEndpoint is given twice: in `fetch_properties_from_endpoint` and "
                               f"by the QueryProperties in `request_parameters.{in_params[0]}`",
                               "remove `fetch_properties_from_endpoint`; put the PropertiesFromEndpoint in the "
                               "QueryProperties' `property_list`", key=True)
    elif endpoint is not None:
        yield place.diagnostic(path + ("fetch_properties_from_endpoint",), "deprecated-field",
                               "`fetch_properties_from_endpoint` is deprecated",
                               "write `query_properties: {type: QueryProperties, property_list: <this "
                               "PropertiesFromEndpoint>}` instead", severity="warning", key=True)
    if in_params and site.data.get("query_properties") is not None:
        yield place.diagnostic(path + ("query_properties",), "ignored-field",
                               f"`query_properties` is ignored: the QueryProperties in "
                               f"`request_parameters.{in_params[0]}` is the one used",
                               "remove one of the two", severity="warning", key=True)


__all__ = ["query_properties_checks"]
