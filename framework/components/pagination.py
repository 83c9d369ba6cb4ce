"""Paginators: which page to ask for next, and when there is none.

A manifest's ``DefaultPaginator`` (or ``NoPagination``) is built once into a
:class:`Paginator`, an immutable object shared by every thread reading the
stream. Each stream slice calls :meth:`Paginator.start` for a :class:`Pager`
that holds that slice's state (the current token, the tokens already seen)::

    pager = paginator.start()
    while True:
        parts = ...                       # the requester assembles the request,
        pager.apply(parts)                # rendering templates with pager.token_variables()
        response = send(parts.to_request())
        records = extract(response)
        if not pager.advance(response, records, variables):
            break

The three strategies behave as in Airbyte's declarative language:

* ``CursorPagination`` renders ``cursor_value`` from the response; the pages
  end when ``stop_condition`` renders true or the token is empty or false
  (:func:`no_next_page`: ``{}``, ``[]``, ``0``, ``False``, blank text). A lookup
  through a key the response does not have (``response['meta']['next']`` on a
  body without ``meta``) fails the read, as in airbyte-cdk. A token the
  API already sent for this slice raises
  :class:`~framework.errors.PaginationLoopError` instead of reading forever.
* ``PageIncrement`` counts pages from ``start_from_page``; a page with fewer
  records than ``page_size`` (or none) is the last.
* ``OffsetIncrement`` adds each page's record count to the offset; a short or
  empty page is the last.

Templates are compiled when the paginator is built and rendered once per page
at most (never per record); page sizes that only read ``config`` and
``parameters`` are rendered once, at build time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from msgspec import Struct
from requests.structures import CaseInsensitiveDict
from requests.utils import parse_header_links

from framework.components.context import BuildContext, builds
from framework.components.http.request import Injection, PathInjection, RequestParts
from framework.components.http.transport import HttpResponse
from framework.errors import ConfigError, InterpolationError, PaginationLoopError, ReadError, place_suffix
from framework.interpolation import TemplateEngine
from framework.masking import Mask
from framework.models.pagination import (
    CursorPagination,
    DefaultPaginator,
    NoPagination,
    OffsetIncrement,
    PageIncrement,
)

__all__ = [
    "CursorStrategy",
    "NoPaginator",
    "OffsetStrategy",
    "PageNumberStrategy",
    "PaginationStrategy",
    "Pager",
    "Paginator",
    "StrategyPager",
    "StrategyPaginator",
    "build_cursor_strategy",
    "build_offset_strategy",
    "build_page_number_strategy",
    "no_next_page",
    "parse_link_header",
]

_SizedModel = CursorPagination | PageIncrement | OffsetIncrement
_SHOWN_TOKEN_CHARS = 80
_NO_TOKEN: Mapping[str, Any] = {"next_page_token": {}}


class Pager(Protocol):
    """The pagination state of one stream slice."""

    token: Any
    size_override: int | None  # a reduced page size to send instead (REDUCE_PAGE_SIZE)

    def token_variables(self) -> dict: ...

    def page_size(self) -> int | None: ...

    def apply(self, parts: RequestParts) -> None: ...

    def advance(self, response: HttpResponse, records: list, variables: Mapping[str, Any]) -> bool: ...


class Paginator(Protocol):
    """Shared by all threads of a stream; :meth:`start` gives fresh state for one slice."""

    def start(self) -> Pager: ...


# -- what templates see ----------------------------------------------------------------


def parse_link_header(text: str | None) -> dict[str, dict[str, str]]:
    """An RFC 8288 ``Link`` header as ``{rel: {"url": ..., "rel": ..., ...}}``.

    This is what ``headers.link`` holds in pagination templates, so
    ``{{ headers.link.next.url }}`` reads the next page's URL. A link without
    ``rel`` is keyed by its URL; parameter names are lower-cased.
    """
    links: dict[str, dict[str, str]] = {}
    for link in parse_header_links(text) if text else ():
        entry = {name.lower(): value for name, value in link.items()}
        links[entry.get("rel") or entry["url"]] = entry
    return links


def _decoded(response: HttpResponse) -> Any:
    try:
        return response.json()
    except ValueError:  # not JSON: templates see no body (they may read headers only)
        return None


def _headers(response: HttpResponse) -> CaseInsensitiveDict[Any]:
    """The response headers with ``link`` parsed (see :func:`parse_link_header`)."""
    headers: CaseInsensitiveDict[Any] = CaseInsensitiveDict(response.headers)
    headers["link"] = parse_link_header(response.headers.get("link"))
    return headers


class _Templates(Struct, frozen=True):
    """Renders a strategy's response templates with the page's variables."""

    engine: TemplateEngine
    parameters: Mapping[str, Any]
    wants_headers: bool

    def scope(self, variables: Mapping[str, Any], response: HttpResponse, records: list, token: Any) -> dict:
        scope = dict(variables)
        scope["parameters"] = self.parameters
        scope["response"] = _decoded(response)
        scope["headers"] = _headers(response) if self.wants_headers else response.headers
        scope["last_records"] = records
        scope["last_record"] = records[-1] if records else None
        scope["last_page_size"] = len(records)
        scope["next_page_token"] = {"next_page_token": token} if token is not None else {}
        scope["last_page_token_value"] = token
        return scope


def _reads_headers(engine: TemplateEngine, *sources: Any) -> bool:
    return any(isinstance(s, str) and "headers" in engine.compile(s).names for s in sources)


def no_next_page(token: Any) -> bool:
    """Whether a next-page token ends the pages: airbyte-cdk's rule (its DefaultPaginator stops on a token that
    is false in Python: ``None``, ``False``, ``0``, ``""``, ``{}``, ``[]``), and text of blanks only, which
    airbyte-cdk would send as it is.

    A template reads as Airbyte reads it (text that is a Python literal is that value), so a cursor that
    renders ``{}``, ``[]``, ``0`` or ``False`` ends the pages, as ``{{ headers.link.get('next', {}).get('cursor',
    {}) }}`` does on the last page.
    """
    if isinstance(token, str):
        return not token.strip()
    return not token


# -- strategies ---------------------------------------------------------------------


class PaginationStrategy(Protocol):
    """What a ``DefaultPaginator``'s ``pagination_strategy`` builds to; a new strategy implements this.

    A strategy is immutable. Its per-slice state (a page number, an offset, ...) lives in
    the pager: :meth:`first` gives the state and token of the first request,
    :meth:`following` those of the next request, or None when there is none.
    ``checks_loops``: whether a token sent again with the same page is a loop to fail on.
    """

    @property
    def checks_loops(self) -> bool: ...

    def first(self) -> tuple[Any, Any]: ...

    def request_page_size(self, state: Any) -> int | None: ...

    def following(self, state: Any, response: HttpResponse, records: list, variables: Mapping[str, Any],
                  token: Any) -> tuple[Any, Any] | None: ...


class CursorStrategy(Struct, frozen=True):
    """The next token is rendered from the response (``cursor_value``)."""

    cursor_value: str
    stop_condition: str | None
    page_size: int | None
    templates: _Templates
    checks_loops = True

    def first(self) -> tuple[Any, Any]:
        return None, None

    def request_page_size(self, state: Any) -> int | None:
        return self.page_size

    def following(self, state: Any, response: HttpResponse, records: list,
                  variables: Mapping[str, Any], token: Any) -> tuple[Any, Any] | None:
        engine = self.templates.engine
        scope = self.templates.scope(variables, response, records, token)
        if self.stop_condition is not None and engine.evaluate(self.stop_condition, scope, "boolean"):
            return None
        try:  # a lookup through a key the response lacks fails, as in airbyte-cdk (its default Undefined)
            following = engine.evaluate(self.cursor_value, scope, "any", strict_lookups=True)
        except InterpolationError as exc:
            if getattr(exc, "kind", None) != "undefined":
                raise
            raise ReadError(
                f"the next page's token could not be read from the response: {exc}. As in airbyte-cdk, a lookup "
                "through a key the response does not have fails the read rather than end the pages early; if the "
                "API leaves the key out on the last page, read it with defaults "
                "(`response.get('meta', {}).get('next')`) or add a `stop_condition`",
                failure_type="system_error") from None
        if no_next_page(following):
            return None
        return None, following


class PageNumberStrategy(Struct, frozen=True):
    """Pages numbered from ``start_from_page``; a short or empty page is the last."""

    start_from_page: int
    page_size: int | None
    inject_on_first_request: bool
    checks_loops = False

    def first(self) -> tuple[Any, Any]:
        page = self.start_from_page
        return page, (page if self.inject_on_first_request else None)

    def request_page_size(self, state: Any) -> int | None:
        return self.page_size

    def following(self, state: int, response: HttpResponse, records: list,
                  variables: Mapping[str, Any], token: Any) -> tuple[Any, Any] | None:
        count = len(records)
        if count == 0 or (self.page_size is not None and count < self.page_size):
            return None
        return state + 1, state + 1


class OffsetStrategy(Struct, frozen=True):
    """Offsets grow by each page's record count; a short or empty page is the last.

    ``page_size`` is known at build time unless its template reads ``response``;
    then it is rendered from each response (``size_template``) and the size sent
    with a request is the one rendered from the previous response (none is sent
    with the first request).
    """

    page_size: int | None
    inject_on_first_request: bool
    size_template: str | None = None
    templates: _Templates | None = None
    checks_loops = False

    def first(self) -> tuple[Any, Any]:
        return (0, self.page_size), (0 if self.inject_on_first_request else None)

    def request_page_size(self, state: tuple[int, int | None]) -> int | None:
        return state[1]

    def following(self, state: tuple[int, int | None], response: HttpResponse, records: list,
                  variables: Mapping[str, Any], token: Any) -> tuple[Any, Any] | None:
        offset, size = state
        if self.size_template is not None and self.templates is not None:
            scope = self.templates.scope(variables, response, records, token)
            size = self.templates.engine.evaluate(self.size_template, scope, "integer")
            if size <= 0:  # the API says nothing useful: only an empty page ends the reading
                size = None
        count = len(records)
        if count == 0 or (size is not None and count < size):
            return None
        offset += count
        return (offset, size), offset


# -- runtime paginators ------------------------------------------------------------


def _shown_token(token: Any, mask: Mask) -> str:
    text = token if isinstance(token, str) else repr(token)
    text = mask(text)
    if len(text) > _SHOWN_TOKEN_CHARS:
        text = text[:_SHOWN_TOKEN_CHARS] + "..."
    return f"`{text}`"


#: How often the API may send one page token again with other records before pagination fails.
MAX_TOKEN_REPEATS = 5


def _page_signature(records: list) -> tuple:
    """What tells one page from another cheaply: its size and its first and last records."""
    if not records:
        return (0,)
    return (len(records), _token_key(records[0]), _token_key(records[-1]))


def _token_key(token: Any) -> Any:
    """A hashable stand-in for a token (tokens rendered as `any` may be lists or dicts)."""
    if isinstance(token, (str, int, float, bool)):
        return (type(token).__name__, token)
    try:
        return ("json", orjson.dumps(token, option=orjson.OPT_SORT_KEYS))
    except TypeError:
        return ("repr", repr(token))


@dataclass(frozen=True)
class StrategyPaginator:
    """A ``DefaultPaginator``: a strategy, and where its token and page size go.

    ``token_into`` is None when the token is not sent; a :class:`PathInjection` sends
    it in place of the request path (a next-page URL replaces the whole URL).
    ``mask`` hides secrets in messages; ``place`` is the manifest place.
    """

    strategy: PaginationStrategy
    token_into: Injection | PathInjection | None = None
    size_into: Injection | None = None
    place: str | None = None
    mask: Mask = field(default=lambda text: text, repr=False)

    def start(self) -> StrategyPager:
        return StrategyPager(self)


class StrategyPager:
    """The pages of one stream slice under a :class:`StrategyPaginator`."""

    __slots__ = ("_done", "_seen", "_state", "_variables", "pages", "paginator", "size_override", "token")

    def __init__(self, paginator: StrategyPaginator):
        self.paginator = paginator
        self._state, self.token = paginator.strategy.first()
        self.pages = 0  # pages read so far
        self._seen: dict[Any, tuple[Any, int]] = {}  # token key -> (signature of the page that gave it, times)
        self._variables: dict | None = None
        self._done = False
        # a smaller page size asked for after REDUCE_PAGE_SIZE (framework.components.retriever)
        self.size_override: int | None = None

    def page_size(self) -> int | None:
        """The page size the strategy sends with the next request (without a reduction)."""
        return self.paginator.strategy.request_page_size(self._state)

    def token_variables(self) -> dict:
        """``{"next_page_token": {"next_page_token": token}}`` (or ``{}`` inside before a token).

        The same dict is returned until the token changes: do not modify it.
        """
        if self._variables is None:
            token = self.token
            self._variables = {"next_page_token": {"next_page_token": token} if token is not None else {}}
        return self._variables

    def apply(self, parts: RequestParts) -> None:
        """Put the page size and the current token (when there is one) into the request."""
        paginator = self.paginator
        if paginator.size_into is not None:
            size = self.size_override
            if size is None:
                size = paginator.strategy.request_page_size(self._state)
            paginator.size_into.apply(parts, size)
        token = self.token
        if token is None:
            return
        if paginator.token_into is not None:
            paginator.token_into.apply(parts, token)

    def advance(self, response: HttpResponse, records: list, variables: Mapping[str, Any]) -> bool:
        """Work out the next page from ``response``; False when this was the last page."""
        if self._done:
            return False
        self.pages += 1
        paginator = self.paginator
        strategy = paginator.strategy
        if self.size_override is not None and isinstance(strategy, OffsetStrategy):
            step = self._following_reduced(strategy, response, records, variables)
        elif self.size_override is not None and hasattr(strategy, "following_reduced"):  # a custom strategy
            step = strategy.following_reduced(self._state, response, records, variables, self.token,
                                              self.size_override)
        else:
            try:
                step = strategy.following(self._state, response, records, variables, self.token)
            except ReadError as exc:
                raise exc.with_context(place=paginator.place) from None
        if step is None:
            self._done = True
            return False
        state, token = step
        if no_next_page(token):  # whatever the strategy, as airbyte-cdk's DefaultPaginator
            self._done = True
            return False
        if strategy.checks_loops:
            self._check_loop(token, response, records)
        self._state = state
        self.token = token
        self._variables = None
        return True

    def _following_reduced(self, strategy: OffsetStrategy, response: HttpResponse, records: list,
                           variables: Mapping[str, Any]) -> tuple[Any, Any] | None:
        """The next offset after a page asked for with the reduced size: a page shorter than that size is the
        last; the configured size stays in the state for when the reduction ends."""
        offset, size = self._state
        step = strategy.following((offset, self.size_override), response, records, variables, self.token)
        if step is None or strategy.size_template is not None:
            return step
        (following, _), token = step
        return (following, size), token

    def _check_loop(self, token: Any, response: HttpResponse, records: list) -> None:
        """Fail when pagination would never end: the API sends a token again with the same page (a loop).

        The same token with other records is a repeat (a cursor many records share, say): allowed, up to
        :data:`MAX_TOKEN_REPEATS` times. A next-page URL equal to the URL just read is a loop at once.
        """
        seen = self._seen
        signature = _page_signature(records)
        paginator = self.paginator
        pages = f"{self.pages} page" + ("" if self.pages == 1 else "s")
        if isinstance(paginator.token_into, PathInjection) and response.request.method == "GET":
            # a next-page URL equal to the URL just read is a loop as well
            seen.setdefault(_token_key(response.request.full_url()), (None, 0))
        key = _token_key(token)
        found = seen.get(key)
        if key == _token_key(self.token):  # the token this page was asked with: the next request is this one
            found = (None, 0)
        if found is not None:
            before, times = found
            if before is None or before == signature:
                what = ("the token this page was asked with" if before is None else
                        "after an empty page, as when it first sent it" if not records else
                        f"after the same {len(records)} record{'' if len(records) == 1 else 's'} as when it "
                        "first sent it")
                raise PaginationLoopError(
                    f"the API returned the page token {_shown_token(token, paginator.mask)} again after {pages}: "
                    f"{what}, so pagination would never end; check `cursor_value` "
                    "(the token of the next page) and give a `stop_condition` that says when the last page is "
                    "read (`{{ not response.next_cursor }}`, `{{ response.data | length == 0 }}`)",
                    request=response.request.describe(paginator.mask),
                    place=paginator.place,
                )
            if times >= MAX_TOKEN_REPEATS:
                raise PaginationLoopError(
                    f"the API returned the page token {_shown_token(token, paginator.mask)} {times + 1} times "
                    f"(after {pages}), each time with other records: a repeat that does not end; check "
                    "`cursor_value` and `stop_condition`",
                    request=response.request.describe(paginator.mask),
                    place=paginator.place,
                )
            seen[key] = (signature, times + 1)
            return
        seen[key] = (signature, 1)


class _OnePage:
    """The pager of ``NoPagination``: one request, no token. Stateless, so shared."""

    __slots__ = ()
    token = None
    size_override: int | None = None  # never set: page_size_reduction needs a DefaultPaginator

    def token_variables(self) -> dict:
        return {"next_page_token": {}}

    def page_size(self) -> int | None:
        return None

    def apply(self, parts: RequestParts) -> None:
        return None

    def advance(self, response: HttpResponse, records: list, variables: Mapping[str, Any]) -> bool:
        return False


_ONE_PAGE = _OnePage()


class NoPaginator(Struct, frozen=True):
    """``NoPagination``: every slice is read with a single request."""

    def start(self) -> _OnePage:
        return _ONE_PAGE


# -- building ------------------------------------------------------------------------


def _positive(value: Any, place: str | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        where = place_suffix(place)
        raise ConfigError(
            f"`page_size` must be a positive whole number, not {value!r}{where}; "
            "set it (or the config value it reads) to the number of records per page"
        )
    return value


def _page_size(model: _SizedModel, ctx: BuildContext, path: tuple) -> tuple[int | None, str | None]:
    """The page size rendered now, or the template when it reads ``response``."""
    source = model.page_size
    if source is None:
        return None, None
    place = ctx.place(path + ("page_size",))
    engine = ctx.engine
    if isinstance(source, str) and "response" in engine.compile(source).names:
        return None, source
    return _positive(ctx.render(source, model.parameters, result="integer"), place), None


@builds("CursorPagination")
def build_cursor_strategy(model: CursorPagination, ctx: BuildContext, path: tuple) -> CursorStrategy:
    size, _ = _page_size(model, ctx, path)
    engine = ctx.engine
    templates = _Templates(engine, model.parameters, _reads_headers(engine, model.cursor_value, model.stop_condition))
    # compile now, so a broken template fails the build, not the first page
    engine.compile(model.cursor_value)
    if model.stop_condition is not None:
        engine.compile(model.stop_condition)
    return CursorStrategy(model.cursor_value, model.stop_condition, size, templates)


@builds("PageIncrement")
def build_page_number_strategy(model: PageIncrement, ctx: BuildContext, path: tuple) -> PageNumberStrategy:
    size, _ = _page_size(model, ctx, path)
    return PageNumberStrategy(model.start_from_page, size, model.inject_on_first_request)


@builds("OffsetIncrement")
def build_offset_strategy(model: OffsetIncrement, ctx: BuildContext, path: tuple) -> OffsetStrategy:
    size, size_template = _page_size(model, ctx, path)
    offset_templates = None
    if size_template is not None:
        offset_templates = _Templates(ctx.engine, model.parameters, _reads_headers(ctx.engine, size_template))
    return OffsetStrategy(size, model.inject_on_first_request, size_template, offset_templates)


@builds("DefaultPaginator")
def build_default_paginator(model: DefaultPaginator, ctx: BuildContext, path: tuple) -> StrategyPaginator:
    strategy: PaginationStrategy = ctx.build(model.pagination_strategy, path + ("pagination_strategy",))
    option = model.page_token_option
    token_into: Injection | PathInjection | None = None
    if option is not None:
        token_into = ctx.build(option, path + ("page_token_option",))
    size_into: Injection | None = None
    if model.page_size_option is not None:
        size_into = ctx.build(model.page_size_option, path + ("page_size_option",))
    return StrategyPaginator(strategy, token_into, size_into, ctx.place(path), ctx.mask)


@builds("NoPagination")
def build_no_pagination(model: NoPagination, ctx: BuildContext, path: tuple) -> NoPaginator:
    return NoPaginator()
