"""Finding the records in a response body: the runtime of ``DpathExtractor``.

The body is decoded as JSON once (``HttpResponse.json`` caches it). The
``field_path`` is a tuple of keys rendered at build time:

* empty: the body itself; a list gives its items, an object gives one record;
* a body that is a list is a list of documents, the path applied to each
  (unless the path starts with ``*`` or an index, which apply to the list);
* an empty object (or ``null``, ``""``, ``0``, false) found at the path, or as the
  body, is no record, as in airbyte-cdk; items of a list found there all are;
* keys are looked up in objects; on a list a key that is a number
  (``"0"``) picks that item;
* ``*`` matches every value of an object or every item of a list at its level;
  all matches are collected and a match that is a list contributes its items;
* a path that leads nowhere, or to ``null``, gives no records (not an error).

Records must be JSON objects: anything else raises
:class:`~framework.errors.DecodeError`, as does a body that is not JSON. A path
without ``*`` is a few lookups, and records are never copied.

With another response format (a retriever's ``decoder``, see
:mod:`~framework.components.records.decoders`) the path is applied to each of
the documents the decoder reads, batch by batch (:meth:`DpathExtractor.extract_batches`),
and an empty object found there is no record, as in Airbyte.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from framework.components.http.transport import HttpResponse
from framework.errors import DecodeError, UnreadableBodyError
from framework.values import replace

if TYPE_CHECKING:  # pragma: no cover
    # the formats other than JSON load with the first manifest that names one (through the catalog's builders)
    from framework.components.records.decoders import ResponseDecoder

WILDCARD = "*"
SHOWN_BODY_CHARS = 100
_OBJECTS = {dict}  # the record types a page may hold (exactly dict: what JSON decoding gives for an object)

Mask = Callable[[str], str]


def _no_mask(text: str) -> str:
    return text


def json_type_name(value: Any) -> str:
    """The JSON name of a decoded value's type (for messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def describe_path(field_path: tuple[str, ...]) -> str:
    return f"`{'.'.join(field_path)}`" if field_path else "the top of the response body"


def decode_body(response: HttpResponse, mask: Mask = _no_mask, place: str | None = None) -> Any:
    """The body as JSON (``None`` when empty); an :class:`UnreadableBodyError` naming status, type, the start of
    the body and where decoding failed if it is not JSON.

    ``NaN``, ``Infinity`` and ``-Infinity``, which JSON does not have but Airbyte's reader accepts, are read
    as Python floats (orjson refuses them; the standard library reads them, only for such a body): a typed
    number column nulls them with a change in ``_airbyte_meta``, and JSON output writes them as null.
    """
    try:
        return response.json()
    except ValueError as exc:
        offset = getattr(exc, "pos", None)
        if b"NaN" in response.content or b"Infinity" in response.content:
            try:
                return response.decoded_as(json.loads(response.content))
            except ValueError:
                pass
        content_type = response.headers.get("Content-Type") or "not given"
        start = mask(response.text[:SHOWN_BODY_CHARS])
        where = f" at byte {offset}" if isinstance(offset, int) else ""
        bad = _first_invalid_utf8(response.content)
        if bad is not None:  # orjson says byte 0 for any invalid UTF-8: name the byte that is
            where = f" at byte {bad}: not valid UTF-8"
        raise UnreadableBodyError(
            f"the response body is not JSON (HTTP {response.status}, Content-Type: {content_type}, "
            f"{len(response.content)} bytes, decoding failed{where}); it starts with {start!r}. "
            "The API did not return JSON (an error page, a truncated body?); check url_base/path, "
            "or the API's status",
            request=response.request.describe(mask),
            place=place,
        ) from None


def _first_invalid_utf8(content: bytes) -> int | None:
    """The offset of the first byte of ``content`` that is not valid UTF-8; None when it all is."""
    try:
        content.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def _step(value: Any, key: str) -> Any:
    """One key down: an object's value or a list's item; None when there is none."""
    if type(value) is dict:
        return value.get(key)
    if type(value) is list and key.isascii() and key.isdigit():
        index = int(key)
        return value[index] if index < len(value) else None
    return None


def _matches(value: Any, path: tuple[str, ...], depth: int) -> Iterator[Any]:
    if depth == len(path):
        yield value
        return
    key = path[depth]
    if key == WILDCARD:
        if type(value) is dict:
            children: Any = value.values()
        elif type(value) is list:
            children = value
        else:
            return
        for child in children:
            yield from _matches(child, path, depth + 1)
    else:
        child = _step(value, key)
        if child is not None:
            yield from _matches(child, path, depth + 1)


def find_records(body: Any, field_path: tuple[str, ...]) -> list[Any]:
    """What ``field_path`` selects in ``body`` (not yet checked to be objects)."""
    if WILDCARD in field_path:
        found: list[Any] = []
        for match in _matches(body, field_path, 0):
            if type(match) is list:
                found.extend(match)
            elif match is not None:
                found.append(match)
        return found
    value = body
    for key in field_path:
        value = _step(value, key)
        if value is None:
            return []
    if type(value) is list:
        return value
    return [] if value is None else [value]


def records_of(documents: list[Any], field_path: tuple[str, ...]) -> list[Any]:
    """What ``field_path`` selects in each of a decoder's documents, as Airbyte's DpathExtractor reads them:
    a list found gives its items, anything else one record unless it is empty (``{}``, null, ``""``)."""
    if not field_path and set(map(type, documents)) == {dict} and all(documents):
        return documents  # the usual case, JSON lines or CSV rows: no Python work per record
    found: list[Any] = []
    if not field_path:
        append = found.append
        for document in documents:
            if type(document) is list:
                found.extend(document)
            elif document:
                append(document)
        return found
    if WILDCARD in field_path:
        for document in documents:
            found.extend(find_records(document, field_path))
        return found
    for document in documents:
        value = document
        for key in field_path:
            value = _step(value, key)
            if value is None:
                break
        if type(value) is list:
            found.extend(value)
        elif value:
            found.append(value)
    return found


def page_records(body: Any, field_path: tuple[str, ...]) -> list[Any]:
    """The records of a JSON body at ``field_path``, as airbyte-cdk 7.39's DpathExtractor takes them.

    A body that is a list is a list of documents, each read on its own (an empty list, like an empty
    body or ``null``, holds none). In each document, the value at ``field_path`` (the document itself
    when the path is empty) gives its items when it is a list, else one record unless it is empty or
    false (``{}``, ``null``, ``""``, ``0``): an empty object is not a record. The items of a list found
    there are kept as they are (``{}`` among them). A path whose first key is ``*`` or an index is
    applied to a list body as a whole (its items, or the item at that index).
    """
    if type(body) is list:
        if not field_path:
            if all(body) and set(map(type, body)) == {dict}:
                return body  # the usual case: a list of objects, none empty, taken as it is (types checked)
            return records_of(body, field_path)
        first = field_path[0]
        if first != WILDCARD and not (first.isascii() and first.isdigit()):
            return records_of(body, field_path)
    if WILDCARD in field_path:
        return find_records(body, field_path)
    value = body
    for key in field_path:
        value = _step(value, key)
        if value is None:
            return []
    if type(value) is list:
        return value
    return [value] if value else []


class DpathExtractor(Struct, frozen=True):
    """Takes the records at ``field_path`` out of a response (JSON, or the retriever's ``decoder``)."""

    field_path: tuple[str, ...] = ()
    place: str | None = None
    mask: Mask = _no_mask
    expander: Any = None  # a RecordExpander (records/expansion.py): each record into the items of a list in it
    decoder: ResponseDecoder | None = None  # None: JSON

    def with_decoder(self, decoder: ResponseDecoder | None) -> DpathExtractor:
        return replace(self, decoder=decoder)

    def extract(self, response: HttpResponse) -> list[dict]:
        if self.decoder is not None:
            batches = list(self.extract_batches(response))
            return batches[0] if len(batches) == 1 else [record for batch in batches for record in batch]
        body = decode_body(response, self.mask, self.place)
        records = page_records(body, self.field_path)
        if self.expander is not None:
            records = self.expander.expand_all(records)
        elif records is body:  # a list of objects taken whole: page_records checked their types
            return records
        return self._checked(records, response)

    def extract_batches(self, response: HttpResponse) -> Iterator[list[dict]]:
        """The records in batches of bounded size, read from the body as it streams in."""
        decoder = self.decoder
        if decoder is None:
            if response.oversized:  # a JSON page past the size cap: its records read as the body streams in
                yield from self._streamed(response)
                return
            yield self.extract(response)
            return
        from framework.components.records.decoders import BODY_ERRORS  # loaded: it built `decoder`

        body = response.body()
        try:
            for documents in decoder.batches(body):
                records = records_of(documents, self.field_path)
                if self.expander is not None:
                    records = self.expander.expand_all(records)
                if not records or set(map(type, records)) == {dict}:
                    yield records
                else:
                    yield self._checked(records, response)
        except DecodeError as exc:
            exc.with_context(request=response.request.describe(self.mask), place=self.place)
            raise
        except BODY_ERRORS as exc:
            raise DecodeError(
                f"the response body could not be read as {decoder.name} (HTTP {response.status}, "
                f"Content-Type: {response.headers.get('Content-Type') or 'not given'}): {self.mask(str(exc))}; "
                "check the retriever's `decoder` against what the API sends",
                request=response.request.describe(self.mask), place=self.place,
            ) from None
        finally:
            body.close()

    def _streamed(self, response: HttpResponse) -> Iterator[list[dict]]:
        from framework.components.records.json_stream import streamed_records  # only for a page past the cap

        body = response.body()
        try:
            for records in streamed_records(body, self.field_path, "the response size cap"):
                if self.expander is not None:
                    records = self.expander.expand_all(records)
                yield self._checked(records, response)
        except DecodeError as exc:
            exc.with_context(request=response.request.describe(self.mask), place=self.place)
            raise
        finally:
            body.close()

    def _checked(self, records: list[Any], response: HttpResponse) -> list[dict]:
        if set(map(type, records)) <= _OBJECTS:  # the page's types at C speed; the loop below names the first other
            return records
        for index, record in enumerate(records):
            if type(record) is not dict:
                raise DecodeError(
                    f"records at {describe_path(self.field_path)} must be JSON objects, found "
                    f"{json_type_name(record)} (item {index}); set field_path to where the "
                    "objects are",
                    request=response.request.describe(self.mask),
                    place=self.place,
                )
        return records


__all__ = ["DpathExtractor", "WILDCARD", "decode_body", "describe_path", "find_records", "json_type_name",
           "page_records", "records_of"]
