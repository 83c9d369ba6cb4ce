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

Tokens obtained at run time (:class:`OAuth`, :class:`SessionToken`) are
shared by every stream, which may be read on several threads: a lock guards
renewal, and after a 401 a thread that finds the token already renewed by
another thread retries with the new one instead of fetching yet another.
Authenticators of the same definition, and every Spark task, get their token
from one sync-wide service the driver owns, which refreshes at most once per
expiry (:mod:`~framework.components.http.token_service`).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from xml.parsers.expat import ExpatError

import xmltodict
from dateutil.parser import isoparse

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
from framework.components.http.token_service import RefreshTokenRotation, SharedToken, share
from framework.components.http.transport import HttpResponse
from framework.components.registry import BuildContext, builds
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
    "ApiKeyAuth",
    "Authenticator",
    "BasicAuth",
    "BearerAuth",
    "NoAuth",
    "OAuth",
    "SessionToken",
]

#: How many times a token or login request is retried after a 429, a 5xx or a connection failure.
TOKEN_RETRIES = 3
#: A token is renewed this long before it expires (or half its lifetime, when that is shorter).
TOKEN_RENEW_MARGIN = timedelta(seconds=60)
_MAX_BACKOFF = 60.0  # seconds; a longer Retry-After is cut to this


# --- static credentials ---------------------------------------------------------------


@dataclass(frozen=True)
class NoAuth:
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


@dataclass(frozen=True)
class _Token:
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

    def __init__(self, clock: Clock):
        self.clock = clock

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        if response is None:
            reason = error.reason if error is not None else "no response"
            return Resolution("RETRY", "transient_error", f"the connection failed ({reason})")
        if 200 <= response.status < 300:
            return Resolution("SUCCESS")
        said = f"it answered HTTP {response.status}{_error_detail(response)}"
        if response.status == 429 or response.status >= 500:
            return Resolution("RETRY", "transient_error", said)
        return Resolution("FAIL", "config_error", said)

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        asked = retry_after_seconds(response, self.clock)
        if asked is not None:
            return min(asked, _MAX_BACKOFF)
        return _TOKEN_BACKOFF.wait(response, attempt) or 0.0


_TOKEN_BACKOFF = ExponentialBackoff(0.5)  # 1, 2, 4 ... s for retry 1, 2, 3 ...


#: ``failed(reason, hint, transient)``: the error a failed token or login request raises.
_Failed = Callable[[str, str | None, bool], AuthenticationError]


def _exchange(ctx: BuildContext, parts: RequestParts, mask: Mask, failed: _Failed) -> HttpResponse:
    """Send a token or login request, retried as :class:`_TokenRequestErrors` says.

    ``failed(reason, hint, transient)`` makes the error raised when retries are
    exhausted or the answer is a non-retryable error status.
    """

    def give_up(resolution: Resolution, response: HttpResponse | None, exhausted: bool) -> AuthenticationError:
        hint = "check the URL or try again later" if response is None else None
        return failed(resolution.message or "it failed", hint, exhausted)

    client = HttpClient(ctx.transport, _TokenRequestErrors(ctx.clock), sleep=ctx.sleep, mask=mask,
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
    try:
        return dict(xmltodict.parse(response.content)) if response.content.strip() else None
    except ExpatError:
        return None


def _expiry_of(value: Any, fmt: str | None) -> datetime:
    """An expiry written as a datetime: with ``fmt`` when given, otherwise ISO 8601 (UTC when naive)."""
    if fmt:
        return parse_datetime(value, fmt)
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


@dataclass(frozen=True)
class _OAuthSettings:
    """An OAuthAuthenticator with its templates rendered."""

    endpoint: str
    grant_type: str
    body: Mapping[str, Any] = field(repr=False)
    headers: Mapping[str, str] = field(repr=False)
    access_token_name: str
    expires_in_name: str
    expiry_format: str | None
    hidden: tuple[str, ...] = field(repr=False)  # client secret and refresh token


class OAuth(_RenewedToken):
    """OAuth 2.0 access tokens (``refresh_token`` or ``client_credentials`` grant), sent as a bearer token."""

    def __init__(self, settings: _OAuthSettings, ctx: BuildContext, place: str | None,
                 initial: _Token | None = None, rotation: RefreshTokenRotation | None = None):
        super().__init__(ctx.clock, initial)
        self._rotation = rotation  # a rotating refresh token (`refresh_token_updater`)
        self._settings = settings
        self._ctx = ctx
        self._place = place
        self._fetchable = bool(settings.endpoint)

    def __repr__(self) -> str:
        endpoint = self._ctx.mask(self._settings.endpoint) if self._settings.endpoint else None
        return f"OAuth(endpoint={endpoint!r}, grant_type={self._settings.grant_type!r})"

    def apply(self, parts: RequestParts) -> None:
        parts.headers["Authorization"] = f"Bearer {self.token()}"

    def secrets(self) -> tuple[str, ...]:
        rotated = _present(self._rotation.refresh_token) if self._rotation is not None else ()
        return self._current_secret() + self._settings.hidden + rotated

    def _fetch(self) -> _Token:
        settings = self._settings
        data = dict(settings.body)
        if self._rotation is not None:
            data[self._rotation.field] = self._rotation.refresh_token
        parts = RequestParts("POST", url=settings.endpoint, headers=dict(settings.headers), data=data)
        where = parts.to_request().describe(self._mask)
        credentials = "check client_id, client_secret and refresh_token in the config"

        def failed(reason: str, hint: str | None, transient: bool) -> AuthenticationError:
            fix = hint or ("the token endpoint may be down; try again later" if transient else credentials)
            return AuthenticationError(
                f"could not get an OAuth access token from {where}: {reason}; {fix}",
                request=where, place=self._place, failure_type="transient_error" if transient else None,
            )

        started = self._clock.now()
        response = _exchange(self._ctx, parts, self._mask, failed)
        body = _json_object(response)
        if body is None:
            raise failed("its answer is not a JSON object", None, False)
        value = body.get(settings.access_token_name)
        if not isinstance(value, str) or not value:
            keys = ", ".join(f"`{key}`" for key in sorted(map(str, body))) or "none"
            raise failed(
                f"its answer has no `{settings.access_token_name}` (its keys: {keys})",
                f"set `access_token_name` if the token is under another key; otherwise {credentials}", False,
            )
        expires = self._expiry(body.get(settings.expires_in_name), started, failed)
        if self._rotation is not None:
            self._rotation.rotated(body, value, expires)
        return _Token(value, _renew_at(started, expires) if expires is not None else None, expires)

    def _expiry(self, raw: Any, started: datetime, failed: _Failed) -> datetime | None:
        if raw is None or raw == "":
            return None  # no lifetime given: use the token until a 401
        fmt = self._settings.expiry_format
        seconds = None if fmt else _seconds(raw)
        if seconds is not None:
            return started + timedelta(seconds=seconds)
        try:
            expires = _expiry_of(raw, fmt)
        except DatetimeFormatError:
            name = self._settings.expires_in_name
            raise AuthenticationError(
                f"the token endpoint {self._settings.endpoint and self._mask(self._settings.endpoint)} gave "
                f"`{name}` as {raw!r}, which is neither seconds nor a datetime"
                + (f" in the format {fmt!r}" if fmt else "")
                + "; set `token_expiry_date_format` to the format of that value",
                place=self._place,
            ) from None
        return expires

    def _mask(self, text: str) -> str:
        return masking_credentials(self, self._ctx.mask)(text)


@builds("OAuthAuthenticator")
def _build_oauth(model: models.OAuthAuthenticator, ctx: BuildContext, path: tuple) -> OAuth:
    params = model.parameters

    def render(value: Any) -> str:
        return _text(ctx.render(value, params)) if value is not None else ""

    grant_type = render(model.grant_type) or "refresh_token"
    client_id, client_secret = render(model.client_id), render(model.client_secret)
    refresh_token = render(model.refresh_token)
    body: dict[str, Any] = {model.grant_type_name: grant_type}
    if client_id:
        body[model.client_id_name] = client_id
    if client_secret:
        body[model.client_secret_name] = client_secret
    if grant_type == "refresh_token" and refresh_token:
        body[model.refresh_token_name] = refresh_token
    if model.scopes:
        body["scope"] = " ".join(model.scopes)
    body.update(_render_mapping(ctx, model.refresh_request_body, params))
    headers = {str(k): _text(v) for k, v in _render_mapping(ctx, model.refresh_request_headers, params).items()}
    settings = _OAuthSettings(
        endpoint=render(model.token_refresh_endpoint),
        grant_type=grant_type,
        body=body,
        headers=headers,
        access_token_name=model.access_token_name,
        expires_in_name=model.expires_in_name,
        expiry_format=model.token_expiry_date_format,
        hidden=_present(client_secret, refresh_token),
    )
    place = ctx.place(path)
    rotation = None
    if model.refresh_token_updater is not None:
        rotation = RefreshTokenRotation(model.refresh_token_updater, ctx.config, ctx.config_sink,
                                        model.refresh_token_name, refresh_token, place)
        settings = replace(settings, hidden=settings.hidden + _present(rotation.refresh_token))
    initial = None
    access_token = render(model.access_token_value)
    if rotation is not None:  # the tokens live at the updater's config paths
        held, expires = rotation.initial(ctx.config)
        if held:  # without a readable expiry it is refreshed before first use
            initial = _Token(held, _renew_at(ctx.clock.now(), expires) if expires else ctx.clock.now(), expires)
    elif access_token:
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
    if initial is None and not settings.endpoint:
        raise ConfigError(
            "the OAuth authenticator has neither an access token (`access_token_value` rendered empty) "
            "nor a `token_refresh_endpoint` to get one; set the access token in the config"
            + place_suffix(place)
        )
    oauth = OAuth(settings, ctx, place, initial, rotation)
    # One token per definition for the whole sync (digested: the body holds the secrets).
    updater = model.refresh_token_updater.model_dump(mode="json") if model.refresh_token_updater else None
    oauth._shared_by(ctx, "oauth", [settings.endpoint, grant_type, client_id, body, headers,
                                    model.access_token_name, access_token, updater])
    return oauth


def _render_mapping(ctx: BuildContext, values: Any, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Keys and text values of a mapping rendered; a single template string must render an object."""
    if isinstance(values, str):
        rendered = ctx.render(values, parameters, "object")
        return dict(rendered) if isinstance(rendered, Mapping) else {}
    return {_text(ctx.render(k, parameters)): ctx.render(v, parameters) for k, v in values.items()}


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
