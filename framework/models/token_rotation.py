"""Rotating refresh tokens: where an OAuthAuthenticator's ``refresh_token_updater`` keeps the tokens in the config."""

from __future__ import annotations

from pydantic import model_validator

from framework.models.base import Model, spec


class RefreshTokenUpdater(Model):
    """The refresh token can be used once: each token response brings a new one, saved back into the config
    (with the access token and its expiry) so the next sync starts from it."""

    refresh_token_name: str = spec(
        "Key of the new refresh token in the token response.", "refresh_token", "refresh_token"
    )
    access_token_config_path: tuple[str, ...] = spec(
        "Config path of the access token (read at the start, written after each refresh).",
        ["credentials", "access_token"], ("credentials", "access_token"),
    )
    refresh_token_config_path: tuple[str, ...] = spec(
        "Config path of the refresh token (read at the start, written after each refresh).",
        ["credentials", "refresh_token"], ("credentials", "refresh_token"),
    )
    token_expiry_date_config_path: tuple[str, ...] = spec(
        "Config path of the access token's expiry (ISO 8601; written after each refresh).",
        ["credentials", "token_expiry_date"], ("credentials", "token_expiry_date"),
    )
    refresh_token_error_status_codes: tuple[int, ...] = spec(
        "Deprecated (set it on the OAuthAuthenticator): statuses of a token response that means the refresh "
        "token is no longer valid.", [400], (),
    )
    refresh_token_error_key: str = spec(
        "Deprecated (set it on the OAuthAuthenticator): key of the error code in such a response.", "error", ""
    )
    refresh_token_error_values: tuple[str, ...] = spec(
        "Deprecated (set it on the OAuthAuthenticator): error codes that mean the refresh token is no longer valid.",
        ["invalid_grant"], (),
    )

    @model_validator(mode="after")
    def _paths_not_empty(self) -> RefreshTokenUpdater:
        for name in ("access_token_config_path", "refresh_token_config_path", "token_expiry_date_config_path"):
            if not getattr(self, name):
                raise ValueError(f"`{name}` must name at least one key of the config")
        return self


__all__ = ["RefreshTokenUpdater"]
