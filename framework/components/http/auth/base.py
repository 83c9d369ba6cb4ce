"""What every authenticator family shares: the :class:`Authenticator` protocol, :class:`NoAuth`, and the
helpers that turn rendered template values into text and list the credentials in use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.client import Authenticator
from framework.components.http.request import RequestParts
from framework.models import auth as models

__all__ = ["Authenticator", "NoAuth", "as_text", "present", "render_mapping"]


class NoAuth(Struct, frozen=True):
    """Requests carry no credentials."""

    def apply(self, parts: RequestParts) -> None:
        return None

    def refresh(self) -> bool:
        return False

    def secrets(self) -> tuple[str, ...]:
        return ()


def present(*values: str | None) -> tuple[str, ...]:
    """The values that are not empty (the credentials an authenticator's ``secrets()`` lists)."""
    return tuple(value for value in values if value)


@builds("NoAuth")
def build_no_auth(model: models.NoAuth, ctx: BuildContext, path: tuple) -> NoAuth:
    return NoAuth()


def as_text(value: Any) -> str:
    """A rendered value as text: None is empty."""
    return "" if value is None else str(value)


def render_mapping(ctx: BuildContext, values: Any, parameters: Mapping[str, Any],
                   result: str = "string") -> dict[str, Any]:
    """Keys and values of a mapping rendered (values as ``result``); a single template string must render
    an object."""
    if isinstance(values, str):
        rendered = ctx.render(values, parameters, "object")
        return dict(rendered) if isinstance(rendered, Mapping) else {}
    return {as_text(ctx.render(k, parameters)): ctx.render(v, parameters, result) for k, v in values.items()}
