"""Response formats: how a response body becomes the documents the extractor reads.

A decoder is set on the ``SimpleRetriever`` (``decoder``) and, as in Airbyte,
serves the whole stream: the extractor reads its documents, the paginator its
first document, the requester streams the body when the format allows it. A
``SessionTokenAuthenticator`` reads its login response with its own
``decoder``. ``GzipDecoder`` and ``ZipfileDecoder`` wrap the decoder of what
they unpack.
"""

from typing import Annotated, Literal

from pydantic import Field

from framework.models.base import Component, spec


class _Decoder(Component):
    takes_parameters = False


class JsonDecoder(_Decoder):
    """Reads the body as one JSON document (the default)."""

    type: Literal["JsonDecoder"] = spec("Component type.", "JsonDecoder", "JsonDecoder")


class JsonlDecoder(_Decoder):
    """Reads the body as JSON lines: each line one JSON document; lines that are not JSON are skipped.

    Streamed: a body of any size is read in bounded memory."""

    type: Literal["JsonlDecoder"] = spec("Component type.", "JsonlDecoder", "JsonlDecoder")


class IterableDecoder(_Decoder):
    """Reads the body as lines of text: each line becomes the record ``{"record": line}``. Streamed."""

    type: Literal["IterableDecoder"] = spec("Component type.", "IterableDecoder", "IterableDecoder")


class XmlDecoder(_Decoder):
    """Reads the body as one XML document, turned into an object: attributes as `@name`, the text of an
    element with attributes as `#text`, repeated elements as a list."""

    type: Literal["XmlDecoder"] = spec("Component type.", "XmlDecoder", "XmlDecoder")


class CsvDecoder(_Decoder):
    """Reads the body as CSV with a header row: each row becomes an object of text values by column name.

    Streamed: a body of any size is read in bounded memory."""

    type: Literal["CsvDecoder"] = spec("Component type.", "CsvDecoder", "CsvDecoder")
    encoding: str = spec("Text encoding of the body (a Python codec name).", "utf-8", "utf-8")
    delimiter: str = spec(
        "The one character between fields; an escape such as `\\t` (written with a backslash) is understood.",
        ";",
        ",",
    )
    set_values_to_none: tuple[str, ...] | None = spec(
        "Values that become null (compared with the text of each field).", ["", "NULL", "N/A"], None
    )


class JsonItemsDecoder(_Decoder):
    """Reads the elements of one array inside a single JSON document as the documents (records)."""

    type: Literal["JsonItemsDecoder"] = spec("Component type.", "JsonItemsDecoder", "JsonItemsDecoder")
    items_path: str = spec(
        "Dot-separated keys of the array whose elements are yielded (no leading `$.` nor trailing `[*]`); "
        "an `item` step goes into every element of an array on the way.",
        "data.users",
    )
    encoding: str = spec("Text encoding of the body (a Python codec name).", "utf-8", "utf-8")


# What a GzipDecoder or a ZipfileDecoder may unpack into (Airbyte's list).
InnerDecoder = Annotated[
    "CsvDecoder | GzipDecoder | JsonDecoder | JsonItemsDecoder | JsonlDecoder",
    Field(discriminator="type"),
]


class GzipDecoder(_Decoder):
    """Unpacks a gzip body, then reads it with `decoder`. A body that is not gzip (no gzip magic bytes) is
    read by `decoder` as it is, whatever its `Content-Encoding` says. Streamed."""

    type: Literal["GzipDecoder"] = spec("Component type.", "GzipDecoder", "GzipDecoder")
    decoder: InnerDecoder = spec("How the unpacked data is read.", {"type": "JsonlDecoder"})


class ZipfileDecoder(_Decoder):
    """Unpacks a zip archive body and reads every file in it, in order, with `decoder`."""

    type: Literal["ZipfileDecoder"] = spec("Component type.", "ZipfileDecoder", "ZipfileDecoder")
    decoder: InnerDecoder = spec("How each unpacked file is read.", {"type": "CsvDecoder"})


# Every decoder a retriever accepts (CustomDecoder aside: see framework.models.custom).
Decoder = Annotated[
    JsonDecoder | JsonItemsDecoder | XmlDecoder | CsvDecoder | JsonlDecoder | GzipDecoder | IterableDecoder
    | ZipfileDecoder,
    Field(discriminator="type"),
]

# What a login response (SessionTokenAuthenticator) may be read with.
LoginDecoder = Annotated[JsonDecoder | XmlDecoder, Field(discriminator="type")]

__all__ = ["CsvDecoder", "Decoder", "GzipDecoder", "InnerDecoder", "IterableDecoder", "JsonDecoder",
           "JsonItemsDecoder", "JsonlDecoder", "LoginDecoder", "XmlDecoder", "ZipfileDecoder"]
