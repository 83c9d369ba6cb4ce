"""The records of a JSON page too large to hold, read as the body streams in.

A page past the response size cap (:mod:`framework.components.http.response_limits`) whose records sit in a
list at a DpathExtractor's ``field_path`` is not failed: the transport hands its body on as a stream, and
:func:`streamed_records` reads the items of that list one by one with an incremental JSON parser (ijson, its
C backend where installed), in batches, so the page lands in the memory of one batch. What lies beside the
list (a page count, say) is not kept: such a retriever has no paginator to read it
(:mod:`framework.components.oversized_pages` decides which retrievers stream).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import IO, Any

import ijson

from framework.errors import DecodeError

#: records per batch of a streamed page
BATCH_RECORDS = 4_000

__all__ = ["BATCH_RECORDS", "streamed_records"]


def streamed_records(body: IO[bytes], field_path: tuple[str, ...], what: str) -> Iterator[list[Any]]:
    """The items of the list at ``field_path`` in the JSON ``body``, in batches of :data:`BATCH_RECORDS`;
    a DecodeError naming ``what`` (the cap that was passed) when the body is not JSON or holds no list there."""
    items = ijson.items(body, ".".join((*field_path, "item")), use_float=True)
    count = 0
    try:
        while True:
            batch = list(islice(items, BATCH_RECORDS))
            if not batch:
                break
            count += len(batch)
            yield batch
    except ijson.JSONError as exc:
        raise DecodeError(f"the response body, past {what} and so read as it streamed in, is not JSON after "
                          f"{count:,} records ({_first_line(exc)}); check what the API sends") from None
    if count == 0:
        raise DecodeError(f"the response body is past {what}, and it holds no list of records at "
                          f"`{'.'.join(field_path)}` to read as it streams in; set the extractor's field_path to the "
                          "list of records, or raise the cap (`max_response_bytes`, --max-response-size)")


def _first_line(exc: Exception) -> str:
    """The parser's reason without the picture of the text it draws below it."""
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(".") if lines else type(exc).__name__
