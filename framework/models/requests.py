"""Where a request goes and what it carries: HttpRequester, RequestOption, RequestPath.

A RequestOption says *where* a value is put (query, header, body); the value
itself comes from whoever owns the option (a paginator, a cursor, a router).
"""

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import model_validator

from framework.models.auth import Authenticator
from framework.models.base import ASYNC_JOB, BASE, REQUEST, Component, spec
from framework.models.decoders import JsonDecoder  # noqa: F401  (its home before the other decoders came)
from framework.models.error_handling import ErrorHandler
from framework.models.query_properties import PropertiesFromEndpoint, QueryProperties, RequestParameter
from framework.models.request_bodies import RequestBody, effective_bodies


class RequestOption(Component):
    """Puts a value into one named place of the outgoing request."""

    takes_parameters = False

    type: Literal["RequestOption"] = spec("Component type.", "RequestOption", "RequestOption")
    inject_into: Literal["request_parameter", "header", "body_data", "body_json"] = spec(
        "Where the value goes: a query parameter, a header, a form-encoded body field or a JSON body field.",
        "request_parameter",
    )
    field_name: str | None = spec(
        "Name of the parameter, header or body field. Give this or `field_path`.",
        "page_size",
        None,
        template=BASE,
    )
    field_path: tuple[str, ...] | None = spec(
        "Path of keys into a nested JSON body (only with `inject_into: body_json`). Give this or `field_name`.",
        ["query", "filter", "since"],
        None,
        template=BASE,
    )

    @model_validator(mode="after")
    def _one_name(self) -> "RequestOption":
        if (self.field_name is None) == (self.field_path is None):
            raise ValueError("give exactly one of `field_name` or `field_path`")
        if self.field_path is not None and self.inject_into != "body_json":
            raise ValueError("`field_path` only works with `inject_into: body_json`; use `field_name` instead")
        return self


class RequestPath(Component):
    """Puts the value in place of the request's path (a next-page URL, for instance)."""

    takes_parameters = False

    type: Literal["RequestPath"] = spec("Component type.", "RequestPath", "RequestPath")


RequestValues = Mapping[str, Any] | str


class HttpRequester(Component):
    """Builds and sends the HTTP requests of a stream."""

    type: Literal["HttpRequester"] = spec("Component type.", "HttpRequester", "HttpRequester")
    url_base: str = spec(
        "Base URL of the API; `path` is appended to it.",
        "https://api.example.com/v1/",
        template=REQUEST | ASYNC_JOB,
    )
    path: str = spec(
        "Path of the endpoint below `url_base`.",
        "/orders/{{ stream_partition.account_id }}/items",
        "",
        template=REQUEST | ASYNC_JOB,
    )
    http_method: Literal["GET", "POST"] = spec("HTTP method of the requests.", "GET", "GET")
    authenticator: Authenticator | None = spec(
        "How requests are authenticated; none when left out.",
        {"type": "BearerAuthenticator", "api_token": "{{ config['api_key'] }}"},
        None,
    )
    error_handler: ErrorHandler | None = spec(
        "What to do with error responses; by default 429 and 5xx are retried with exponential backoff.",
        {"type": "DefaultErrorHandler", "max_retries": 3},
        None,
        default_type="DefaultErrorHandler",
    )
    request_parameters: Mapping[str, RequestParameter] | str = spec(
        "Query parameters added to every request. Keys and values are templates; "
        "a single template string must render an object. One value may be a QueryProperties: "
        "that parameter carries the properties of each request, comma-separated.",
        {"sort": "updated_at", "since": "{{ stream_interval.start_time }}"},
        default_factory=dict,
        template=REQUEST | ASYNC_JOB,
        result="object",
    )
    request_headers: RequestValues = spec(
        "Headers added to every request. Keys and values are templates; "
        "a single template string must render an object.",
        {"Accept": "application/json"},
        default_factory=dict,
        template=REQUEST | ASYNC_JOB,
        result="object",
    )
    request_body_json: RequestValues = spec(
        "JSON body of the request (POST). Strings anywhere inside are templates; "
        "a single template string must render an object.",
        {"query": {"updated_after": "{{ stream_interval.start_time }}"}},
        default_factory=dict,
        template=REQUEST | ASYNC_JOB,
        result="object",
    )
    request_body_data: RequestValues = spec(
        "Form-encoded body of the request (POST). Keys and values are templates; "
        "a template string is sent as rendered.",
        {"grant": "all"},
        default_factory=dict,
        template=REQUEST | ASYNC_JOB,
        result="any",
    )
    query_properties: QueryProperties | None = spec(
        "The properties to ask for, read by templates as `stream_slice.extra_fields['query_properties']` "
        "(a list; one request per chunk of it).",
        {"type": "QueryProperties", "property_list": ["name", "email"]},
        None,
    )
    fetch_properties_from_endpoint: PropertiesFromEndpoint | None = spec(
        "Deprecated: use `query_properties` with this as its `property_list`.",
        {"type": "PropertiesFromEndpoint", "property_field_path": ["name"],
         "retriever": {"$ref": "#/definitions/properties_retriever"}},
        None,
    )
    credential_redirect_hosts: list[str] = spec(
        "Hosts a redirect may take the authenticator's credentials to (an API that redirects to a CDN that "
        "needs them). On a redirect to any other scheme, host or port every credential the authenticator "
        "injected (headers, query parameters, body fields, cookies) is dropped.",
        ["cdn.example.com"],
        default_factory=list,
    )
    request_body: RequestBody | None = spec(
        "Body of the request (POST): a JSON object, a URL-encoded form, plain text or a GraphQL query. "
        "It takes the place of `request_body_json` (JSON, GraphQL) or `request_body_data` (form, text).",
        {"type": "RequestBodyJsonObject", "value": {"since": "{{ stream_interval.start_time }}"}},
        None,
    )
    use_cache: bool = spec(
        "Keep this requester's successful GET answers for the sync, so a request made again is not sent again. "
        "The requesters of streams used as parents keep them unless this is written `false` (for an API whose "
        "pages move under a scroll cursor).", False, False
    )
    max_response_bytes: int | None = spec(
        "The most bytes one response body read whole may have once decompressed (counted as it arrives, so a "
        "compressed body that unpacks to gigabytes stops there); a larger one fails the read at once, without "
        "retrying. Unset: run-manifest's `--max-response-size`, else 256 MiB.",
        536870912,
        None,
    )
    request_deadline: float | None = spec(
        "The most seconds one attempt of a request may take, from connecting to the last byte of its body "
        "(each read also has its own 60 s timeout); an attempt past it is retried like a timeout. Unset: "
        "run-manifest's `--request-deadline`, else 600.",
        120,
        None,
    )

    @model_validator(mode="after")
    def _positive_limits(self) -> "HttpRequester":
        if self.max_response_bytes is not None and self.max_response_bytes <= 0:
            raise ValueError("`max_response_bytes` must be a positive number of bytes, such as 268435456 (256 MiB)")
        if self.request_deadline is not None and not 0 < self.request_deadline < float("inf"):
            raise ValueError("`request_deadline` must be a positive number of seconds, such as 600")
        return self

    @model_validator(mode="after")
    def _one_body(self) -> "HttpRequester":
        body_json, body_data = self.bodies()
        if body_json and body_data:
            if self.request_body is not None:
                raise ValueError(f"`request_body` ({self.request_body.type}) and the older "
                                 f"`{'request_body_data' if self.request_body_data else 'request_body_json'}` "
                                 "would both give the body; keep only `request_body`")
            raise ValueError("give at most one of `request_body_json` and `request_body_data`")
        return self

    def bodies(self) -> tuple[RequestValues, RequestValues]:
        """``(JSON body, form or text body)`` with ``request_body`` folded into the older fields."""
        return effective_bodies(self.request_body, self.request_body_json, self.request_body_data)

