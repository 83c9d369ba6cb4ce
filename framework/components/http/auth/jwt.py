"""JSON Web Tokens signed with PyJWT (``JwtAuthenticator``), also the profile assertion of an OAuth grant.

PyJWT and cryptography are imported only when a key is loaded or a token signed: they take about 0.1 s
to import, which no other authenticator should pay.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from framework.components.context import BuildContext, builds
from framework.components.http.auth.base import as_text, present, render_mapping
from framework.components.http.auth.tokens import RenewedToken, Token, renewal_time
from framework.components.http.request import Injection, RequestParts, injection_of
from framework.errors import ConfigError, place_suffix
from framework.models import auth as models

__all__ = ["RESERVED_JWT_CLAIMS", "RESERVED_JWT_HEADERS", "Jwt", "build_jwt"]


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


class Jwt(RenewedToken):
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

    def _fetch(self) -> Token:
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
        return Token(token, renewal_time(now, expiry) if expires > issued else now)


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


def build_jwt(model: models.JwtAuthenticator, ctx: BuildContext, path: tuple) -> Jwt:
    params = model.parameters
    place = ctx.place(path)

    def text(value: Any) -> str:
        return as_text(ctx.render(value, params)) if value is not None else ""

    if model.algorithm not in models.JWT_ALGORITHMS:
        raise ConfigError(f"unknown JWT algorithm {model.algorithm!r}; use one of "
                          f"{', '.join(models.JWT_ALGORITHMS)}" + place_suffix(place))
    if model.token_duration is not None and model.token_duration <= 0:
        raise ConfigError(f"`token_duration` is {model.token_duration}; give the token's lifetime in seconds, "
                          "a positive integer" + place_suffix(place))
    headers = {k: v for k, v in render_mapping(ctx, model.additional_jwt_headers, params, "any").items()}
    claims = {k: v for k, v in render_mapping(ctx, model.additional_jwt_payload, params, "any").items()}
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
    hidden = present(secret, base64.b64encode(secret.encode()).decode("ascii") if encode and secret else "",
                      passphrase)
    injection = (injection_of(model.request_option, ctx) if model.request_option is not None
                 else Injection("header", ("Authorization",)))
    settings = _JwtSettings(model.algorithm, key, headers, claims, model.token_duration, text(model.header_prefix),
                            hidden)
    return Jwt(settings, injection, ctx, place)


builds("JwtAuthenticator")(build_jwt)
