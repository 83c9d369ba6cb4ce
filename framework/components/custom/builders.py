"""Builders of the ``Custom*`` kinds: the user's object, wrapped in a small adapter that fits the runtime's slot.

Each adapter calls the user's method with Airbyte's name and arguments (see
:mod:`framework.components.custom.protocols`) where the runtime calls its own
component, as often as Airbyte would (a filter once per page, a transformation
once per record), and turns an exception raised in the user's code into a
:class:`~framework.components.custom.loader.UserCodeError` naming the kind,
the class and the manifest place (the stream is added as the error travels
up). Adapters keep the user's object as ``user_object``.

The kinds that drive a read themselves are not built here: a stream with a
``CustomRequester`` or a ``CustomRetriever`` is read by airbyte-cdk (see
:mod:`framework.engine.bridge`), and a ``CustomIncrementalSync`` is refused
when the connector opens, with the reason.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NoReturn, TypeVar
from urllib.parse import parse_qsl, urlsplit

import orjson
import requests
import requests.auth

from framework.components.context import BuildContext, builds
from framework.components.custom.construct import construct
from framework.components.custom.loader import UserCodeError, user_traceback
from framework.components.custom.names import resolve_class_name
from framework.components.custom.responses import requests_response_of
from framework.components.http.error_handler import Resolution, default_error_handler, default_resolution
from framework.components.http.request import RequestParts
from framework.components.http.transport import HttpResponse
from framework.components.partitions import ReadParent, RoutedPartition
from framework.components.slices import StreamSlice
from framework.errors import ConfigError, DecodeError, FrameworkError, TransportError, place_suffix
from framework.models import custom as models

__all__ = [
    "CustomAuth",
    "CustomBackoff",
    "CustomDecoding",
    "CustomErrorHandling",
    "CustomExtractor",
    "CustomFilter",
    "CustomNormalization",
    "CustomPaginationStrategy",
    "CustomRouter",
    "CustomSchema",
    "CustomStateMigration",
    "CustomTransformation",
    "UserCall",
    "signs_requests",
]

T = TypeVar("T")

# -- calling user code ----------------------------------------------------------------------


class UserCall:
    """Calls the user's object; an exception from its code becomes a :class:`UserCodeError`.

    ``airbyte`` is the airbyte-cdk bridge module when the object was built by
    airbyte-cdk (its class subclasses one of Airbyte's): slices and records
    are then handed over as Airbyte's types (:meth:`slice`, :meth:`record`).
    """

    __slots__ = ("airbyte", "class_name", "kind", "mask", "place", "stream", "user_object")

    def __init__(self, user_object: Any, model: models.CustomComponent, ctx: BuildContext, path: tuple,
                 airbyte: Any = None):
        self.user_object = user_object
        self.kind = model.kind
        self.class_name = model.class_name
        self.place = ctx.place(path)
        self.mask = ctx.mask
        self.airbyte = airbyte
        self.stream = str(model.parameters.get("name") or "")  # the stream's name, as $parameters hand it down

    def slice(self, stream_slice: Any) -> Any:
        """``stream_slice`` as the object takes it (ours, or airbyte-cdk's ``StreamSlice``)."""
        return stream_slice if self.airbyte is None else self.airbyte.to_airbyte_slice(stream_slice)

    def record(self, record: Any, stream_slice: Any = None) -> Any:
        """A record as the object takes it where Airbyte hands a ``Record`` (a pagination's ``last_record``)."""
        return record if self.airbyte is None else self.airbyte.to_airbyte_record(record, self.stream, stream_slice)

    def __call__(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except FrameworkError:
            raise
        except Exception as exc:
            raise self.error(exc, getattr(method, "__name__", "?")) from exc

    def each(self, items: Iterable[T], method: str) -> Iterator[T]:
        """``items`` (a generator of the user's, say), with its errors turned into UserCodeErrors."""
        iterator = iter(items)
        while True:
            try:
                item = next(iterator)
            except StopIteration:
                return
            except FrameworkError:
                raise
            except Exception as exc:
                raise self.error(exc, method) from exc
            yield item

    def error(self, exc: Exception, method: str) -> UserCodeError:
        return UserCodeError(
            f"the {self.kind} `{self.class_name}` raised {type(exc).__name__} in `{method}`: {self.mask(str(exc))}",
            user_traceback=user_traceback(exc, 1, self.mask), place=self.place)


def _bridge() -> Any:
    """The airbyte-cdk bridge module (:mod:`framework.components.custom.airbyte`), or None where it is absent."""
    try:
        return importlib.import_module("framework.components.custom.airbyte")
    except ModuleNotFoundError as exc:
        if exc.name != "framework.components.custom.airbyte":
            raise
        return None


def user_component(model: models.CustomComponent, ctx: BuildContext, path: tuple) -> UserCall:
    """The user's object for ``model``: its class loaded through the gate, built by Airbyte's convention
    (by airbyte-cdk itself, through the bridge, when the class subclasses one of airbyte-cdk's)."""
    ref = resolve_class_name(model.class_name, ctx.base_dir or os.getcwd())
    place = ctx.place(path + ("class_name",)) or ctx.place(path)
    cls = ctx.code.load_class(ref, model.kind, place)
    bridge = _bridge()
    if bridge is not None and bridge.is_airbyte_class(cls):
        built = bridge.build_airbyte_component(model, ctx.config, place=ctx.place(path), stream_name=ctx.stream)
        return UserCall(built, model, ctx, path, airbyte=bridge)
    return UserCall(construct(cls, model, ctx, path), model, ctx, path)


def _records(items: Any, call: UserCall, method: str) -> list[dict]:
    """What a user's method answered as a list of record dicts."""
    records = []
    for record in call.each(items if items is not None else (), method):
        if type(record) is not dict:
            if not isinstance(record, Mapping):
                raise DecodeError(f"the {call.kind} `{call.class_name}` gave a {type(record).__name__} from "
                                  f"`{method}`, not a record (a mapping)", place=call.place)
            record = dict(record)
        records.append(record)
    return records


# -- records ----------------------------------------------------------------------------------


class CustomExtractor:
    """The record selector's extractor: ``extract_records(response)``."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object
        self._extract = call.user_object.extract_records

    def extract(self, response: HttpResponse) -> list[dict]:
        call = self.call
        return _records(call(self._extract, requests_response_of(response)), call, "extract_records")


class CustomFilter:
    """The record selector's filter: ``filter_records(records, stream_state, stream_slice, next_page_token)``."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object
        self._filter = call.user_object.filter_records

    def keep(self, records: list[dict], variables: Mapping[str, Any]) -> list[dict]:
        call = self.call
        kept = call(self._filter, records, stream_state=variables.get("stream_state") or {},
                    stream_slice=call.slice(variables.get("stream_slice")),
                    next_page_token=variables.get("next_page_token") or None)
        return _records(kept, call, "filter_records")


class CustomTransformation:
    """A stream transformation: ``transform(record, config, stream_state, stream_slice)``, in place."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object
        self._transform = call.user_object.transform
        self._slice = call.slice if call.airbyte is not None else None

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict:
        try:  # inline rather than through UserCall: this runs once per record
            stream_slice = variables.get("stream_slice")
            self._transform(record, config=variables.get("config"), stream_state=variables.get("stream_state"),
                            stream_slice=stream_slice if self._slice is None else self._slice(stream_slice))
        except FrameworkError:
            raise
        except Exception as exc:
            raise self.call.error(exc, "transform") from exc
        return record


@builds("CustomRecordExtractor")
def build_custom_extractor(model: models.CustomRecordExtractor, ctx: BuildContext, path: tuple) -> CustomExtractor:
    return CustomExtractor(user_component(model, ctx, path))


@builds("CustomRecordFilter")
def build_custom_filter(model: models.CustomRecordFilter, ctx: BuildContext, path: tuple) -> CustomFilter:
    return CustomFilter(user_component(model, ctx, path))


@builds("CustomTransformation")
def build_custom_transformation(model: models.CustomTransformation, ctx: BuildContext,
                                path: tuple) -> CustomTransformation:
    return CustomTransformation(user_component(model, ctx, path))


# -- pagination -------------------------------------------------------------------------------


def _takes_keyword(method: Callable[..., Any], name: str) -> bool:
    """Whether ``method`` takes the keyword argument ``name`` (or any, with ``**kwargs``)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or p.kind == p.VAR_KEYWORD
               for p in parameters)


def _positional_count(method: Callable[..., Any]) -> int:
    """How many positional arguments ``method`` takes (a large number for ``*args``)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return 99
    count = 0
    for parameter in parameters:
        if parameter.kind == parameter.VAR_POSITIONAL:
            return 99
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


class CustomPaginationStrategy:
    """A ``DefaultPaginator``'s strategy: ``initial_token`` and ``next_page_token(...)``.

    A new object of the user's class is built for each slice (Airbyte's
    strategies keep the slice's paging state in their attributes); the
    paginator around it injects the token and detects a token sent twice.
    """

    checks_loops = True

    def __init__(self, new: Callable[[], UserCall]):
        self.new = new
        first = new()
        self.user_object = first.user_object
        self._with_previous = _positional_count(first.user_object.next_page_token) >= 4
        #: whether ``next_page_token`` takes ``page_size_override`` (the page size a reduction asked for)
        self.takes_page_size = _takes_keyword(first.user_object.next_page_token, "page_size_override")

    def first(self) -> tuple[Any, Any]:
        call = self.new()
        token = call(lambda: getattr(call.user_object, "initial_token", None))
        return call, token

    def request_page_size(self, state: UserCall) -> int | None:
        size = getattr(state.user_object, "get_page_size", None)
        return state(size) if size is not None else None

    def following(self, state: UserCall, response: HttpResponse, records: list, variables: Mapping[str, Any],
                  token: Any) -> tuple[Any, Any] | None:
        last = state.record(records[-1], variables.get("stream_slice")) if records else None
        args: tuple = (requests_response_of(response), len(records), last)
        if self._with_previous:
            args += (token,)
        following = state(state.user_object.next_page_token, *args)
        if following is None:
            return None
        return state, following

    def following_reduced(self, state: UserCall, response: HttpResponse, records: list,
                          variables: Mapping[str, Any], token: Any, size: int) -> tuple[Any, Any] | None:
        """:meth:`following` after a page asked for with the reduced ``size`` (``page_size_override``, as Airbyte
        tells it); a class that does not take it is refused when the retriever is built."""
        last = state.record(records[-1], variables.get("stream_slice")) if records else None
        args: tuple = (requests_response_of(response), len(records), last)
        if self._with_previous:
            args += (token,)
        following = state(state.user_object.next_page_token, *args, page_size_override=size)
        if following is None:
            return None
        return state, following


@builds("CustomPaginationStrategy")
def build_custom_pagination(model: models.CustomPaginationStrategy, ctx: BuildContext,
                            path: tuple) -> CustomPaginationStrategy:
    return CustomPaginationStrategy(lambda: user_component(model, ctx, path))


# -- partitions ---------------------------------------------------------------------------------

_REQUEST_METHODS = ("get_request_params", "get_request_headers", "get_request_body_json", "get_request_body_data")


class CustomRouter:
    """A stream's partition router: ``stream_slices()`` become the stream's partitions.

    Partitions must hold JSON values (they go into units, Spark tasks and the
    state). A slice's ``get_request_*`` methods, where the class has them, put
    a partition's values into its requests.
    """

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object
        self._request = [(name, method) for name in _REQUEST_METHODS
                         if callable(method := getattr(call.user_object, name, None))]

    def partitions(self, read_parent: ReadParent) -> Iterator[RoutedPartition]:
        call = self.call
        for item in call.each(call(self.call.user_object.stream_slices), "stream_slices"):
            if isinstance(item, Mapping) and hasattr(item, "partition"):  # Airbyte's StreamSlice
                partition, extra = dict(item.partition), dict(getattr(item, "extra_fields", None) or {})
            elif isinstance(item, Mapping):
                partition, extra = dict(item), {}
            else:
                raise DecodeError(f"the {call.kind} `{call.class_name}` gave a {type(item).__name__} from "
                                  "`stream_slices`, not a partition (a mapping)", place=call.place)
            try:
                orjson.dumps(partition)
            except TypeError as exc:
                raise DecodeError(f"the {call.kind} `{call.class_name}` gave the partition {partition!r}, whose "
                                  f"values are not all JSON values ({exc}); partitions go into the state and to "
                                  "Spark executors: give strings, numbers, lists and mappings", place=call.place) \
                    from None
            yield RoutedPartition(partition, extra)

    def apply(self, parts: RequestParts, stream_slice: StreamSlice) -> None:
        if not self._request:
            return
        view = self.call.slice(stream_slice.view())
        for name, method in self._request:
            values = self.call(method, stream_state={}, stream_slice=view, next_page_token=None)
            if not values:
                continue
            if name == "get_request_params":
                parts.params.update(values)
            elif name == "get_request_headers":
                parts.headers.update(values)
            elif name == "get_request_body_json":
                parts.body_json().update(values)
            elif isinstance(values, Mapping):
                parts.body_data().update(values)
            else:
                parts.data = values


@builds("CustomPartitionRouter")
def build_custom_router(model: models.CustomPartitionRouter, ctx: BuildContext, path: tuple) -> CustomRouter:
    return CustomRouter(user_component(model, ctx, path))


# -- schema and state ------------------------------------------------------------------------------


class CustomSchema:
    """A stream's schema loader: ``get_json_schema()`` (called when the connector is opened)."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object

    def load(self, stream_name: str | None = None) -> dict:
        schema = self.call(self.user_object.get_json_schema)
        if not isinstance(schema, Mapping):
            raise DecodeError(f"the {self.call.kind} `{self.call.class_name}` gave a {type(schema).__name__} "
                              "from `get_json_schema`, not a JSON Schema (a mapping)", place=self.call.place)
        return dict(schema)


class CustomStateMigration:
    """A saved state's migration: ``should_migrate(state)``, then ``migrate(state)`` (before the stream's sync)."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object

    def apply(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        call = self.call
        if not call(self.user_object.should_migrate, state):
            return state
        migrated = call(self.user_object.migrate, state)
        if not isinstance(migrated, Mapping):
            raise DecodeError(f"the {call.kind} `{call.class_name}` gave a {type(migrated).__name__} from "
                              "`migrate`, not a state (a mapping)", place=call.place)
        return migrated


@builds("CustomSchemaLoader")
def build_custom_schema(model: models.CustomSchemaLoader, ctx: BuildContext, path: tuple) -> CustomSchema:
    return CustomSchema(user_component(model, ctx, path))


@builds("CustomStateMigration")
def build_custom_state_migration(model: models.CustomStateMigration, ctx: BuildContext,
                                 path: tuple) -> CustomStateMigration:
    return CustomStateMigration(user_component(model, ctx, path))


# -- HTTP: authentication, errors and backoff --------------------------------------------------------


class CustomAuth:
    """A requester's authenticator, called as Airbyte calls it.

    ``get_auth_header()`` (and ``get_request_params()`` where defined) add their headers and parameters; then,
    when the class has a ``__call__`` of its own (requests' auth protocol, ``__call__(request) -> request``, as
    a ``NoAuth`` subclass that signs requests itself has), it is called with the request as a
    :class:`requests.PreparedRequest`, and the headers and query parameters it set or changed go into the
    request. Everything either way added counts as credentials (masked, and kept from a redirect to another
    host: :mod:`framework.components.http.credentials`).
    """

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object
        self._params = getattr(call.user_object, "get_request_params", None)
        self._header = getattr(call.user_object, "get_auth_header", None)
        self._sign: Callable[[requests.PreparedRequest], Any] | None = \
            call.user_object if signs_requests(call.user_object) else None
        self._shown: tuple[str, ...] = ()

    def apply(self, parts: RequestParts) -> None:
        headers = (self.call(self._header) if callable(self._header) else None) or {}
        params = self.call(self._params) if callable(self._params) else None
        added = {str(k): v for k, v in headers.items() if v is not None}
        parts.headers.update(added)
        values = [str(v) for v in added.values()] + [str(v) for v in (params or {}).values()]
        if params:
            parts.params.update(params)
        if self._sign is not None:
            values += self._signed(parts)
        self._shown = tuple(values + [v.split(" ", 1)[1] for v in values if " " in v])

    def _signed(self, parts: RequestParts) -> list[str]:
        """Call the object on ``parts`` as a prepared request; put back what it set; the values it set."""
        assert self._sign is not None
        request = parts.to_request()
        prepared = requests.PreparedRequest()
        prepared.prepare(method=request.method, url=request.url, params=list(request.params),
                         headers=dict(request.headers))
        before_headers = dict(prepared.headers)
        before_query = parse_qsl(urlsplit(prepared.url or "").query, keep_blank_values=True)
        result = self.call(self._sign, prepared)
        signed = result if isinstance(result, requests.PreparedRequest) else prepared
        shown: list[str] = []
        for name, value in signed.headers.items():
            if before_headers.get(name) != value:
                parts.headers[name] = value
                shown.append(str(value))
        for name in set(before_headers) - set(signed.headers):
            parts.headers.pop(name, None)
        after_query = parse_qsl(urlsplit(signed.url or "").query, keep_blank_values=True)
        for name, value in after_query:
            if (name, value) not in before_query:
                parts.params[name] = value
                shown.append(value)
        return shown

    def refresh(self) -> bool:
        return False

    def secrets(self) -> tuple[str, ...]:
        return self._shown


def signs_requests(user_object: Any) -> bool:
    """Whether the object's class has a ``__call__`` of its own (requests' auth protocol) to call on each request.

    ``requests.auth.AuthBase``'s (which only raises) does not count, nor airbyte-cdk's header authenticator's
    (which only sets what ``get_auth_header()`` answers, already sent)."""
    method = next((vars(klass)["__call__"] for klass in type(user_object).__mro__ if "__call__" in vars(klass)), None)
    if method is None or method is requests.auth.AuthBase.__call__:
        return False
    qualname = getattr(method, "__qualname__", "")
    module = getattr(method, "__module__", "") or ""
    if module.startswith("airbyte_cdk.") and qualname == "AbstractHeaderAuthenticator.__call__":
        return False
    return callable(method)


_ACTIONS = {"SUCCESS", "FAIL", "RETRY", "IGNORE", "RATE_LIMITED"}


def _enum_text(value: Any) -> str | None:
    if value is None:
        return None
    text = getattr(value, "name", None) or getattr(value, "value", None) or value
    return str(text)


class CustomErrorHandling:
    """A requester's error handler: ``interpret_response(response_or_exception)`` answers a resolution."""

    def __init__(self, call: UserCall, fallback: Any):
        self.call = call
        self.user_object = call.user_object
        retries = getattr(call.user_object, "max_retries", None)
        self.max_retries = retries if isinstance(retries, int) and not isinstance(retries, bool) else 5
        self._fallback = fallback
        self._backoff = getattr(call.user_object, "backoff_time", None)

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        given: Any = requests_response_of(response) if response is not None else \
            requests.ConnectionError(error.reason if error is not None else "no response")
        found = self.call(self.user_object.interpret_response, given)
        if found is None:
            return default_resolution(response, error)
        action = _enum_text(getattr(found, "response_action", None))
        if action is None or action.upper() not in _ACTIONS:
            raise DecodeError(f"the {self.call.kind} `{self.call.class_name}` answered {found!r} from "
                              "`interpret_response`; give an object with `response_action` (SUCCESS, RETRY, FAIL, "
                              "IGNORE or RATE_LIMITED)", place=self.call.place)
        failure = _enum_text(getattr(found, "failure_type", None))
        message = getattr(found, "error_message", None)
        return Resolution(action.upper(), failure.lower() if failure else None, message)

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        if callable(self._backoff):
            seconds = self.call(self._backoff, requests_response_of(response) if response is not None else None,
                                attempt)
            if seconds is not None:
                return float(seconds)
        return self._fallback.backoff(response, attempt)


class CustomBackoff:
    """A ``DefaultErrorHandler``'s backoff strategy: ``backoff_time(response_or_exception, attempt_count)``."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object

    def wait(self, response: HttpResponse | None, attempt: int) -> float | None:
        seconds = self.call(self.user_object.backoff_time,
                            requests_response_of(response) if response is not None else None, attempt)
        return None if seconds is None else float(seconds)


@builds("CustomAuthenticator")
def build_custom_auth(model: models.CustomAuthenticator, ctx: BuildContext, path: tuple) -> CustomAuth:
    return CustomAuth(user_component(model, ctx, path))


@builds("CustomErrorHandler")
def build_custom_error_handler(model: models.CustomErrorHandler, ctx: BuildContext, path: tuple) -> CustomErrorHandling:
    return CustomErrorHandling(user_component(model, ctx, path), default_error_handler(ctx))


@builds("CustomBackoffStrategy")
def build_custom_backoff(model: models.CustomBackoffStrategy, ctx: BuildContext, path: tuple) -> CustomBackoff:
    return CustomBackoff(user_component(model, ctx, path))


# -- responses and schemas -----------------------------------------------------------------------------


class CustomDecoding:
    """A retriever's decoder: ``decode(response)`` gives the response's documents.

    The runtime then reads the decoded body: the one document, or the list of
    them when there are several (each one a record with an empty
    ``field_path``, as Airbyte's JSON Lines decoder gives them).
    """

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object

    def decoded(self, response: HttpResponse) -> HttpResponse:
        call = self.call
        documents = list(call.each(call(self.user_object.decode, requests_response_of(response)), "decode"))
        body: Any = documents[0] if len(documents) == 1 else [dict(d) if isinstance(d, Mapping) else d
                                                              for d in documents]
        if isinstance(body, Mapping) and type(body) is not dict:
            body = dict(body)
        return HttpResponse(response.status, response.headers, response.content, response.request, body)


class CustomNormalization:
    """A record selector's schema normalization: ``transform(record, schema)`` on each record, in place."""

    def __init__(self, call: UserCall):
        self.call = call
        self.user_object = call.user_object

    def normalizer_for(self, schema: Mapping[str, Any]) -> Callable[[dict], None]:
        transform, error = self.user_object.transform, self.call.error

        def normalize(record: dict) -> None:
            try:  # inline: once per record
                transform(record, schema)
            except FrameworkError:
                raise
            except Exception as exc:
                raise error(exc, "transform") from exc

        return normalize


@builds("CustomDecoder")
def build_custom_decoder(model: models.CustomDecoder, ctx: BuildContext, path: tuple) -> CustomDecoding:
    return CustomDecoding(user_component(model, ctx, path))


@builds("CustomSchemaNormalization")
def build_custom_normalization(model: models.CustomSchemaNormalization, ctx: BuildContext,
                               path: tuple) -> CustomNormalization:
    return CustomNormalization(user_component(model, ctx, path))


@builds("CustomRequester", "CustomRetriever", "CustomIncrementalSync")
def build_custom_drives_the_read(model: models.CustomComponent, ctx: BuildContext, path: tuple) -> NoReturn:
    """The kinds that drive a read themselves: never built here, and a ``CustomIncrementalSync`` is refused.

    A stream with a ``CustomRetriever`` or ``CustomRequester`` is read by
    airbyte-cdk (:func:`framework.components.stream.build_stream` does not
    build its retriever), so only a ``CustomIncrementalSync`` comes here: it is
    refused when the connector opens, with the reason.
    """
    kind = getattr(model, "type", "Custom")
    place = place_suffix(ctx.place(path + ("class_name",)) or ctx.place(path))
    if kind == "CustomIncrementalSync":
        raise ConfigError(
            f"`{model.class_name}` is a CustomIncrementalSync, which run-manifest cannot run{place}: airbyte-cdk "
            "7.39.1, whose reader runs the classes that drive a read, no longer has this kind either. Describe "
            "the cursor with a DatetimeBasedCursor, with custom components of the "
            "other kinds where needed"
        )
    raise ConfigError(f"`{model.class_name}` is a {kind}: it is read through airbyte-cdk as part of its stream, "
                      f"and cannot stand apart from one{place}")
