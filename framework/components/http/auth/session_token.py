"""Session tokens got by logging in: ``SessionTokenAuthenticator`` and Airbyte's older
``LegacySessionTokenAuthenticator``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from framework.components.context import BuildContext, builds
from framework.components.http.auth.base import NoAuth, as_text, present, render_mapping
from framework.components.http.auth.tokens import (
    Failed,
    RenewedToken,
    Token,
    TokenRequestErrors,
    exchange,
    json_object,
)
from framework.components.http.client import Authenticator, HttpClient
from framework.components.http.error_handler import Resolution
from framework.components.http.request import HttpRequest, RequestParts, injection_of, join_url, without_nulls
from framework.components.http.transport import HttpResponse
from framework.errors import AuthenticationError, TransportError
from framework.masking import masking_credentials
from framework.models import auth as models
from framework.models.decoders import XmlDecoder
from framework.temporal.durations import parse_duration

if TYPE_CHECKING:  # pragma: no cover
    import isodate

__all__ = ["LegacySessionToken", "SessionToken"]


class SessionToken(RenewedToken):
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

    def _fetch(self) -> Token:
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
        response = exchange(self._ctx, parts, self._ctx.mask, failed)
        node: Any = _xml_object(response) if self._xml else json_object(response)
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
        return Token(str(node), renew_at)


@builds("SessionTokenAuthenticator")
def build_session_token(model: models.SessionTokenAuthenticator, ctx: BuildContext, path: tuple) -> SessionToken:
    login = model.login_requester
    params = login.parameters
    url = join_url(as_text(ctx.render(login.url_base, params)), as_text(ctx.render(login.path, params)))
    login_json, login_data = login.bodies()  # with `request_body` folded in
    json_body = _render_body_json(ctx, login_json, params)
    data_body = _render_body_data(ctx, login_data, params)
    request = HttpRequest(
        login.http_method,
        url,
        params=tuple((k, as_text(v)) for k, v in render_mapping(ctx, login.request_parameters, params).items()
                     if v is not None),
        headers={k: as_text(v) for k, v in render_mapping(ctx, login.request_headers, params).items()
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
            return as_text(ctx.render(template, use_params, session_token=token))

        def send(parts: RequestParts, token: str) -> None:
            injection.apply(parts, value_of(token))

        def shown(token: str) -> tuple[str, ...]:
            return tuple(dict.fromkeys(present(token, value_of(token))))
    else:

        def send(parts: RequestParts, token: str) -> None:
            parts.headers["Authorization"] = f"Bearer {token}"

        def shown(token: str) -> tuple[str, ...]:
            return present(token)

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
    return {k: as_text(v) for k, v in render_mapping(ctx, body, parameters).items() if v is not None}


def _render_deep(ctx: BuildContext, value: Any, parameters: Mapping[str, Any]) -> Any:
    """Every string inside ``value`` (keys too) rendered; for JSON bodies."""
    if isinstance(value, str):
        return ctx.render(value, parameters)
    if isinstance(value, Mapping):
        return {as_text(ctx.render(k, parameters)): _render_deep(ctx, v, parameters) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_render_deep(ctx, v, parameters) for v in value]
    return value


def _xml_object(response: HttpResponse) -> dict | None:
    """An XML login response as Airbyte's XmlDecoder reads it (``xmltodict``); None when it is not XML."""
    from xml.parsers.expat import ExpatError

    import xmltodict  # here: only XML login responses need it

    try:
        return dict(xmltodict.parse(response.content)) if response.content.strip() else None
    except ExpatError:
        return None


# --- the older session token ---------------------------------------------------------------


class LegacySessionToken(RenewedToken):
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
        return tuple(dict.fromkeys(self._current_secret() + present(self._given, self._password)))

    def _failed(self, where: str, doing: str) -> Failed:
        def failed(reason: str, hint: str | None, transient: bool) -> AuthenticationError:
            fix = hint or ("the API may be down; try again later" if transient
                           else "check the session token, username and password in the config")
            return AuthenticationError(f"could not {doing} at {where}: {reason}; {fix}", request=where,
                                       place=self._place, failure_type="transient_error" if transient else None)
        return failed

    def _fetch(self) -> Token:
        base = self._base or ""
        if self._given and not self._given_checked:
            self._given_checked = True  # a token from the config is tried once; after a 401, log in
            if self._valid(base):
                return Token(self._given, None)
        if not (self._username and self._password):
            raise AuthenticationError(
                "the session token is not valid (or not given) and there is no username and password to log in "
                "with; set a valid `session_token`, or `username` and `password`, in the config",
                place=self._place)
        parts = RequestParts("POST", url=f"{base}{self._login_url}", headers={"Content-Type": "application/json"},
                             json={"username": self._username, "password": self._password})
        where = parts.to_request().describe(self._mask)
        failed = self._failed(where, "log in to get a session token")
        body = json_object(exchange(self._ctx, parts, self._mask, failed))
        value = body.get(self._response_key) if body is not None else None
        if value is None or value == "" or isinstance(value, (dict, list)):
            raise failed(f"its answer has no `{self._response_key}`",
                         "set `session_token_response_key` to the key of the token in the login answer", False)
        return Token(str(value), None)

    def _valid(self, base: str) -> bool:
        parts = RequestParts("GET", url=f"{base}{self._validate_url}", headers={self._header: self._given})
        where = parts.to_request().describe(self._mask)
        errors = TokenRequestErrors(self._ctx.clock)

        def give_up(resolution: Resolution, response: HttpResponse | None, exhausted: bool) -> AuthenticationError:
            hint = "check the URL or try again later" if response is None else None
            return self._failed(where, "validate the session token")(resolution.message or "it failed", hint,
                                                                     exhausted)

        client = HttpClient(self._ctx.transport, _ValidationErrors(errors), sleep=self._ctx.sleep,
                            mask=self._mask, give_up=give_up, secret_request=True)
        response = client.send(parts)
        return response is not None and 200 <= response.status < 300

    def _mask(self, text: str) -> str:
        return masking_credentials(self, self._ctx.mask)(text)


class _ValidationErrors:
    """Token request errors, except that a 401 means "not valid" (the answer is handed back, no error)."""

    def __init__(self, inner: TokenRequestErrors):
        self.inner = inner
        self.max_retries = inner.max_retries

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        if response is not None and response.status == 401:
            return Resolution("SUCCESS")
        return self.inner.interpret(response, error)

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        return self.inner.backoff(response, attempt)


@builds("LegacySessionTokenAuthenticator")
def build_legacy_session_token(model: models.LegacySessionTokenAuthenticator, ctx: BuildContext,
                                path: tuple) -> LegacySessionToken:
    params = model.parameters

    def text(value: Any) -> str:
        return as_text(ctx.render(value, params)) if value is not None else ""

    return LegacySessionToken(text(model.header), text(model.session_token), text(model.session_token_response_key),
                              text(model.username), text(model.password), text(model.login_url),
                              text(model.validate_session_url), ctx, ctx.place(path))
