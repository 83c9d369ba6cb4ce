"""OAuth 2.0 access tokens (``OAuthAuthenticator``), obtained from a token endpoint and sent as a bearer token.

An OAuth authenticator with a ``refresh_token_updater`` takes each token answer's new refresh token for
its next refresh, and reports what the config should now hold as a :class:`TokenRotation`
(:meth:`OAuth.rotation`, :meth:`OAuth.on_rotation`); saving it is the sync-wide token service's part.
With ``use_profile_assertion`` the token request carries a JWT signed by
:mod:`~framework.components.http.auth.jwt`.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import urlencode

from msgspec import Struct

from framework.components.config_sink import get_path, set_path
from framework.components.context import BuildContext, builds
from framework.components.http.auth.base import as_text, present, render_mapping
from framework.components.http.auth.jwt import Jwt, build_jwt
from framework.components.http.auth.tokens import RenewedToken, Token, exchange, json_object, renewal_time
from framework.components.http.request import RequestParts
from framework.components.http.token_service import save_rotation
from framework.components.http.transport import HttpResponse
from framework.errors import AuthenticationError, ConfigError, DatetimeFormatError, place_suffix
from framework.masking import masking_credentials
from framework.models import auth as models
from framework.temporal.datetime_formats import parse_datetime

__all__ = ["JWT_BEARER_GRANT", "OAuth", "TokenRotation"]


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
        body = json_object(response)
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


class OAuth(RenewedToken):
    """OAuth 2.0 access tokens (``refresh_token``, ``client_credentials`` or JWT bearer grant), sent as a
    bearer token.

    With a rotating refresh token (``rotating``), each token answer's new refresh token is the one the
    next refresh sends, and :meth:`rotation` tells what the config should now hold; listeners added
    with :meth:`on_rotation` hear of each rotation as it happens (under the renewal lock, once per
    refresh).
    """

    def __init__(self, settings: _OAuthSettings, ctx: BuildContext, place: str | None,
                 initial: Token | None = None, refresh_token: str = "", rotating: _Rotating | None = None,
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
        return tuple(dict.fromkeys(self._current_secret() + self._settings.hidden + present(self._refresh_token)
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

    def _fetch(self) -> Token:
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
        response = exchange(self._ctx, parts, self._mask, failed, settings.refused)
        body = json_object(response)
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
        return Token(value, renewal_time(started, expires) if expires is not None else None, expires)

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
def build_oauth(model: models.OAuthAuthenticator, ctx: BuildContext, path: tuple) -> OAuth:
    params = model.parameters

    def render(value: Any) -> str:
        return as_text(ctx.render(value, params)) if value is not None else ""

    place = ctx.place(path)
    updater = model.refresh_token_updater
    use_assertion = bool(ctx.render(model.use_profile_assertion, params, "boolean"))
    grant_type = JWT_BEARER_GRANT if use_assertion else (render(model.grant_type) or "refresh_token")
    client_id, client_secret = render(model.client_id), render(model.client_secret)
    if updater is not None:  # as Airbyte: the config's `credentials` win over the rendered values
        client_id = as_text(get_path(ctx.config, ("credentials", "client_id"))) or client_id
        client_secret = as_text(get_path(ctx.config, ("credentials", "client_secret"))) or client_secret
        refresh_token = as_text(get_path(ctx.config, tuple(updater.refresh_token_config_path)))
    else:
        refresh_token = render(model.refresh_token)
    headers = {str(k): as_text(v) for k, v in render_mapping(ctx, model.refresh_request_headers, params).items()}
    head: dict[str, Any] = {model.grant_type_name: grant_type}
    if "Authorization" not in headers:  # credentials in that header are not repeated in the body
        if client_id:
            head[model.client_id_name] = client_id
        if client_secret:
            head[model.client_secret_name] = client_secret
    tail: dict[str, Any] = {"scopes": list(model.scopes)} if model.scopes else {}
    for key, value in render_mapping(ctx, model.refresh_request_body, params).items():
        tail.setdefault(key, value)
    assertion: Jwt | None = None
    if use_assertion:
        if model.profile_assertion is None:
            raise ConfigError("`use_profile_assertion` is on but there is no `profile_assertion`; add a "
                              "JwtAuthenticator there" + place_suffix(place))
        assertion = build_jwt(model.profile_assertion, ctx, path + ("profile_assertion",))
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
        hidden=present(client_secret),
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
                renew_at = renewal_time(ctx.clock.now(), expires)
            initial = Token(access_token, renew_at)
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


def _held_token(ctx: BuildContext, access_token: Any, expiry: Any) -> Token | None:
    """The access token a rotating config holds, while its expiry date is ahead; None (refresh first) when
    either is missing or the date cannot be read."""
    if not isinstance(access_token, str) or not access_token or expiry in (None, ""):
        return None
    try:
        expires = _expiry_of(expiry, None)
    except DatetimeFormatError:
        return None
    now = ctx.clock.now()
    return Token(access_token, renewal_time(now, expires)) if expires > now else None
