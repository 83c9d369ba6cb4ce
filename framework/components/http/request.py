"""A request as a value, and how one is assembled from its parts.

:class:`RequestParts` collects what the requester, the authenticator, the
paginator, the cursor and the partition router each add to a request;
:meth:`RequestParts.to_request` freezes it into an :class:`HttpRequest` that
the transport sends. :class:`Injection` is the runtime form of a manifest
RequestOption: *where* a value goes, kept apart from *what* the value is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from msgspec import Struct, field

from framework.catalog import builds
from framework.components.http.credentials import Credentials

if TYPE_CHECKING:  # pragma: no cover - the build context imports the transport, which imports this module
    from framework.components.context import BuildContext
    from framework.models.requests import RequestOption, RequestPath

Mask = Callable[[str], str]


def _no_mask(text: str) -> str:
    return text


class HttpRequest(Struct, frozen=True):
    """One HTTP request, ready to send. ``params`` are query parameters in order."""

    method: str
    url: str
    params: tuple[tuple[str, str], ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    json: Any = None
    data: Any = None  # a mapping (form-encoded) or text
    stream: bool = False  # receive the body as a stream (a streamed response format: see records/decoders.py)
    credentials: Credentials | None = None  # the parts an authenticator added: kept from other hosts on a redirect

    def full_url(self) -> str:
        if not self.params:
            return self.url
        sep = "&" if "?" in self.url else "?"
        return self.url + sep + urlencode(self.params)

    def describe(self, mask: Mask = _no_mask) -> str:
        """``GET https://host/path?query`` with secrets masked: safe for messages and logs."""
        return mask(f"{self.method} {self.full_url()}")


class RequestParts(Struct):
    """A request being assembled; components add their parts, then it is frozen.

    ``path`` is the path below the base URL; ``url`` when set (a next-page URL
    from :class:`~framework.models.RequestPath`) replaces base and path.
    """

    method: str = "GET"
    url_base: str = ""
    path: str = ""
    url: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, Any] = field(default_factory=dict)
    json: dict[str, Any] | None = None
    data: dict[str, Any] | str | None = None
    stream: bool = False  # ask the transport for a streamed body

    def body_json(self) -> dict[str, Any]:
        if self.json is None:
            self.json = {}
        return self.json

    def body_data(self) -> dict[str, Any]:
        if self.data is None:
            self.data = {}
        if isinstance(self.data, str):
            raise ValueError("the request body is text already; a body_data option cannot add a field to it")
        return self.data

    def to_request(self) -> HttpRequest:
        url = self.url if self.url is not None else join_url(self.url_base, self.path)
        params = tuple((str(k), _text(v)) for k, v in self.params.items() if v is not None)
        headers = {str(k): _text(v) for k, v in self.headers.items() if v is not None}
        return HttpRequest(self.method, url, params, headers, self.json, self.data, self.stream)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def without_nulls(value: Any) -> Any:
    """``value`` with the keys whose value is null left out of every mapping in it, as Airbyte sends a
    JSON body (a template that renders to nothing is no key at all); items of lists stay."""
    if isinstance(value, Mapping):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def join_url(base: str, path: str) -> str:
    """``base`` and ``path`` joined with exactly one slash; a full URL in ``path`` wins."""
    if not path:
        return base
    if "://" in path:
        return path
    if not base:
        return path
    return base.rstrip("/") + "/" + path.lstrip("/")


class Injection(Struct, frozen=True):
    """Where a value goes: the runtime form of a manifest RequestOption.

    ``inject_into`` is ``request_parameter``, ``header``, ``body_data`` or
    ``body_json``; ``path`` is the field name, or the key path into a JSON
    body. Names are rendered when the connector is built (they may only use
    ``config`` and ``parameters``).
    """

    inject_into: str
    path: tuple[str, ...]

    def apply(self, parts: RequestParts, value: Any) -> None:
        """Put ``value`` into ``parts``; ``None`` means "send nothing"."""
        if value is None:
            return
        where = self.inject_into
        if where == "request_parameter":
            parts.params[self.path[0]] = value
        elif where == "header":
            parts.headers[self.path[0]] = value
        elif where == "body_data":
            parts.body_data()[self.path[0]] = value
        elif where == "body_json":
            node = parts.body_json()
            for key in self.path[:-1]:
                child = node.get(key)
                if not isinstance(child, dict):
                    child = node[key] = {}
                node = child
            node[self.path[-1]] = value
        else:  # pragma: no cover - the model allows only the four places
            raise ValueError(f"unknown inject_into {where!r}")


__all__ = ["HttpRequest", "Injection", "Mask", "PathInjection", "RequestParts", "build_injection",
           "build_path_injection", "injection_of", "join_url", "without_nulls"]


class PathInjection(Struct, frozen=True):
    """Where a ``RequestPath`` puts a value: in place of the request's path (a full URL replaces the whole URL)."""

    def apply(self, parts: RequestParts, value: Any) -> None:
        """Put ``value`` into ``parts``; ``None`` means "send nothing"."""
        if value is None:
            return
        text = str(value)
        if "://" in text:
            parts.url = text
        else:
            parts.path = text


def injection_of(option: RequestOption, ctx: BuildContext) -> Injection:
    """The :class:`Injection` of a RequestOption model, with its names rendered (``config``, ``parameters``)."""
    if option.field_path is not None:
        path = tuple(str(ctx.render(part, option.parameters)) for part in option.field_path)
    else:
        path = (str(ctx.render(option.field_name, option.parameters)),)
    return Injection(option.inject_into, path)


@builds("RequestOption")
def build_injection(model: RequestOption, ctx: BuildContext, path: tuple) -> Injection:
    """A RequestOption built on its own (the components that hold one call :func:`injection_of`)."""
    return injection_of(model, ctx)


@builds("RequestPath")
def build_path_injection(model: RequestPath, ctx: BuildContext, path: tuple) -> PathInjection:
    """A paginator's token sent as the next request's path (or URL)."""
    return PathInjection()
