"""Which retrievers read a page past the response size cap as it streams in, instead of failing it.

A JSON page (no ``decoder``, or a JsonDecoder) whose records a DpathExtractor takes from a list at a
``field_path`` of named keys can be read record by record (:mod:`framework.components.records.json_stream`),
so a page of any size lands in bounded memory. Only a retriever without a paginator does so: a paginator
reads the page's other fields (the next cursor), which a streamed page does not keep, and a page it cannot
read would end the pagination early. Any other page past the cap fails the read with the cap's message.
"""

from __future__ import annotations

import copy
from typing import Any

from framework.components.http.requester import Requester
from framework.components.records import DpathExtractor, RecordSelector
from framework.models import JsonDecoder, NoPagination, SimpleRetriever
from framework.values import replace

__all__ = ["oversized_pages_stream", "streamable_path", "streaming_oversized"]


def streamable_path(field_path: tuple[str, ...]) -> bool:
    """Whether records at ``field_path`` can be read by the incremental parser: named keys only (no ``*``,
    no dot inside a key, which its prefixes cannot tell apart), at least one."""
    return bool(field_path) and all(key and key != "*" and "." not in key for key in field_path)


def oversized_pages_stream(model: SimpleRetriever, requester: Any, selector: Any) -> bool:
    """Whether the retriever of ``model`` (built with ``requester`` and ``selector``) streams a page past the cap."""
    return (isinstance(requester, Requester) and not requester.stream
            and (model.paginator is None or isinstance(model.paginator, NoPagination))
            and (model.decoder is None or isinstance(model.decoder, JsonDecoder))
            and isinstance(selector, RecordSelector) and isinstance(selector.extractor, DpathExtractor)
            and selector.extractor.decoder is None and streamable_path(selector.extractor.field_path)
            and getattr(model.requester, "query_properties", None) is None)


def streaming_oversized(requester: Requester) -> Requester:
    """``requester`` asking its transport to hand on a body past the cap as a stream."""
    client = copy.copy(requester.client)
    client.limits = replace(client.limits, stream_oversized=True)
    return replace(requester, client=client)
