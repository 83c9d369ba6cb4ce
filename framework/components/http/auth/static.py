"""Credentials given in the config and sent as they are: an API key, a bearer token, HTTP basic auth.

Templates are rendered once, when the authenticator is built; nothing is obtained at run time, so
``refresh()`` never helps.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from framework.components.context import BuildContext, builds
from framework.components.http.auth.base import as_text, present
from framework.components.http.request import Injection, RequestParts, injection_of
from framework.models import auth as models

__all__ = ["ApiKeyAuth", "BasicAuth", "BearerAuth"]


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
        return present(self.token)


@dataclass(frozen=True)
class BearerAuth:
    """``Authorization: Bearer <token>``."""

    token: str = field(repr=False)

    def apply(self, parts: RequestParts) -> None:
        parts.headers["Authorization"] = f"Bearer {self.token}"

    def refresh(self) -> bool:
        return False

    def secrets(self) -> tuple[str, ...]:
        return present(self.token)


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
        return present(self.password or self.username, self.encoded)


@builds("ApiKeyAuthenticator")
def build_api_key(model: models.ApiKeyAuthenticator, ctx: BuildContext, path: tuple) -> ApiKeyAuth:
    token = as_text(ctx.render(model.api_token, model.parameters))
    if model.inject_into is not None:
        injection = injection_of(model.inject_into, ctx)
    else:
        injection = Injection("header", (as_text(ctx.render(model.header, model.parameters)),))
    return ApiKeyAuth(injection, token)


@builds("BearerAuthenticator")
def build_bearer(model: models.BearerAuthenticator, ctx: BuildContext, path: tuple) -> BearerAuth:
    return BearerAuth(as_text(ctx.render(model.api_token, model.parameters)))


@builds("BasicHttpAuthenticator")
def build_basic(model: models.BasicHttpAuthenticator, ctx: BuildContext, path: tuple) -> BasicAuth:
    return BasicAuth(
        as_text(ctx.render(model.username, model.parameters)),
        as_text(ctx.render(model.password, model.parameters)),
    )
