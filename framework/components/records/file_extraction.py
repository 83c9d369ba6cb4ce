"""Records from a CSV body, read through a temporary file: the runtime of ``ResponseToFileExtractor``.

The body is written to a temporary file (kept in memory while small, on disk
past :data:`SPOOL_BYTES`), unpacked on the way when it is gzip or zlib data
(an export sent without ``Content-Encoding``; otherwise NUL bytes are dropped,
as Airbyte does), then read with the ``csv`` module: the first row names the
fields, every value is text, and the file is gone when the records are out.

Airbyte's rules for values (it reads the file with pandas): an empty cell is
null, and so are pandas' missing-value words (:data:`NA_WORDS`) unless
``preserve_na_values``; a row shorter than the header has nulls for the rest;
blank lines are skipped; a header cell that repeats gets ``.1``, ``.2``... and
an empty one ``Unnamed: <position>``. The text encoding is the
``Content-Type``'s ``charset``, else UTF-8 (a byte-order mark is dropped).
"""

from __future__ import annotations

import codecs
import csv
import io
import tempfile
import typing
import zlib
from collections.abc import Callable, Iterator
from email.message import Message
from typing import IO, Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.transport import HttpResponse
from framework.errors import DecodeError
from framework.models import files as models

#: Bodies up to this size stay in memory; larger ones are written to disk.
SPOOL_BYTES = 8 * 1024 * 1024
CHUNK_BYTES = 64 * 1024

#: Words read as null unless ``preserve_na_values`` (pandas' default missing values); "" is always null.
NA_WORDS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
_EMPTY_ONLY = frozenset({""})

Mask = Callable[[str], str]


def _no_mask(text: str) -> str:
    return text


def charset_of(content_type: str | None) -> str:
    """The ``charset`` of a Content-Type header (a known codec), else UTF-8."""
    if content_type:
        message = Message()
        message["Content-Type"] = content_type
        charset = message.get_param("charset")
        if isinstance(charset, str):
            try:
                return codecs.lookup(charset.strip("'\"")).name
            except LookupError:
                pass
    return "utf-8"


def save_body(body: bytes, target: IO[bytes]) -> None:
    """Write ``body`` to ``target``: unpacked when it is gzip or zlib data, else without NUL bytes."""
    unpack: Any = zlib.decompressobj(zlib.MAX_WBITS | 32)
    for start in range(0, len(body), CHUNK_BYTES):
        chunk = body[start:start + CHUNK_BYTES]
        if unpack is not None:
            try:
                target.write(unpack.decompress(chunk))
                continue
            except zlib.error:
                unpack = None  # not compressed (or no longer): the rest goes as it is
        target.write(chunk.replace(b"\x00", b""))
    if unpack is not None:
        target.write(unpack.flush())


def field_names(header: list[str]) -> list[str]:
    """Header cells as record keys: empty ones named by position, repeats numbered (``a``, ``a.1``...)."""
    names: list[str] = []
    seen: dict[str, int] = {}
    taken = set(header)
    for position, cell in enumerate(header):
        name = cell if cell != "" else f"Unnamed: {position}"
        if name in seen:
            count = seen[name]
            while f"{name}.{count}" in taken:
                count += 1
            seen[name] = count + 1
            name = f"{name}.{count}"
            taken.add(name)
        else:
            seen[name] = 1
        names.append(name)
    return names


def csv_records(text: IO[str], na_words: frozenset[str]) -> Iterator[dict[str, Any]]:
    """The rows of a CSV text as records (see the module's doc for the rules)."""
    rows = csv.reader(text)
    header = next((row for row in rows if row), None)
    if header is None:
        return
    names = field_names(header)
    width = len(names)
    for row in rows:
        if not row:
            continue
        if len(row) > width:
            raise ValueError(f"line {rows.line_num} has {len(row)} values; the header names {width} fields")
        record = {name: (None if value in na_words else value) for name, value in zip(names, row)}
        for name in names[len(row):]:
            record[name] = None
        yield record


class ResponseToFile(Struct, frozen=True):
    """Extracts the records of a CSV response through a temporary file."""

    preserve_na_values: bool = False
    place: str | None = None
    mask: Mask = _no_mask

    def extract(self, response: HttpResponse) -> list[dict]:
        encoding = charset_of(response.headers.get("Content-Type"))
        if encoding == "utf-8":
            encoding = "utf-8-sig"
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            save_body(response.content, spool)
            spool.seek(0)
            text = io.TextIOWrapper(typing.cast(IO[bytes], spool), encoding=encoding, newline="")
            try:
                return list(csv_records(text, _EMPTY_ONLY if self.preserve_na_values else NA_WORDS))
            except (ValueError, csv.Error) as exc:  # UnicodeDecodeError is a ValueError
                raise DecodeError(
                    f"the response body is not CSV this extractor can read ({exc}); check that the API sends "
                    f"CSV with a header row (encoding {encoding.removesuffix('-sig')})",
                    request=response.request.describe(self.mask), place=self.place) from None
            finally:
                text.detach()


@builds("ResponseToFileExtractor")
def build_response_to_file(model: models.ResponseToFileExtractor, ctx: BuildContext, path: tuple) -> ResponseToFile:
    return ResponseToFile(model.preserve_na_values, ctx.place(path), ctx.mask)


__all__ = ["NA_WORDS", "ResponseToFile", "build_response_to_file", "charset_of", "csv_records", "field_names",
           "save_body"]
