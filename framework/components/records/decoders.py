"""Response formats: the runtimes of the decoders other than JSON.

A decoder turns a response body (a binary file: the network stream itself for
a streamed format) into *documents*, handed out in batches so a body of any
size is read in bounded memory. The extractor then reads each document as
Airbyte's ``DpathExtractor`` does (:func:`records_of`): ``field_path`` is
applied to every document; a list found there gives its items, an object gives
one record, an empty object or nothing gives none.

What one document is, per format (as in airbyte-cdk 7.39):

* ``JsonlDecoder``: one line (split at ``\\n``); a line that is not JSON is
  skipped with a warning.
* ``IterableDecoder``: ``{"record": line}`` for each line of UTF-8 text.
* ``CsvDecoder``: ``{column: text}`` for each row after the header row; a short
  row gives null for the missing columns, values beyond the header are dropped.
* ``XmlDecoder``: the whole document, as ``xmltodict`` reads it; an empty body
  gives nothing.
* ``JsonItemsDecoder``: each element of the array at ``items_path``.
* ``JsonDecoder`` inside ``GzipDecoder``/``ZipfileDecoder``: the body, or each
  item when it is a list.
* ``GzipDecoder``: what its decoder makes of the unpacked body; a body without
  gzip's magic bytes is read as it is.
* ``ZipfileDecoder``: what its decoder makes of each file of the archive.

A top-level ``JsonDecoder`` is not here: the extractor reads JSON itself, on
its fast path. ``streamed`` says whether the requester asks for the body as a
stream (Airbyte's ``is_stream_response``); paginators then see an empty
``response``, as in Airbyte.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import logging
import re
import zipfile
import zlib
from collections.abc import Iterator
from itertools import chain, islice, repeat
from typing import IO, Any, Protocol, cast
from xml.parsers.expat import ExpatError

import orjson
from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.errors import ConfigError, DecodeError, place_suffix
from framework.models import decoders as models

log = logging.getLogger(__name__)

BATCH_BYTES = 1 << 18  # lines are handed out in batches of about this many bytes of body
BATCH_ROWS = 4_000  # CSV rows per batch
GZIP_MAGIC = b"\x1f\x8b"
# characters besides `\n` (and `\r`) at which str.splitlines splits, though a CSV line does not end there
_OTHER_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")

Body = IO[bytes]


class ResponseDecoder(Protocol):
    """A response format: a body's documents, in batches."""

    @property
    def name(self) -> str: ...  # the manifest type, for messages

    @property
    def streamed(self) -> bool: ...  # the requester asks for the body as a stream

    def batches(self, body: Body) -> Iterator[list[Any]]: ...


# Errors a malformed body raises while it is read; turned into DecodeError by the extractor.
BODY_ERRORS: tuple[type[Exception], ...] = (
    UnicodeDecodeError, csv.Error, zlib.error, gzip.BadGzipFile, EOFError, zipfile.BadZipFile, ExpatError,
    orjson.JSONDecodeError,
)


def _loads(data: bytes | str) -> Any:
    """JSON with orjson, and Python's json for what orjson refuses but Python's reader takes (NaN, Infinity)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


class JsonDocument(Struct, frozen=True):
    """``JsonDecoder`` inside gzip or zip: the body is one JSON document; a list gives its items."""

    name: str = "JsonDecoder"
    streamed: bool = False

    def batches(self, body: Body) -> Iterator[list[Any]]:
        data = body.read()
        try:
            document = _loads(data)
        except ValueError:
            raise DecodeError(f"the unpacked body is not JSON; it starts with {data[:60]!r}") from None
        yield document if type(document) is list else [document]


class JsonLines(Struct, frozen=True):
    """``JsonlDecoder``: a JSON document per line; lines that are not JSON are skipped (and logged)."""

    name: str = "JsonlDecoder"
    streamed: bool = True

    def batches(self, body: Body) -> Iterator[list[Any]]:
        rest = b""
        while True:
            block = body.read(BATCH_BYTES)
            if not block:
                break
            block = rest + block
            end = block.rfind(b"\n")
            if end < 0:
                rest = block
                continue
            rest = block[end + 1:]
            yield _json_lines(block[:end].split(b"\n"))
        if rest:
            yield _json_lines([rest])


def _json_lines(lines: list[bytes]) -> list[Any]:
    try:
        return list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        pass
    documents = []
    skipped: list[bytes] = []
    for line in lines:  # again, one by one, to skip the bad ones
        try:
            documents.append(_loads(line))
        except ValueError:
            skipped.append(line)
    if skipped:
        shown = ", ".join(repr(line[:60]) for line in skipped[:3]) + (", ..." if len(skipped) > 3 else "")
        log.warning("skipped %d response line(s) that are not JSON: %s", len(skipped), shown)
    return documents


class TextLines(Struct, frozen=True):
    """``IterableDecoder``: ``{"record": line}`` for each line of UTF-8 text (``\\n``, ``\\r\\n`` or ``\\r``)."""

    name: str = "IterableDecoder"
    streamed: bool = True

    def batches(self, body: Body) -> Iterator[list[Any]]:
        text = io.TextIOWrapper(body, encoding="utf-8", newline=None)
        while True:
            lines = text.readlines(BATCH_BYTES)
            if not lines:
                return
            yield [{"record": line[:-1] if line.endswith("\n") else line} for line in lines]


class CsvRows(Struct, frozen=True):
    """``CsvDecoder``: a header row, then ``{column: text}`` per row (as Python's ``csv.DictReader`` reads them)."""

    encoding: str = "utf-8"
    delimiter: str = ","
    to_none: frozenset[str] = frozenset()
    name: str = "CsvDecoder"
    streamed: bool = True

    def batches(self, body: Body) -> Iterator[list[Any]]:
        text = io.TextIOWrapper(body, encoding=self.encoding)  # universal newlines, as Airbyte reads it
        reader = csv.reader(chain.from_iterable(_text_lines(text)), delimiter=self.delimiter)
        header = next(reader, None)
        if header is None:
            return
        width = len(header)
        to_none = self.to_none
        while True:
            rows = list(islice(reader, BATCH_ROWS))
            if not rows:
                return
            if min(map(len, rows)) >= width:  # whole rows: no Python work per row
                documents = list(map(dict, map(zip, repeat(header), rows)))
            else:
                documents = [_short_row(header, row) for row in rows if row]
            if to_none:
                documents = [{k: (None if v in to_none else v) for k, v in row.items()}  # type: ignore[misc]
                             for row in documents]
            yield documents


def _text_lines(text: io.TextIOWrapper) -> Iterator[list[str]]:
    """The text's lines (each with its ``\n``) a block at a time: the CSV reader takes a list of lines far faster
    than it reads a text file line by line."""
    rest = ""
    while True:
        block = text.read(BATCH_BYTES)
        if not block:
            break
        block = rest + block
        if _OTHER_BREAKS.search(block) is None:  # then str.splitlines splits at `\n` only (`\r` is `\n` by now)
            lines = block.splitlines(True)
            rest = lines.pop() if not lines[-1].endswith("\n") else ""
        else:
            parts = block.split("\n")
            rest = parts.pop()
            lines = [part + "\n" for part in parts]
        yield lines
    if rest:
        yield [rest]


def _short_row(header: list[str], row: list[str]) -> dict:
    document: dict[str, Any] = dict(zip(header, row))
    for key in header[len(row):]:
        document[key] = None
    return document


class XmlDocument(Struct, frozen=True):
    """``XmlDecoder``: the body as one document (attributes as ``@name``, text beside them as ``#text``)."""

    name: str = "XmlDecoder"
    streamed: bool = False

    def batches(self, body: Body) -> Iterator[list[Any]]:
        data = body.read()
        if not data.strip():
            return
        import xmltodict  # here: only XML streams need it

        yield [xmltodict.parse(data)]

    def pagination_body(self, content: bytes) -> Any:
        """What a paginator or a login reads: the document, or ``{}`` when the body is not XML (as Airbyte)."""
        try:
            import xmltodict

            return xmltodict.parse(content) if content.strip() else {}
        except ExpatError:
            return {}


class JsonItems(Struct, frozen=True):
    """``JsonItemsDecoder``: the elements of the array at ``items_path`` (``item`` steps into arrays).

    The document is read whole (orjson) and then walked; streaming it would need an incremental
    JSON parser such as ``ijson``, which the framework does not depend on.
    """

    steps: tuple[str, ...]
    encoding: str = "utf-8"
    name: str = "JsonItemsDecoder"
    streamed: bool = True

    def batches(self, body: Body) -> Iterator[list[Any]]:
        data = body.read()
        text: bytes | str = data if codecs.lookup(self.encoding).name == "utf-8" else data.decode(self.encoding)
        found: list[Any] = []
        _walk(_loads(text), self.steps + ("item",), found)
        if found:
            yield found


def _walk(value: Any, steps: tuple[str, ...], found: list[Any]) -> None:
    if not steps:
        found.append(value)
        return
    step, rest = steps[0], steps[1:]
    if type(value) is dict:
        if step in value:
            _walk(value[step], rest, found)
    elif type(value) is list and step == "item":
        for item in value:
            _walk(item, rest, found)


class Gunzip(Struct, frozen=True):
    """``GzipDecoder``: gzip unpacked (when the body starts with gzip's magic bytes), then ``inner``."""

    inner: ResponseDecoder
    name: str = "GzipDecoder"
    streamed: bool = True

    def batches(self, body: Body) -> Iterator[list[Any]]:
        buffered = body if isinstance(body, io.BufferedReader) else io.BufferedReader(cast(Any, body))
        if buffered.peek(2)[:2] == GZIP_MAGIC:
            with gzip.GzipFile(fileobj=buffered, mode="rb") as unpacked:
                yield from self.inner.batches(cast(Body, unpacked))
        else:
            yield from self.inner.batches(buffered)


class Unzip(Struct, frozen=True):
    """``ZipfileDecoder``: every file of a zip archive, in the archive's order, read by ``inner``."""

    inner: ResponseDecoder
    name: str = "ZipfileDecoder"
    streamed: bool = False

    def batches(self, body: Body) -> Iterator[list[Any]]:
        archive = body if body.seekable() else io.BytesIO(body.read())
        with zipfile.ZipFile(archive) as files:
            for name in files.namelist():
                with files.open(name) as member:
                    try:
                        yield from self.inner.batches(member)
                    except DecodeError as exc:
                        raise DecodeError(f"file `{name}` of the zip archive: {exc.reason}") from None
                    except BODY_ERRORS as exc:
                        raise DecodeError(f"file `{name}` of the zip archive could not be read: {exc}") from None


def pagination_capable(model: Any) -> bool:
    """Whether Airbyte lets a DefaultPaginator read this format: JSON, XML, or JSON in gzip."""
    if model is None or isinstance(model, (models.JsonDecoder, models.XmlDecoder)):
        return True
    return isinstance(model, models.GzipDecoder) and isinstance(model.decoder, models.JsonDecoder)


def csv_delimiter(delimiter: str) -> str:
    """The delimiter as the CSV reader takes it: an escape written with a backslash (``\\t``) is undone."""
    return delimiter.encode("utf-8").decode("unicode_escape") if delimiter.startswith("\\") else delimiter


def _check_codec(encoding: str, place: str | None) -> None:
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ConfigError(f"unknown text encoding {encoding!r}{_at(place)}; use a codec name such as "
                          "`utf-8` or `latin-1`") from None


def _at(place: str | None) -> str:
    return place_suffix(place)


@builds("JsonDecoder")
def build_json_decoder(model: models.JsonDecoder, ctx: BuildContext, path: tuple) -> JsonDocument:
    return JsonDocument()


@builds("JsonlDecoder")
def build_jsonl_decoder(model: models.JsonlDecoder, ctx: BuildContext, path: tuple) -> JsonLines:
    return JsonLines()


@builds("IterableDecoder")
def build_iterable_decoder(model: models.IterableDecoder, ctx: BuildContext, path: tuple) -> TextLines:
    return TextLines()


@builds("XmlDecoder")
def build_xml_decoder(model: models.XmlDecoder, ctx: BuildContext, path: tuple) -> XmlDocument:
    return XmlDocument()


@builds("CsvDecoder")
def build_csv_decoder(model: models.CsvDecoder, ctx: BuildContext, path: tuple) -> CsvRows:
    place = ctx.place(path)
    try:
        delimiter = csv_delimiter(model.delimiter)
    except UnicodeDecodeError:
        delimiter = model.delimiter
    _check_codec(model.encoding, place)
    if len(delimiter) != 1:
        raise ConfigError(f"the CSV `delimiter` must be one character, not {model.delimiter!r}"
                          f"{_at(place)}; write it like `,`, `;` or `\\t`")
    return CsvRows(model.encoding, delimiter, frozenset(model.set_values_to_none or ()))


@builds("JsonItemsDecoder")
def build_json_items_decoder(model: models.JsonItemsDecoder, ctx: BuildContext, path: tuple) -> JsonItems:
    _check_codec(model.encoding, ctx.place(path))
    return JsonItems(tuple(model.items_path.split(".")), model.encoding)


@builds("GzipDecoder")
def build_gzip_decoder(model: models.GzipDecoder, ctx: BuildContext, path: tuple) -> Gunzip:
    return Gunzip(ctx.build(model.decoder, path + ("decoder",)))


@builds("ZipfileDecoder")
def build_zipfile_decoder(model: models.ZipfileDecoder, ctx: BuildContext, path: tuple) -> Unzip:
    return Unzip(ctx.build(model.decoder, path + ("decoder",)))


__all__ = ["BATCH_BYTES", "BATCH_ROWS", "BODY_ERRORS", "CsvRows", "Gunzip", "JsonDocument", "JsonItems", "JsonLines",
           "ResponseDecoder", "TextLines", "Unzip", "XmlDocument", "build_csv_decoder", "build_gzip_decoder",
           "build_iterable_decoder", "build_json_decoder", "build_json_items_decoder", "build_jsonl_decoder",
           "build_xml_decoder", "build_zipfile_decoder", "csv_delimiter", "pagination_capable"]
