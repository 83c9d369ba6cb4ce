"""The runtime of an HttpRequester: what a stream's requests look like, and sending them.

:meth:`Requester.parts` renders the URL, path, query parameters, headers and
body for one request from the per-request variables (``stream_slice``,
``next_page_token``, ...); the paginator, the cursor and the partition router
then add their own values (see :class:`~framework.components.http.request.Injection`)
before :meth:`Requester.send` hands the request to the
:class:`~framework.components.http.client.HttpClient`, which authenticates, retries and
interprets errors.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.client import Authenticator, HttpClient
from framework.components.http.error_handler import ErrorHandler, default_error_handler
from framework.components.http.request import HttpRequest, RequestParts, without_nulls
from framework.components.http.response_cache import caches_requests
from framework.components.http.response_limits import limits_from_environment, requester_limits
from framework.components.http.transport import HttpResponse
from framework.components.templates import TemplateValue
from framework.errors import InterpolationError, ReadError
from framework.masking import Mask, masking_credentials
from framework.models import HttpRequester, QueryProperties


class Requester(Struct, frozen=True):
    method: str
    url_base: TemplateValue
    path: TemplateValue
    params: TemplateValue
    headers: TemplateValue
    body_json: TemplateValue | None
    body_data: TemplateValue | None
    client: HttpClient
    parameters: Mapping[str, Any]
    mask: Mask
    place: str | None = None
    stream: bool = False  # the body is read as a stream (set by the retriever for a streamed response format)

    def parts(self, variables: Mapping[str, Any]) -> RequestParts:
        """The request's own parts for these variables (before pagination and slice options)."""
        variables = {**variables, "parameters": self.parameters}
        try:
            parts = RequestParts(
                method=self.method,
                url_base=self.url_base.render(variables),
                path=self.path.render(variables),
                params=_drop_empty(self.params.render(variables)),
                headers=_drop_empty(self.headers.render(variables)),
                stream=self.stream,
            )
            if self.body_json is not None:
                body = self.body_json.render(variables)
                # a constant body is shared by every request (its nulls were left out when built):
                # options are put into a copy of it
                constant = self.body_json.constant
                if body and not constant:
                    body = without_nulls(body)
                parts.json = (copy.deepcopy(dict(body)) if constant else dict(body)) if body else None
            if self.body_data is not None:
                data = self.body_data.render(variables)
                # a form field that renders to nothing is left out, as Airbyte does
                parts.data = (_drop_empty(data) if isinstance(data, Mapping) else str(data)) if data else None
        except InterpolationError as exc:
            raise ReadError(f"the request could not be built: {exc}", place=self.place) from None
        return parts

    def describe(self, request: HttpRequest) -> str:
        """Method and URL of ``request`` with secrets masked."""
        return request.describe(self.mask)

    def hide_secrets(self, exc: ReadError) -> ReadError:
        """``exc`` with secrets masked in its message (a response body may echo a token); returns ``exc``."""
        exc.reason = self.mask(exc.reason)
        exc.args = (exc.reason,)
        if exc.request:
            exc.request = self.mask(exc.request)
        return exc

    def send(self, parts: RequestParts) -> HttpResponse | None:
        """Send; None when the error handler says to ignore the response."""
        try:
            return self.client.send(parts)
        except ReadError as exc:
            exc.with_context(place=self.place)
            raise


def _drop_empty(values: Any) -> dict:
    # An option that renders to nothing (an optional config value left out) is not sent.
    if not values:
        return {}
    if not isinstance(values, Mapping):
        raise InterpolationError(f"request options must render to an object, got {type(values).__name__}")
    return {k: v for k, v in values.items() if v is not None and v != ""}


def _holds_properties(params: Any) -> bool:
    """Whether ``request_parameters`` hold QueryProperties among their values."""
    return isinstance(params, Mapping) and any(isinstance(v, QueryProperties) for v in params.values())


def plain_parameters(params: Any) -> Any:
    """``request_parameters`` without its QueryProperties (the retriever sends those, chunk by chunk)."""
    if _holds_properties(params):
        return {k: v for k, v in params.items() if not isinstance(v, QueryProperties)}
    return params


def asks_for_properties(model: Any) -> bool:
    """Whether a requester model has QueryProperties (in ``request_parameters``, ``query_properties`` or
    ``fetch_properties_from_endpoint``): only then the retriever loads their runtime
    (:mod:`framework.components.query_properties`)."""
    if not isinstance(model, HttpRequester):
        return False
    return (model.query_properties is not None or model.fetch_properties_from_endpoint is not None
            or _holds_properties(model.request_parameters))


@builds("HttpRequester")
def build_requester(model: HttpRequester, ctx: BuildContext, path: tuple) -> Requester:
    engine = ctx.engine
    assert engine is not None  # BuildContext sets it
    authenticator: Authenticator | None = (
        ctx.build(model.authenticator, path + ("authenticator",)) if model.authenticator else None
    )
    handler: ErrorHandler
    if model.error_handler is not None:
        handler = ctx.build(model.error_handler, path + ("error_handler",))
    else:
        handler = default_error_handler(ctx)
    client = HttpClient(ctx.transport, handler, authenticator, sleep=ctx.sleep, mask=ctx.mask, stream=ctx.stream,
                        circuits=ctx.circuits, budget=ctx.budget, in_flight=ctx.in_flight,
                        limits=requester_limits(limits_from_environment(), model.max_response_bytes,
                                                model.request_deadline),
                        credential_hosts=tuple(model.credential_redirect_hosts),
                        cache=ctx.response_cache if caches_requests(ctx.stream, ctx.parent_streams, model.use_cache,
                                                                    "use_cache" in model.model_fields_set, path)
                        else None)
    mask = ctx.mask if authenticator is None else masking_credentials(authenticator, ctx.mask)
    body_json, body_data = model.bodies()  # `request_body` folded into the older fields, as Airbyte does

    def value(raw: Any, result: str = "string", inner: str = "string") -> TemplateValue:
        return TemplateValue(raw, engine, result, inner)

    return Requester(
        method=model.http_method,
        url_base=value(model.url_base),
        path=value(model.path),
        params=value(plain_parameters(model.request_parameters), "object"),
        headers=value(model.request_headers, "object"),
        body_json=value(without_nulls(body_json) if isinstance(body_json, Mapping) else body_json, "object", "any")
        if body_json else None,
        body_data=value(body_data, "any") if body_data else None,
        client=client,
        parameters=model.parameters,
        mask=mask,
        place=ctx.place(path),
    )


__all__ = ["Requester", "build_requester"]
