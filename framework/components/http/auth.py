"""Runtime authenticators: what puts credentials on a request.

Every authenticator follows the :class:`Authenticator` protocol:

* ``apply(parts)`` adds its header, query parameter or body field to a
  :class:`~framework.components.http.request.RequestParts` being assembled;
* ``refresh()`` is called once after a 401 and says whether the request is
  worth retrying (only authenticators that obtain credentials at run time
  can get new ones: OAuth and session tokens);
* ``secrets()`` lists the credential values in use right now (tokens obtained
  at run time, passwords), so that logs and messages can mask them.

Templates are rendered once, when the authenticator is built: the config does
not change during a sync, so a request costs no template work. No ``repr``
shows a credential.

Tokens obtained at run time (:class:`OAuth`, :class:`SessionToken`,
:class:`LegacySessionToken`) and signed ones (:class:`Jwt`, signed with PyJWT)
are shared by every stream, which may be read on several threads: a lock guards
renewal, and after a 401 a thread that finds the token already renewed by
another thread retries with the new one instead of fetching yet another.
Authenticators of the same definition, and every Spark task, get their token
from one sync-wide service the driver owns, which refreshes at most once per
expiry (:mod:`~framework.components.http.token_service`).

An OAuth authenticator with a ``refresh_token_updater`` takes each token
answer's new refresh token for its next refresh, and reports what the config
should now hold as a :class:`TokenRotation` (:meth:`OAuth.rotation`,
:meth:`OAuth.on_rotation`); saving it is the sync-wide token service's part.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from msgspec import Struct

from framework.components.config_sink import get_path, set_path
from framework.components.context import BuildContext, builds
from framework.components.http.client import Authenticator, HttpClient
from framework.components.http.error_handler import ExponentialBackoff, Resolution, retry_after_seconds
from framework.components.http.request import (
    HttpRequest,
    Injection,
    RequestParts,
    injection_of,
    join_url,
    without_nulls,
)
from framework.components.http.token_service import SharedToken, save_rotation, share
from framework.components.http.transport import HttpResponse
from framework.errors import (
    AuthenticationError,
    ConfigError,
    DatetimeFormatError,
    TransportError,
    place_suffix,
)
from framework.masking import Mask, masking_credentials
from framework.models import auth as models
from framework.models.decoders import XmlDecoder
from framework.temporal.clock import Clock
from framework.temporal.datetime_formats import parse_datetime
from framework.temporal.durations import parse_duration

if TYPE_CHECKING:  # pragma: no cover
    import isodate

__all__ = [
    "TOKEN_RENEW_MARGIN",
    "TOKEN_RETRIES",
    "JWT_BEARER_GRANT",
    "ApiKeyAuth",
    "Authenticator",
    "BasicAuth",
    "BearerAuth",
    "Jwt",
    "LegacySessionToken",
    "NoAuth",
    "OAuth",
    "SessionToken",
    "TokenRotation",
]

#: How many times a token or login request is retried after a 429, a 5xx or a connection failure.
TOKEN_RETRIES = 3
#: A token is renewed this long before it expires (or half its lifetime, when that is shorter).
TOKEN_RENEW_MARGIN = timedelta(seconds=60)
_MAX_BACKOFF = 60.0  # seconds; a longer Retry-After is cut to this


# --- static credentials ---------------------------------------------------------------


class NoAuth(Struct, frozen=True):
    """Requests carry no credentials."""

    def apply(self, parts: RequestParts) -> None:
        return None

    def refresh(self) -> bool:
        return False

    def secrets(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class ApiKeyAuth:
    """An API key put where ``injection`` says (a header, a query parameter or a body field)."""

    injection: Injection
    token: str = field(repr=False)

    def apply(self, parts: RequestParts) -> None:
        self.injection.apply(parts, self.token)

    def refresh(self) -> bool:
        return False

    def secrets(self) -> tuple[str, ...]:
        return _present(self.token)


@dataclass(frozen=True)
class BearerAuth:
    """``Authorization: Bearer <token>``."""

    token: str = field(repr=False)

    def apply(self, parts: RequestParts) -> None:
        parts.headers["Authorization"] = f"Bearer {self.token}"

    def refresh(self) -> bool:
        return False

    def secrets(self) -> tuple[str, ...]:
        return _present(self.token)


@dataclass(frozen=True)
class BasicAuth:
    """``Authorization: Basic base64(username:password)``."""

    username: str = field(repr=False)
    password: str = field(repr=False)
    encoded: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        raw = f"{self.username}:{self.password}".encode()
        object.__setattr__(self, "encoded", base64.b64encode(raw).decode("ascii"))

    def apply(self, parts: RequestParts) -> None:
        parts.headers["Authorization"] = f"Basic {self.encoded}"

    def refresh(self) -> bool:
        return False

    def secrets(self) -> tuple[str, ...]:
        # With an empty password the user name is the key (as some APIs take it).
        return _present(self.password or self.username, self.encoded)


def _present(*values: str | None) -> tuple[str, ...]:
    return tuple(value for value in values if value)


@builds("NoAuth")
def _build_no_auth(model: models.NoAuth, ctx: BuildContext, path: tuple) -> NoAuth:
    return NoAuth()


@builds("ApiKeyAuthenticator")
def _build_api_key(model: models.ApiKeyAuthenticator, ctx: BuildContext, path: tuple) -> ApiKeyAuth:
    token = _text(ctx.render(model.api_token, model.parameters))
    if model.inject_into is not None:
        injection = injection_of(model.inject_into, ctx)
    else:
        injection = Injection("header", (_text(ctx.render(model.header, model.parameters)),))
    return ApiKeyAuth(injection, token)


@builds("BearerAuthenticator")
def _build_bearer(model: models.BearerAuthenticator, ctx: BuildContext, path: tuple) -> BearerAuth:
    return BearerAuth(_text(ctx.render(model.api_token, model.parameters)))


@builds("BasicHttpAuthenticator")
def _build_basic(model: models.BasicHttpAuthenticator, ctx: BuildContext, path: tuple) -> BasicAuth:
    return BasicAuth(
        _text(ctx.render(model.username, model.parameters)),
        _text(ctx.render(model.password, model.parameters)),
    )


def _text(value: Any) -> str:
    return "" if value is None else str(value)


# --- tokens obtained at run time --------------------------------------------------------


class _Token(Struct, frozen=True):
    """A token and when to stop using it (``renew_at``; None: until a 401); when it expires, and which
    generation of the sync's token it is (:mod:`~framework.components.http.token_service`)."""

    value: str
    renew_at: datetime | None
    expires: datetime | None = None
    generation: int = 0


class _RenewedToken:
    """A token fetched on first use and renewed when due or after a 401; thread-safe.

    Subclasses define :meth:`_fetch` (may raise AuthenticationError) and may
    set ``_fetchable`` to False when no new token can be had.
    """

    _fetchable = True
    _shared: SharedToken[_Token] | None = None  # the sync's token service, when the builder shared it

    def __init__(self, clock: Clock, initial: _Token | None = None):
        self._clock = clock
        self._token = initial
        self._lock = threading.Lock()
        self._local = threading.local()  # the token this thread sent last

    def _shared_by(self, ctx: BuildContext, kind: str, identity: Any) -> None:
        """Get tokens from the sync-wide service of this definition (the driver's, in a Spark task)."""
        initial, self._token = self._token, None  # the service's token, even the first
        self._shared = share(ctx, kind, identity, self._fetch, initial, self._fetchable)

    def _obtain(self, rejected: bool) -> _Token:
        if self._shared is None:
            return self._fetch()
        return self._shared.ask(self._token, rejected)

    def _fetch(self) -> _Token:  # pragma: no cover - abstract
        raise NotImplementedError

    def _due(self, token: _Token | None) -> bool:
        if token is None:
            return True
        return token.renew_at is not None and self._fetchable and self._clock.now() >= token.renew_at

    def token(self) -> str:
        """The token to send now, fetched or renewed first when needed."""
        token = self._token
        if self._due(token):
            with self._lock:
                token = self._token
                if self._due(token):
                    token = self._token = self._obtain(False)
        assert token is not None
        self._local.sent = token.value
        return token.value

    def refresh(self) -> bool:
        with self._lock:
            current = self._token
            sent = getattr(self._local, "sent", None)
            if current is not None and sent is not None and current.value != sent:
                return True  # another thread renewed it since this one sent its request
            if not self._fetchable:
                return False
            self._token = self._obtain(True)
            return True

    def _current_secret(self) -> tuple[str, ...]:
        token = self._token
        return _present(token.value) if token is not None else ()


def _renew_at(now: datetime, expires: datetime) -> datetime:
    """When to renew a token that expires at ``expires``: a minute early, or halfway for short lives."""
    margin = min(TOKEN_RENEW_MARGIN, max(expires - now, timedelta(0)) / 2)
    return expires - margin


class _TokenRequestErrors:
    """The error handler of token and login requests, for the one retry loop
    (:class:`~framework.components.http.client.HttpClient`): a 2xx succeeds; a 429, a 5xx or a
    connection failure is retried ``TOKEN_RETRIES`` times, after what ``Retry-After`` asks (seconds
    or an HTTP date, at most a minute) or else 1, 2, 4 ... s; any other status fails at once."""

    max_retries = TOKEN_RETRIES

    def __init__(self, clock: Clock, refused: Callable[[HttpResponse], bool] | None = None):
        self.clock = clock
        self.refused = refused  # whether an error answer says the refresh token was refused

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        if response is None:
            reason = error.reason if error is not None else "no response"
            return Resolution("RETRY", "transient_error", f"the connection failed ({reason})")
        if 200 <= response.status < 300:
            return Resolution("SUCCESS")
        said = f"it answered HTTP {response.status}{_error_detail(response)}"
        if response.status == 429 or response.status >= 500:
            return Resolution("RETRY", "transient_error", said)
        if self.refused is not None and self.refused(response):
            said += ("; the refresh token was refused (invalid, expired or already used): "
                     "re-authenticate the source's credentials")
        return Resolution("FAIL", "config_error", said)

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        asked = retry_after_seconds(response, self.clock)
        if asked is not None:
            return min(asked, _MAX_BACKOFF)
        return _TOKEN_BACKOFF.wait(response, attempt) or 0.0


_TOKEN_BACKOFF = ExponentialBackoff(0.5)  # 1, 2, 4 ... s for retry 1, 2, 3 ...


#: ``failed(reason, hint, transient)``: the error a failed token or login request raises.
_Failed = Callable[[str, str | None, bool], AuthenticationError]


def _exchange(ctx: BuildContext, parts: RequestParts, mask: Mask, failed: _Failed,
              refused: Callable[[HttpResponse], bool] | None = None) -> HttpResponse:
    """Send a token or login request, retried as :class:`_TokenRequestErrors` says.

    ``failed(reason, hint, transient)`` makes the error raised when retries are
    exhausted or the answer is a non-retryable error status.
    """

    def give_up(resolution: Resolution, response: HttpResponse | None, exhausted: bool) -> AuthenticationError:
        hint = "check the URL or try again later" if response is None else None
        return failed(resolution.message or "it failed", hint, exhausted)

    client = HttpClient(ctx.transport, _TokenRequestErrors(ctx.clock, refused), sleep=ctx.sleep, mask=mask,
                        give_up=give_up)
    response = client.send(parts)
    assert response is not None  # the handler never says IGNORE
    return response


def _error_detail(response: HttpResponse) -> str:
    """The OAuth ``error`` code of a failed response (never its description, which may echo input)."""
    try:
        body = response.json()
    except ValueError:
        return ""
    code = body.get("error") if isinstance(body, dict) else None
    if isinstance(code, str) and code.replace("_", "").isalnum() and len(code) <= 40:
        return f" ({code})"
    return ""


def _json_object(response: HttpResponse) -> dict | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _xml_object(response: HttpResponse) -> dict | None:
    """An XML login response as Airbyte's XmlDecoder reads it (``xmltodict``); None when it is not XML."""
    from xml.parsers.expat import ExpatError

    import xmltodict  # here: only XML login responses need it

    try:
        return dict(xmltodict.parse(response.content)) if response.content.strip() else None
    except ExpatError:
        return None


def _expiry_of(value: Any, fmt: str | None) -> datetime:
    """An expiry written as a datetime: with ``fmt`` when given, otherwise ISO 8601 (UTC when naive)."""
    if fmt:
        return parse_datetime(value, fmt)
    from dateutil.parser import isoparse  # here: only an expiry without a format needs it

    try:
        parsed = isoparse(str(value))
    except (ValueError, OverflowError):
        raise DatetimeFormatError(f"{value!r} is not an ISO 8601 datetime") from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed.astimezone(timezone.utc)


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


#: The grant of a JWT bearer token request (RFC 7523), used with ``use_profile_assertion``.
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: How deep a token answer is searched for a key (as Airbyte does, the first match at any depth up to this).
_SEARCH_DEPTH = 5


def _find(body: Any, key: str, depth: int = 0) -> Any:
    """The value under ``key`` in a token answer: at the top level, else the first one found in nested
    objects and arrays (at most :data:`_SEARCH_DEPTH` levels down); None when there is none."""
    if depth > _SEARCH_DEPTH:
        return None
    if isinstance(body, dict):
        if key in body:
            return body[key]
        children: Any = body.values()
    elif isinstance(body, list):
        children = body
    else:
        return None
    for child in children:
        found = _find(child, key, depth + 1)
        if found is not None:
            return found
    return None


class _Refusal(Struct, frozen=True):
    """Which token answers mean the refresh token was refused (``refresh_token_error_*``)."""

    statuses: frozenset[int]
    key: str
    values: frozenset[str]

    def __call__(self, response: HttpResponse) -> bool:
        if response.status not in self.statuses:
            return False
        body = _json_object(response)
        return body is not None and body.get(self.key) in self.values


@dataclass(frozen=True)
class TokenRotation:
    """What one refresh under ``refresh_token_updater`` left in force, and where the config keeps it.

    ``generation`` counts the refreshes of this authenticator (1 for the first). ``token_expiry_date``
    is ISO 8601 (UTC), or empty when the token answer gave no lifetime (the next run then refreshes
    first). :meth:`updates` and :meth:`applied_to` say how the config changes: the token helper saves
    that (a CONTROL message, or the config file rewritten); this class only describes it.
    """

    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    token_expiry_date: str
    access_token_config_path: tuple[str, ...]
    refresh_token_config_path: tuple[str, ...]
    token_expiry_date_config_path: tuple[str, ...]
    generation: int

    def updates(self) -> tuple[tuple[tuple[str, ...], str], ...]:
        """``(config path, new value)`` for the access token, the refresh token and the expiry date."""
        return ((self.access_token_config_path, self.access_token),
                (self.refresh_token_config_path, self.refresh_token),
                (self.token_expiry_date_config_path, self.token_expiry_date))

    def applied_to(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``config`` with :meth:`updates` written in (objects made along a path that lacks them)."""
        updated = copy.deepcopy(dict(config))
        for path, value in self.updates():
            set_path(updated, path, value)
        return updated


class _Rotating(Struct, frozen=True):
    """A ``refresh_token_updater``: the answer's key of the new refresh token and the config paths."""

    refresh_token_name: str
    access_token_config_path: tuple[str, ...]
    refresh_token_config_path: tuple[str, ...]
    token_expiry_date_config_path: tuple[str, ...]


@dataclass(frozen=True)
class _OAuthSettings:
    """An OAuthAuthenticator with its templates rendered.

    A token request sends ``head`` (grant type, client credentials), then the refresh token (under
    ``refresh_token_name``), then those of ``tail`` (scopes, ``refresh_request_body``) whose names
    are not taken already, as Airbyte orders and ranks them; in the form body, or in the query
    string with ``as_query``. With a profile assertion the request holds the grant type and the
    signed ``assertion`` only.
    """

    endpoint: str
    grant_type: str
    grant_type_name: str
    head: Mapping[str, Any] = field(repr=False)
    tail: Mapping[str, Any] = field(repr=False)
    refresh_token_name: str
    headers: Mapping[str, str] = field(repr=False)
    access_token_name: str
    expires_in_name: str
    expiry_format: str | None
    as_query: bool = False
    refused: _Refusal | None = None
    hidden: tuple[str, ...] = field(default=(), repr=False)  # client secret


class OAuth(_RenewedToken):
    """OAuth 2.0 access tokens (``refresh_token``, ``client_credentials`` or JWT bearer grant), sent as a
    bearer token.

    With a rotating refresh token (``rotating``), each token answer's new refresh token is the one the
    next refresh sends, and :meth:`rotation` tells what the config should now hold; listeners added
    with :meth:`on_rotation` hear of each rotation as it happens (under the renewal lock, once per
    refresh).
    """

    def __init__(self, settings: _OAuthSettings, ctx: BuildContext, place: str | None,
                 initial: _Token | None = None, refresh_token: str = "", rotating: _Rotating | None = None,
                 assertion: Jwt | None = None):
        super().__init__(ctx.clock, initial)
        self._settings = settings
        self._ctx = ctx
        self._place = place
        self._fetchable = bool(settings.endpoint)
        self._refresh_token = refresh_token
        self._rotating = rotating
        self._assertion = assertion
        self._rotation: TokenRotation | None = None
        self._listeners: list[Callable[[TokenRotation], None]] = []

    def __repr__(self) -> str:
        endpoint = self._ctx.mask(self._settings.endpoint) if self._settings.endpoint else None
        return f"OAuth(endpoint={endpoint!r}, grant_type={self._settings.grant_type!r})"

    def apply(self, parts: RequestParts) -> None:
        parts.headers["Authorization"] = f"Bearer {self.token()}"

    def secrets(self) -> tuple[str, ...]:
        assertion = self._assertion.secrets() if self._assertion is not None else ()
        return tuple(dict.fromkeys(self._current_secret() + self._settings.hidden + _present(self._refresh_token)
                                   + assertion))

    def refresh_token(self) -> str:
        """The refresh token the next refresh sends (a rotating one changes with each refresh)."""
        return self._refresh_token

    def rotation(self) -> TokenRotation | None:
        """The config values the latest refresh left in force, under ``refresh_token_updater``; None before
        the first refresh or without an updater."""
        return self._rotation

    def on_rotation(self, listener: Callable[[TokenRotation], None]) -> None:
        """Call ``listener`` with each :class:`TokenRotation` from now on (after the refresh that made it)."""
        self._listeners.append(listener)

    def request(self) -> RequestParts:
        """The token request a refresh sends now."""
        settings = self._settings
        args: dict[str, Any]
        if self._assertion is not None:
            args = {settings.grant_type_name: settings.grant_type, "assertion": self._assertion.value()}
        else:
            args = dict(settings.head)
            if self._refresh_token:
                args[settings.refresh_token_name] = self._refresh_token
            for key, value in settings.tail.items():
                args.setdefault(key, value)
        headers = dict(settings.headers)
        if settings.as_query:
            query = urlencode([(k, v) for k, v in args.items() if v is not None], doseq=True)
            url = f"{settings.endpoint}{'&' if '?' in settings.endpoint else '?'}{query}"
            return RequestParts("POST", url=url, headers=headers)
        return RequestParts("POST", url=settings.endpoint, headers=headers, data=args)

    def _fetch(self) -> _Token:
        settings = self._settings
        parts = self.request()
        where = parts.to_request().describe(self._mask)
        credentials = "check client_id, client_secret and refresh_token in the config"

        def failed(reason: str, hint: str | None, transient: bool) -> AuthenticationError:
            fix = hint or ("the token endpoint may be down; try again later" if transient else credentials)
            return AuthenticationError(
                f"could not get an OAuth access token from {where}: {reason}; {fix}",
                request=where, place=self._place, failure_type="transient_error" if transient else None,
            )

        started = self._clock.now()
        response = _exchange(self._ctx, parts, self._mask, failed, settings.refused)
        body = _json_object(response)
        if body is None:
            raise failed("its answer is not a JSON object", None, False)
        value = _find(body, settings.access_token_name)
        if not isinstance(value, str) or not value:
            keys = ", ".join(f"`{key}`" for key in sorted(map(str, body))) or "none"
            raise failed(
                f"its answer has no `{settings.access_token_name}` (its keys: {keys})",
                f"set `access_token_name` if the token is under another key; otherwise {credentials}", False,
            )
        expires = self._expires_at(_find(body, settings.expires_in_name), started)
        if self._rotating is not None:
            self._rotate(value, _find(body, self._rotating.refresh_token_name), expires)
        return _Token(value, _renew_at(started, expires) if expires is not None else None, expires)

    def _rotate(self, access_token: str, refresh_token: Any, expires: datetime | None) -> None:
        rotating = self._rotating
        assert rotating is not None
        if isinstance(refresh_token, str) and refresh_token:
            self._refresh_token = refresh_token  # the answer may leave it out: then the old one stays
        generation = self._rotation.generation + 1 if self._rotation is not None else 1
        self._rotation = rotation = TokenRotation(
            access_token, self._refresh_token, expires.isoformat() if expires is not None else "",
            rotating.access_token_config_path, rotating.refresh_token_config_path,
            rotating.token_expiry_date_config_path, generation)
        for listener in list(self._listeners):
            listener(rotation)

    def _expires_at(self, raw: Any, started: datetime) -> datetime | None:
        if raw is None or raw == "":
            return None  # no lifetime given: use the token until a 401
        fmt = self._settings.expiry_format
        seconds = None if fmt else _seconds(raw)
        if seconds is not None:
            return started + timedelta(seconds=seconds)
        try:
            return _expiry_of(raw, fmt)
        except DatetimeFormatError:
            if fmt:  # Airbyte reads a time of expiration with a format as any ISO 8601 datetime too
                with contextlib.suppress(DatetimeFormatError):
                    return _expiry_of(raw, None)
            name = self._settings.expires_in_name
            raise AuthenticationError(
                f"the token endpoint {self._settings.endpoint and self._mask(self._settings.endpoint)} gave "
                f"`{name}` as {raw!r}, which is neither seconds nor a datetime"
                + (f" in the format {fmt!r}" if fmt else "")
                + "; set `token_expiry_date_format` to the format of that value",
                place=self._place,
            ) from None

    def _mask(self, text: str) -> str:
        return masking_credentials(self, self._ctx.mask)(text)


def _refusal(model: models.OAuthAuthenticator, place: str | None) -> _Refusal | None:
    updater = model.refresh_token_updater
    own = (model.refresh_token_error_status_codes, model.refresh_token_error_key, model.refresh_token_error_values)
    legacy = ((updater.refresh_token_error_status_codes, updater.refresh_token_error_key,
               updater.refresh_token_error_values) if updater is not None else ((), "", ()))
    if any(own) and any(legacy):
        raise ConfigError("`refresh_token_error_*` are set both on the OAuthAuthenticator and on its "
                          "`refresh_token_updater`; keep those of the OAuthAuthenticator" + place_suffix(place))
    codes, key, values = own if any(own) else legacy
    if not (codes and key and values):
        return None
    return _Refusal(frozenset(codes), key, frozenset(values))


@builds("OAuthAuthenticator")
def _build_oauth(model: models.OAuthAuthenticator, ctx: BuildContext, path: tuple) -> OAuth:
    params = model.parameters

    def render(value: Any) -> str:
        return _text(ctx.render(value, params)) if value is not None else ""

    place = ctx.place(path)
    updater = model.refresh_token_updater
    use_assertion = bool(ctx.render(model.use_profile_assertion, params, "boolean"))
    grant_type = JWT_BEARER_GRANT if use_assertion else (render(model.grant_type) or "refresh_token")
    client_id, client_secret = render(model.client_id), render(model.client_secret)
    if updater is not None:  # as Airbyte: the config's `credentials` win over the rendered values
        client_id = _text(get_path(ctx.config, ("credentials", "client_id"))) or client_id
        client_secret = _text(get_path(ctx.config, ("credentials", "client_secret"))) or client_secret
        refresh_token = _text(get_path(ctx.config, tuple(updater.refresh_token_config_path)))
    else:
        refresh_token = render(model.refresh_token)
    headers = {str(k): _text(v) for k, v in _render_mapping(ctx, model.refresh_request_headers, params).items()}
    head: dict[str, Any] = {model.grant_type_name: grant_type}
    if "Authorization" not in headers:  # credentials in that header are not repeated in the body
        if client_id:
            head[model.client_id_name] = client_id
        if client_secret:
            head[model.client_secret_name] = client_secret
    tail: dict[str, Any] = {"scopes": list(model.scopes)} if model.scopes else {}
    for key, value in _render_mapping(ctx, model.refresh_request_body, params).items():
        tail.setdefault(key, value)
    assertion: Jwt | None = None
    if use_assertion:
        if model.profile_assertion is None:
            raise ConfigError("`use_profile_assertion` is on but there is no `profile_assertion`; add a "
                              "JwtAuthenticator there" + place_suffix(place))
        assertion = _build_jwt(model.profile_assertion, ctx, path + ("profile_assertion",))
    settings = _OAuthSettings(
        endpoint=render(model.token_refresh_endpoint),
        grant_type=grant_type,
        grant_type_name=model.grant_type_name,
        head=head,
        tail=tail,
        refresh_token_name=model.refresh_token_name,
        headers=headers,
        access_token_name=model.access_token_name,
        expires_in_name=model.expires_in_name,
        expiry_format=model.token_expiry_date_format,
        as_query=model.send_refresh_request_as_query_params,
        refused=_refusal(model, place),
        hidden=_present(client_secret),
    )
    rotating = None
    initial = None
    if updater is not None:
        rotating = _Rotating(updater.refresh_token_name, tuple(updater.access_token_config_path),
                             tuple(updater.refresh_token_config_path), tuple(updater.token_expiry_date_config_path))
        initial = _held_token(ctx, get_path(ctx.config, rotating.access_token_config_path),
                              get_path(ctx.config, rotating.token_expiry_date_config_path))
    else:
        access_token = render(model.access_token_value)
        if access_token:
            expiry_text = render(model.token_expiry_date)
            renew_at = None
            if expiry_text:
                try:
                    expires = _expiry_of(expiry_text, model.token_expiry_date_format)
                except DatetimeFormatError as exc:
                    fmt = model.token_expiry_date_format
                    raise ConfigError(
                        f"the OAuth `token_expiry_date` could not be read: {exc}; give it as an ISO 8601 datetime"
                        + (f" or in the format {fmt!r}" if fmt else "")
                        + place_suffix(place)
                    ) from None
                renew_at = _renew_at(ctx.clock.now(), expires)
            initial = _Token(access_token, renew_at)
        elif not settings.endpoint:
            raise ConfigError(
                "the OAuth authenticator has neither an access token (`access_token_value` rendered empty) "
                "nor a `token_refresh_endpoint` to get one; set the access token in the config"
                + place_suffix(place)
            )
    if rotating is not None and not refresh_token:
        where = ".".join(rotating.refresh_token_config_path)
        raise ConfigError(f"the config has no refresh token at `{where}` (the OAuth `refresh_token_updater`'s "
                          "`refresh_token_config_path`); set it there, or point the path at it" + place_suffix(place))
    oauth = OAuth(settings, ctx, place, initial, refresh_token, rotating, assertion)
    if rotating is not None:  # each rotation saved once, where this run saves its config (the driver's refresh)
        oauth.on_rotation(lambda rotation: save_rotation(ctx.config_sink, rotation.updates()))
    # One token per definition for the whole sync (digested: the request holds the secrets).
    oauth._shared_by(ctx, "oauth", [settings.endpoint, grant_type, client_id, head, tail, headers,
                                    model.access_token_name, render(model.access_token_value),
                                    updater.model_dump(mode="json") if updater is not None else None,
                                    assertion is not None])
    return oauth


def _held_token(ctx: BuildContext, access_token: Any, expiry: Any) -> _Token | None:
    """The access token a rotating config holds, while its expiry date is ahead; None (refresh first) when
    either is missing or the date cannot be read."""
    if not isinstance(access_token, str) or not access_token or expiry in (None, ""):
        return None
    try:
        expires = _expiry_of(expiry, None)
    except DatetimeFormatError:
        return None
    now = ctx.clock.now()
    return _Token(access_token, _renew_at(now, expires)) if expires > now else None


def _render_mapping(ctx: BuildContext, values: Any, parameters: Mapping[str, Any],
                    result: str = "string") -> dict[str, Any]:
    """Keys and values of a mapping rendered (values as ``result``); a single template string must render
    an object."""
    if isinstance(values, str):
        rendered = ctx.render(values, parameters, "object")
        return dict(rendered) if isinstance(rendered, Mapping) else {}
    return {_text(ctx.render(k, parameters)): ctx.render(v, parameters, result) for k, v in values.items()}


def _render_deep(ctx: BuildContext, value: Any, parameters: Mapping[str, Any]) -> Any:
    """Every string inside ``value`` (keys too) rendered; for JSON bodies."""
    if isinstance(value, str):
        return ctx.render(value, parameters)
    if isinstance(value, Mapping):
        return {_text(ctx.render(k, parameters)): _render_deep(ctx, v, parameters) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_render_deep(ctx, v, parameters) for v in value]
    return value


# --- session tokens ---------------------------------------------------------------------


class SessionToken(_RenewedToken):
    """Logs in with one request and sends the session token it returned, renewing it when it expires."""

    def __init__(self, login: HttpRequest, login_auth: Authenticator, token_path: tuple[str, ...],
                 lifetime: timedelta | isodate.Duration | None, send: Callable[[RequestParts, str], None],
                 shown: Callable[[str], tuple[str, ...]], ctx: BuildContext, place: str | None,
                 xml: bool = False):
        super().__init__(ctx.clock)
        self._xml = xml  # the login response is XML (`decoder: XmlDecoder`), not JSON
        self._login = login
        self._login_auth = login_auth
        self._token_path = token_path
        self._lifetime = lifetime
        self._send = send
        self._shown = shown  # the values sent for a token (the token itself, or its rendered api_token)
        self._ctx = ctx
        self._place = place

    def __repr__(self) -> str:
        return f"SessionToken(login={self._login.describe(self._ctx.mask)!r}, token_path={self._token_path!r})"

    def apply(self, parts: RequestParts) -> None:
        self._send(parts, self.token())

    def secrets(self) -> tuple[str, ...]:
        token = self._token
        sent = self._shown(token.value) if token is not None else ()
        return tuple(dict.fromkeys(sent + tuple(self._login_auth.secrets())))

    def _fetch(self) -> _Token:
        parts = RequestParts(
            method=self._login.method, url=self._login.url, params=dict(self._login.params),
            headers=dict(self._login.headers), json=self._login.json,
            data=dict(self._login.data) if isinstance(self._login.data, Mapping) else self._login.data,
        )
        self._login_auth.apply(parts)
        where = parts.to_request().describe(self._ctx.mask)

        def failed(reason: str, hint: str | None, transient: bool) -> AuthenticationError:
            fix = hint or ("the login endpoint may be down; try again later" if transient
                           else "check the login credentials in the config")
            return AuthenticationError(
                f"could not log in to get a session token from {where}: {reason}; {fix}",
                request=where, place=self._place, failure_type="transient_error" if transient else None,
            )

        started = self._clock.now()
        response = _exchange(self._ctx, parts, self._ctx.mask, failed)
        node: Any = _xml_object(response) if self._xml else _json_object(response)
        if node is None:
            raise failed(f"its answer is not {'an XML document' if self._xml else 'a JSON object'}", None, False)
        for key in self._token_path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is None or isinstance(node, (dict, list)) or node == "":
            raise failed(
                f"its answer has no token at `{'.'.join(self._token_path)}`",
                "set `session_token_path` to where the login response holds the token, "
                "or check the login credentials in the config", False,
            )
        renew_at = started + self._lifetime if self._lifetime is not None else None
        return _Token(str(node), renew_at)


@builds("SessionTokenAuthenticator")
def _build_session_token(model: models.SessionTokenAuthenticator, ctx: BuildContext, path: tuple) -> SessionToken:
    login = model.login_requester
    params = login.parameters
    url = join_url(_text(ctx.render(login.url_base, params)), _text(ctx.render(login.path, params)))
    login_json, login_data = login.bodies()  # with `request_body` folded in
    json_body = _render_body_json(ctx, login_json, params)
    data_body = _render_body_data(ctx, login_data, params)
    request = HttpRequest(
        login.http_method,
        url,
        params=tuple((k, _text(v)) for k, v in _render_mapping(ctx, login.request_parameters, params).items()
                     if v is not None),
        headers={k: _text(v) for k, v in _render_mapping(ctx, login.request_headers, params).items()
                 if v is not None},
        json=json_body or None,
        data=data_body or None,
    )
    if login.authenticator is not None:
        login_auth = ctx.build(login.authenticator, path + ("login_requester", "authenticator"))
    else:
        login_auth = NoAuth()

    use = model.request_authentication
    if use.type == "ApiKey":
        injection = injection_of(use.inject_into, ctx)
        template = use.api_token
        use_params = {**model.parameters, **use.parameters}

        def value_of(token: str) -> str:
            return _text(ctx.render(template, use_params, session_token=token))

        def send(parts: RequestParts, token: str) -> None:
            injection.apply(parts, value_of(token))

        def shown(token: str) -> tuple[str, ...]:
            return tuple(dict.fromkeys(_present(token, value_of(token))))
    else:

        def send(parts: RequestParts, token: str) -> None:
            parts.headers["Authorization"] = f"Bearer {token}"

        def shown(token: str) -> tuple[str, ...]:
            return _present(token)

    lifetime = parse_duration(model.expiration_duration) if model.expiration_duration else None
    session = SessionToken(request, login_auth, tuple(model.session_token_path), lifetime, send, shown,
                           ctx, ctx.place(path), xml=isinstance(model.decoder, XmlDecoder))
    # One session for the whole sync per login (digested: the login request holds the credentials).
    session._shared_by(ctx, "session", [request.method, request.url, request.params, request.headers, request.json,
                                        request.data, login_auth.secrets(), model.session_token_path,
                                        model.expiration_duration, model.decoder is not None])
    return session


def _render_body_json(ctx: BuildContext, body: Any, parameters: Mapping[str, Any]) -> Any:
    if isinstance(body, str):
        return ctx.render(body, parameters, "object")
    return without_nulls(_render_deep(ctx, body, parameters))


def _render_body_data(ctx: BuildContext, body: Any, parameters: Mapping[str, Any]) -> Any:
    if isinstance(body, str):
        return ctx.render(body, parameters, "any")
    return {k: _text(v) for k, v in _render_mapping(ctx, body, parameters).items() if v is not None}


# --- signed JSON Web Tokens ---------------------------------------------------------------

#: Header fields and claims a manifest sets by name, not through the ``additional_*`` mappings (as Airbyte).
RESERVED_JWT_HEADERS = ("kid", "alg", "typ", "cty")
RESERVED_JWT_CLAIMS = ("iss", "sub", "aud", "iat", "exp", "nbf")


@dataclass(frozen=True)
class _JwtSettings:
    """A JwtAuthenticator with its templates rendered and its key loaded."""

    algorithm: str
    key: Any = field(repr=False)  # text or bytes for HS algorithms, a private key object (or PEM text) otherwise
    headers: Mapping[str, Any]
    claims: Mapping[str, Any] = field(repr=False)
    duration: int | None
    prefix: str
    hidden: tuple[str, ...] = field(repr=False)  # the secret key as given and as used, the passphrase


class Jwt(_RenewedToken):
    """A JSON Web Token signed with PyJWT: ``iat`` and ``nbf`` are the time of signing and ``exp`` is
    ``token_duration`` seconds later (the time of signing itself without one, so each request signs
    anew); the token is signed again a minute before it expires (or halfway through a shorter life),
    by the injected clock, and after a 401."""

    def __init__(self, settings: _JwtSettings, injection: Injection, ctx: BuildContext, place: str | None):
        super().__init__(ctx.clock)
        self._settings = settings
        self._injection = injection
        self._place = place

    def __repr__(self) -> str:
        return f"Jwt(algorithm={self._settings.algorithm!r}, inject_into={self._injection.inject_into!r})"

    def value(self) -> str:
        """What is sent: the token, after ``header_prefix`` and a space when there is one."""
        token = self.token()
        return f"{self._settings.prefix} {token}" if self._settings.prefix else token

    def apply(self, parts: RequestParts) -> None:
        self._injection.apply(parts, self.value())

    def secrets(self) -> tuple[str, ...]:
        return self._current_secret() + self._settings.hidden

    def _fetch(self) -> _Token:
        settings = self._settings
        now = self._clock.now()
        issued = int(now.timestamp())
        expires = issued + settings.duration if settings.duration is not None else issued
        claims = {**settings.claims, "iat": issued, "exp": expires, "nbf": issued}
        import jwt  # PyJWT and cryptography: about 0.1 s to import, only for a JwtAuthenticator

        try:
            token = jwt.encode(claims, settings.key, algorithm=settings.algorithm, headers=dict(settings.headers))
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise ConfigError(f"the JWT could not be signed with {settings.algorithm}: {_reason(exc)}; "
                              + _KEY_FIX + place_suffix(self._place)) from None
        expiry = datetime.fromtimestamp(expires, timezone.utc)
        return _Token(token, _renew_at(now, expiry) if expires > issued else now)


_KEY_FIX = ("give `secret_key` a shared secret for HS algorithms, or a PEM private key of the algorithm's kind "
            "(RSA for RS and PS, EC for ES, Ed25519 for EdDSA) with its `passphrase` when it is encrypted")


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _signing_key(algorithm: str, secret: str, encode: bool, passphrase: str, place: str | None) -> Any:
    """The key PyJWT signs with, loaded now so that a bad key fails the build, not the first request.

    As Airbyte: with a passphrase the secret is an encrypted PEM private key; otherwise it is used as
    given, base64-encoded first when ``base64_encode_secret_key`` says so.
    """
    import jwt
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        if passphrase:
            return serialization.load_pem_private_key(secret.encode(), password=passphrase.encode())
        key = base64.b64encode(secret.encode()).decode("ascii") if encode else secret
        return jwt.get_algorithm_by_name(algorithm).prepare_key(key)
    except (jwt.PyJWTError, ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise ConfigError(f"the JwtAuthenticator's `secret_key` is not a key for {algorithm}: {_reason(exc)}; "
                          + _KEY_FIX + place_suffix(place)) from None


def _build_jwt(model: models.JwtAuthenticator, ctx: BuildContext, path: tuple) -> Jwt:
    params = model.parameters
    place = ctx.place(path)

    def text(value: Any) -> str:
        return _text(ctx.render(value, params)) if value is not None else ""

    if model.algorithm not in models.JWT_ALGORITHMS:
        raise ConfigError(f"unknown JWT algorithm {model.algorithm!r}; use one of "
                          f"{', '.join(models.JWT_ALGORITHMS)}" + place_suffix(place))
    if model.token_duration is not None and model.token_duration <= 0:
        raise ConfigError(f"`token_duration` is {model.token_duration}; give the token's lifetime in seconds, "
                          "a positive integer" + place_suffix(place))
    headers = {k: v for k, v in _render_mapping(ctx, model.additional_jwt_headers, params, "any").items()}
    claims = {k: v for k, v in _render_mapping(ctx, model.additional_jwt_payload, params, "any").items()}
    for names, given, what in ((RESERVED_JWT_HEADERS, headers, "additional_jwt_headers"),
                               (RESERVED_JWT_CLAIMS, claims, "additional_jwt_payload")):
        taken = [name for name in names if name in given]
        if taken:
            raise ConfigError(f"`{what}` sets {', '.join(f'`{n}`' for n in taken)}, which the authenticator "
                              f"sets itself; remove {'it' if len(taken) == 1 else 'them'} there"
                              + place_suffix(place))
    named = model.jwt_headers if model.jwt_headers is not None else models.JwtHeaders()
    for name in ("kid", "typ", "cty"):
        value = text(getattr(named, name))
        if value:
            headers[name] = value
    if model.jwt_payload is not None:
        for name in ("iss", "sub", "aud"):
            value = text(getattr(model.jwt_payload, name))
            if value:
                claims[name] = value
    secret = text(model.secret_key)
    passphrase = text(model.passphrase)
    encode = bool(ctx.render(model.base64_encode_secret_key, params, "boolean"))
    key = _signing_key(model.algorithm, secret, encode, passphrase, place)
    hidden = _present(secret, base64.b64encode(secret.encode()).decode("ascii") if encode and secret else "",
                      passphrase)
    injection = (injection_of(model.request_option, ctx) if model.request_option is not None
                 else Injection("header", ("Authorization",)))
    settings = _JwtSettings(model.algorithm, key, headers, claims, model.token_duration, text(model.header_prefix),
                            hidden)
    return Jwt(settings, injection, ctx, place)


builds("JwtAuthenticator")(_build_jwt)


# --- the older session token ---------------------------------------------------------------


class LegacySessionToken(_RenewedToken):
    """Airbyte's LegacySessionTokenAuthenticator: a session token sent in ``header``.

    The config's token is used when ``GET <url_base><validate_session_url>`` (the token in the header)
    answers 2xx; when it answers 401, or there is no such token, ``POST <url_base><login_url>`` with
    ``{"username": ..., "password": ...}`` logs in and the answer's ``session_token_response_key``
    is the token. The URLs are the requester's ``url_base`` and the path joined as written, as Airbyte
    joins them; the base comes with the first request. A 401 on a data request logs in again when
    there are credentials.
    """

    def __init__(self, header: str, session_token: str, response_key: str, username: str, password: str,
                 login_url: str, validate_url: str, ctx: BuildContext, place: str | None):
        super().__init__(ctx.clock)
        self._header = header
        self._given = session_token
        self._response_key = response_key
        self._username = username
        self._password = password
        self._login_url = login_url
        self._validate_url = validate_url
        self._ctx = ctx
        self._place = place
        self._base: str | None = None
        self._given_checked = False
        self._fetchable = bool(username and password) or bool(session_token)

    def __repr__(self) -> str:
        return f"LegacySessionToken(header={self._header!r}, login_url={self._login_url!r})"

    def apply(self, parts: RequestParts) -> None:
        if self._base is None:
            self._base = parts.url_base
        parts.headers[self._header] = self.token()

    def secrets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self._current_secret() + _present(self._given, self._password)))

    def _failed(self, where: str, doing: str) -> _Failed:
        def failed(reason: str, hint: str | None, transient: bool) -> AuthenticationError:
            fix = hint or ("the API may be down; try again later" if transient
                           else "check the session token, username and password in the config")
            return AuthenticationError(f"could not {doing} at {where}: {reason}; {fix}", request=where,
                                       place=self._place, failure_type="transient_error" if transient else None)
        return failed

    def _fetch(self) -> _Token:
        base = self._base or ""
        if self._given and not self._given_checked:
            self._given_checked = True  # a token from the config is tried once; after a 401, log in
            if self._valid(base):
                return _Token(self._given, None)
        if not (self._username and self._password):
            raise AuthenticationError(
                "the session token is not valid (or not given) and there is no username and password to log in "
                "with; set a valid `session_token`, or `username` and `password`, in the config",
                place=self._place)
        parts = RequestParts("POST", url=f"{base}{self._login_url}", headers={"Content-Type": "application/json"},
                             json={"username": self._username, "password": self._password})
        where = parts.to_request().describe(self._mask)
        failed = self._failed(where, "log in to get a session token")
        body = _json_object(_exchange(self._ctx, parts, self._mask, failed))
        value = body.get(self._response_key) if body is not None else None
        if value is None or value == "" or isinstance(value, (dict, list)):
            raise failed(f"its answer has no `{self._response_key}`",
                         "set `session_token_response_key` to the key of the token in the login answer", False)
        return _Token(str(value), None)

    def _valid(self, base: str) -> bool:
        parts = RequestParts("GET", url=f"{base}{self._validate_url}", headers={self._header: self._given})
        where = parts.to_request().describe(self._mask)
        errors = _TokenRequestErrors(self._ctx.clock)

        def give_up(resolution: Resolution, response: HttpResponse | None, exhausted: bool) -> AuthenticationError:
            hint = "check the URL or try again later" if response is None else None
            return self._failed(where, "validate the session token")(resolution.message or "it failed", hint,
                                                                     exhausted)

        client = HttpClient(self._ctx.transport, _ValidationErrors(errors), sleep=self._ctx.sleep,
                            mask=self._mask, give_up=give_up)
        response = client.send(parts)
        return response is not None and 200 <= response.status < 300

    def _mask(self, text: str) -> str:
        return masking_credentials(self, self._ctx.mask)(text)


class _ValidationErrors:
    """Token request errors, except that a 401 means "not valid" (the answer is handed back, no error)."""

    def __init__(self, inner: _TokenRequestErrors):
        self.inner = inner
        self.max_retries = inner.max_retries

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        if response is not None and response.status == 401:
            return Resolution("SUCCESS")
        return self.inner.interpret(response, error)

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        return self.inner.backoff(response, attempt)


@builds("LegacySessionTokenAuthenticator")
def _build_legacy_session_token(model: models.LegacySessionTokenAuthenticator, ctx: BuildContext,
                                path: tuple) -> LegacySessionToken:
    params = model.parameters

    def text(value: Any) -> str:
        return _text(ctx.render(value, params)) if value is not None else ""

    return LegacySessionToken(text(model.header), text(model.session_token), text(model.session_token_response_key),
                              text(model.username), text(model.password), text(model.login_url),
                              text(model.validate_session_url), ctx, ctx.place(path))


# --- choosing one by the config ---------------------------------------------------------


@builds("SelectiveAuthenticator")
def _build_selective(model: models.SelectiveAuthenticator, ctx: BuildContext, path: tuple) -> Authenticator:
    where = ".".join(map(str, model.authenticator_selection_path))
    node: Any = ctx.config
    for key in model.authenticator_selection_path:
        if not isinstance(node, Mapping) or key not in node:
            raise ConfigError(
                f"the config has no value at `{where}`, which chooses the authenticator; "
                f"set it to one of: {_choices(model)}" + _at(ctx, path)
            )
        node = node[key]
    choice = node if isinstance(node, str) else str(node)
    if choice not in model.authenticators:
        raise ConfigError(
            f"the config value at `{where}` is {ctx.mask(repr(choice))}, which names no authenticator; "
            f"use one of: {_choices(model)}" + _at(ctx, path)
        )
    return ctx.build(model.authenticators[choice], path + ("authenticators", choice))


def _choices(model: models.SelectiveAuthenticator) -> str:
    return ", ".join(f"`{name}`" for name in model.authenticators) or "(none defined)"


def _at(ctx: BuildContext, path: tuple) -> str:
    return place_suffix(ctx.place(path))
