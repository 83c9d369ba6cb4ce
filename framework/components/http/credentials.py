"""Which parts of a request are credentials, so that they stay with their host.

An authenticator adds its credentials to a request (headers, query
parameters, body fields, a ``Cookie`` header); :func:`credentials_added`
finds them by comparing the request before and after. The transport follows
redirects; on one to another origin (scheme, host or port) it drops every
part :class:`Credentials` names (:func:`strip_params`, :func:`strip_body`),
unless the new host is one of ``hosts``: the requester's
``credential_redirect_hosts``, for an API that really redirects to a CDN that
needs them. Token and login requests are credentials through and through
(``everything``): on another origin they lose every header, parameter and body.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from msgspec import Struct

__all__ = ["Credentials", "credentials_added", "keeps_credentials", "origin", "strip_body", "strip_params"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


class Credentials(Struct, frozen=True):
    """The parts of one request that are credentials.

    ``headers`` and ``params`` are names, ``data`` the keys of a form body, ``json`` key paths into a
    JSON body; ``everything`` marks a request made only of credentials (a token or login request);
    ``hosts`` are the hosts they may follow a redirect to.
    """

    headers: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    data: tuple[str, ...] = ()
    json: tuple[tuple[str, ...], ...] = ()
    everything: bool = False
    hosts: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.everything or self.headers or self.params or self.data or self.json)

    def header_names(self) -> frozenset[str]:
        return frozenset(name.lower() for name in self.headers)


def origin(url: str) -> tuple[str, str, int | None]:
    """``url``'s scheme, host (lower case) and port (the scheme's default when none is written)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def keeps_credentials(credentials: Credentials, first_url: str, next_url: str) -> bool:
    """Whether a redirect from the request to ``first_url`` on to ``next_url`` may carry the credentials:
    the same origin, or a host the manifest names."""
    if origin(first_url) == origin(next_url):
        return True
    host = (urlsplit(next_url).hostname or "").lower()
    return bool(host) and host in {name.lower() for name in credentials.hosts}


def credentials_added(before_headers: Mapping[str, Any], after_headers: Mapping[str, Any],
                      before_params: Mapping[str, Any], after_params: Mapping[str, Any],
                      before_data: Any, after_data: Any, before_json: Any, after_json: Any,
                      secrets: Iterable[str] = (), hosts: Iterable[str] = ()) -> Credentials:
    """The parts an authenticator added or changed, and those whose value holds one of its ``secrets``."""
    shown = tuple(secret for secret in secrets if secret)

    def holds(value: Any) -> bool:
        text = value if isinstance(value, str) else str(value)
        return any(secret in text for secret in shown)

    def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(str(key) for key, value in after.items() if key not in before or before[key] != value
                     or (value is not None and holds(value)))

    data = (changed(before_data if isinstance(before_data, Mapping) else {}, after_data)
            if isinstance(after_data, Mapping) else ())
    return Credentials(
        headers=changed(before_headers, after_headers),
        params=changed(before_params, after_params),
        data=data,
        json=tuple(_json_changes(before_json if isinstance(before_json, Mapping) else {}, after_json, (), holds))
        if isinstance(after_json, Mapping) else (),
        hosts=tuple(hosts),
    )


def _json_changes(before: Mapping[str, Any], after: Mapping[str, Any], path: tuple[str, ...],
                  holds: Any) -> Iterable[tuple[str, ...]]:
    for key, value in after.items():
        here = path + (str(key),)
        old = before.get(key, _MISSING)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            yield from _json_changes(old, value, here, holds)
        elif old is _MISSING or old != value or (isinstance(value, str) and holds(value)):
            yield here


_MISSING: Any = object()


def strip_params(url: str, credentials: Credentials) -> str:
    """``url`` without the query parameters that are credentials (all of them for a token request)."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    if credentials.everything:
        kept: list[tuple[str, str]] = []
    else:
        names = set(credentials.params)
        kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in names]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept), parts.fragment))


def strip_body(json_body: Any, data_body: Any, credentials: Credentials) -> tuple[Any, Any]:
    """The JSON and form bodies without the fields that are credentials (none left of a token request)."""
    if credentials.everything:
        return None, None
    if isinstance(data_body, Mapping):
        data_body = {k: v for k, v in data_body.items() if k not in set(credentials.data)}
    if isinstance(json_body, Mapping):
        for path in credentials.json:
            json_body = _without(json_body, path)
    return json_body, data_body


def _without(node: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    copy = dict(node)
    head, rest = path[0], path[1:]
    if head not in copy:
        return copy
    if not rest:
        del copy[head]
    elif isinstance(copy[head], Mapping):
        copy[head] = _without(copy[head], rest)
    return copy
