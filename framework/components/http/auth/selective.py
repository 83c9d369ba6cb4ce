"""``SelectiveAuthenticator``: one of several authenticators, chosen by a value in the config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from framework.components.context import BuildContext, builds
from framework.components.http.client import Authenticator
from framework.errors import ConfigError, place_suffix
from framework.models import auth as models


@builds("SelectiveAuthenticator")
def build_selective(model: models.SelectiveAuthenticator, ctx: BuildContext, path: tuple) -> Authenticator:
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
