"""The contract of each custom component kind: Airbyte's method names and signatures, as typed Protocols.

A class named by ``class_name`` needs only the methods of its kind (no base
class): these protocols say what they are, so that classes written for Airbyte
run unchanged and users' own plug-ins follow the same contract. What the
framework hands to them:

* ``response``: a real :class:`requests.Response` (status, headers, body,
  ``.json()``, ``.request``), built from the framework's own response;
* ``stream_slice``: a :class:`~framework.components.slices.SliceView`, a dict
  of the partition and the datetime window merged, with ``.partition``,
  ``.cursor_slice`` and ``.extra_fields``;
* ``stream_state``: the stream's state as Airbyte shapes it
  (``{"<cursor_field>": value}`` for the slice being read);
* ``config``: the connector config; ``next_page_token``: ``{"next_page_token": token}``
  or ``None`` on the first page.

The class is built with the manifest's keys as keyword arguments (see
:mod:`framework.components.custom.construct`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any, Protocol, runtime_checkable

import requests

__all__ = [
    "Authenticator",
    "BackoffStrategy",
    "Decoder",
    "ErrorHandler",
    "PaginationStrategy",
    "PartitionRouter",
    "RecordExtractor",
    "RecordFilter",
    "SchemaLoader",
    "SchemaNormalization",
    "StateMigration",
    "Transformation",
]


@runtime_checkable
class RecordExtractor(Protocol):
    """``CustomRecordExtractor``: the records in a response.

    Example::

        class OrdersExtractor:
            def extract_records(self, response):
                yield from response.json()["data"]
    """

    def extract_records(self, response: requests.Response) -> Iterable[Mapping[str, Any]]: ...


@runtime_checkable
class RecordFilter(Protocol):
    """``CustomRecordFilter``: which of a page's records to keep (called once per page)."""

    def filter_records(self, records: Iterable[Mapping[str, Any]], stream_state: Mapping[str, Any],
                       stream_slice: Mapping[str, Any] | None = None,
                       next_page_token: Mapping[str, Any] | None = None) -> Iterable[Mapping[str, Any]]: ...


@runtime_checkable
class Transformation(Protocol):
    """``CustomTransformation``: changes one record in place (the return value is ignored, as in Airbyte)."""

    def transform(self, record: MutableMapping[str, Any], config: Mapping[str, Any] | None = None,
                  stream_state: Mapping[str, Any] | None = None,
                  stream_slice: Mapping[str, Any] | None = None) -> None: ...


@runtime_checkable
class PaginationStrategy(Protocol):
    """``CustomPaginationStrategy``: the next page's token, or ``None`` after the last page.

    A new instance is built for each slice (its attributes may keep the slice's
    paging state). ``initial_token`` is sent with the first request (``None``:
    nothing). The token goes where the ``DefaultPaginator``'s
    ``page_token_option`` says; a token seen twice in one slice fails the read.
    """

    @property
    def initial_token(self) -> Any | None: ...

    def next_page_token(self, response: requests.Response, last_page_size: int,
                        last_record: Mapping[str, Any] | None,
                        last_page_token_value: Any | None = None) -> Any | None: ...


@runtime_checkable
class PartitionRouter(Protocol):
    """``CustomPartitionRouter``: the partitions a stream is read in.

    Each item is a mapping (the partition) or an object with ``.partition``
    (and optionally ``.extra_fields``), as Airbyte's ``StreamSlice``. Values
    must be JSON values: partitions travel to Spark executors and into the
    state. Optional, as Airbyte's: ``get_request_params``,
    ``get_request_headers``, ``get_request_body_json`` and
    ``get_request_body_data`` (keyword arguments ``stream_state``,
    ``stream_slice``, ``next_page_token``) add a partition's values to its requests.
    """

    def stream_slices(self) -> Iterable[Mapping[str, Any]]: ...


@runtime_checkable
class SchemaLoader(Protocol):
    """``CustomSchemaLoader``: the stream's JSON Schema (called once, when the connector is opened)."""

    def get_json_schema(self) -> Mapping[str, Any]: ...


@runtime_checkable
class StateMigration(Protocol):
    """``CustomStateMigration``: turns a saved state of an older shape into the current one, before the sync."""

    def should_migrate(self, stream_state: Mapping[str, Any]) -> bool: ...

    def migrate(self, stream_state: Mapping[str, Any]) -> Mapping[str, Any]: ...


@runtime_checkable
class BackoffStrategy(Protocol):
    """``CustomBackoffStrategy``: seconds to wait before retry ``attempt_count`` (``None``: let the next strategy say).

    ``response_or_exception`` is a :class:`requests.Response`, or a
    :class:`requests.RequestException` when the connection failed.
    """

    def backoff_time(self, response_or_exception: requests.Response | requests.RequestException | None,
                     attempt_count: int) -> float | None: ...


@runtime_checkable
class Authenticator(Protocol):
    """``CustomAuthenticator``: the headers that authenticate a request.

    ``get_auth_header()`` answers them as a mapping (Airbyte's ``{"Authorization": "Bearer ..."}``).
    A class may also sign each request itself, as requests' auth objects do (a ``NoAuth`` subclass
    that fetches its own token): its ``__call__(request)`` gets the request as a
    :class:`requests.PreparedRequest` and returns it, and the headers and query parameters it set are
    sent. Their values are masked in every message, and kept from a redirect to another host.
    """

    def get_auth_header(self) -> Mapping[str, Any]: ...


@runtime_checkable
class ErrorHandler(Protocol):
    """``CustomErrorHandler``: what a response means.

    ``interpret_response`` answers an object with ``response_action`` (an
    enum or text: ``SUCCESS``, ``RETRY``, ``FAIL``, ``IGNORE``,
    ``RATE_LIMITED``), and optionally ``failure_type`` and ``error_message``,
    as Airbyte's ``ErrorResolution``. ``max_retries`` (an attribute) bounds the
    retries (5 when absent); ``backoff_time(response, attempt_count)`` is used
    when the class has it.
    """

    def interpret_response(self, response_or_exception: requests.Response | Exception | None) -> Any: ...


@runtime_checkable
class Decoder(Protocol):
    """``CustomDecoder``: the body of a response as records (mappings)."""

    def decode(self, response: requests.Response) -> Iterable[Mapping[str, Any]]: ...


@runtime_checkable
class SchemaNormalization(Protocol):
    """``CustomSchemaNormalization``: casts one record to the stream's schema, in place."""

    def transform(self, record: MutableMapping[str, Any], schema: Mapping[str, Any]) -> None: ...
