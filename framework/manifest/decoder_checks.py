"""Checks of response formats (decoders) that a schema cannot say.

* a CSV ``delimiter`` must be one character (an escape such as ``\\t`` counts as one);
* an ``encoding`` must be a text codec Python knows;
* a ``JsonItemsDecoder`` needs a non-empty ``items_path``;
* a retriever whose ``decoder`` Airbyte will not page (anything but JSON, XML, or JSON in
  gzip) cannot have a ``DefaultPaginator``: airbyte-cdk refuses the stream;
* ``decoder`` on an extractor or a paginator is ignored, as in Airbyte (the retriever's
  is the one that reads the responses): a warning when it names another format.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import Any

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.models import (
    CsvDecoder,
    CursorPagination,
    DefaultPaginator,
    DpathExtractor,
    GzipDecoder,
    JsonItemsDecoder,
    SimpleRetriever,
)

PAGEABLE = "JsonDecoder, XmlDecoder or a GzipDecoder of JsonDecoder"


def decoder_checks(sites: list[Site], place: Placement) -> Iterator[Diagnostic]:
    for site in sites:
        data = site.data
        if site.model in (CsvDecoder, JsonItemsDecoder):
            encoding = data.get("encoding")
            if isinstance(encoding, str) and not _codec_known(encoding):
                yield place.diagnostic(site.path + ("encoding",), "bad-encoding",
                                       f"unknown text encoding `{encoding}`",
                                       "use a codec name such as `utf-8`, `utf-16` or `latin-1`")
        if site.model is CsvDecoder:
            delimiter = data.get("delimiter")
            if isinstance(delimiter, str) and len(_unescaped(delimiter)) != 1:
                yield place.diagnostic(site.path + ("delimiter",), "bad-delimiter",
                                       f"the CSV delimiter must be one character, not {delimiter!r}",
                                       "write one character, such as `,`, `;` or `\"\\t\"` for a tab")
        if site.model is JsonItemsDecoder and data.get("items_path") == "":
            yield place.diagnostic(site.path + ("items_path",), "empty-items-path",
                                   "`items_path` is empty; it names the array whose elements are the records",
                                   "write the dot-separated keys of the array, such as `data.users`")
        if site.model is SimpleRetriever:
            decoder = data.get("decoder")
            paginator = data.get("paginator")
            if (isinstance(decoder, dict) and isinstance(paginator, dict)
                    and paginator.get("type") == DefaultPaginator.type_name() and not _pageable(decoder)):
                yield place.diagnostic(
                    site.path + ("paginator",), "unpageable-decoder",
                    f"a DefaultPaginator cannot read `{decoder.get('type')}` responses; airbyte-cdk refuses "
                    f"this stream (only {PAGEABLE} can be paged)",
                    "remove the paginator (a streamed format is read whole, in bounded memory) or change "
                    "the retriever's `decoder`")
        legacy = data.get("decoder") if site.model in (DpathExtractor, DefaultPaginator, CursorPagination) else None
        if isinstance(legacy, dict) and legacy.get("type") != _retriever_format(sites, site.path):
            yield place.diagnostic(
                site.path + ("decoder",), "ignored-decoder",
                f"`decoder` on {site.model.type_name()} is ignored, as in Airbyte: the retriever's `decoder` reads "
                "every response of the stream", "move it to the SimpleRetriever's `decoder`",
                severity="warning", key=True)


def _retriever_format(sites: list[Site], path: tuple) -> Any:
    """The decoder type of the retriever that holds ``path`` (JsonDecoder when it sets none)."""
    owner = None
    for site in sites:
        if site.model is SimpleRetriever and path[:len(site.path)] == site.path:
            if owner is None or len(site.path) > len(owner.path):
                owner = site
    decoder = owner.data.get("decoder") if owner is not None else None
    return decoder.get("type") if isinstance(decoder, dict) else "JsonDecoder"


def _pageable(decoder: dict[str, Any]) -> bool:
    kind = decoder.get("type")
    if kind in ("JsonDecoder", "XmlDecoder", "CustomDecoder"):  # a custom one: its own business
        return True
    inner = decoder.get("decoder")
    return kind == GzipDecoder.type_name() and isinstance(inner, dict) and inner.get("type") == "JsonDecoder"


def _unescaped(delimiter: str) -> str:
    if not delimiter.startswith("\\"):
        return delimiter
    try:
        return delimiter.encode("utf-8").decode("unicode_escape")
    except UnicodeDecodeError:
        return delimiter


def _codec_known(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
    except LookupError:
        return False
    return True


__all__ = ["decoder_checks"]
