"""Authenticators: how a request proves who is asking."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from framework.models.base import BASE, SESSION, Component, spec
from framework.models.custom import CustomAuthenticator
from framework.models.token_rotation import RefreshTokenUpdater


class NoAuth(Component):
    """Requests carry no credentials."""

    type: Literal["NoAuth"] = spec("Component type.", "NoAuth", "NoAuth")


class ApiKeyAuthenticator(Component):
    """Sends an API key in a header, query parameter or body field."""

    type: Literal["ApiKeyAuthenticator"] = spec("Component type.", "ApiKeyAuthenticator", "ApiKeyAuthenticator")
    api_token: str = spec("The key, usually taken from the config.", "{{ config['api_key'] }}", template=BASE)
    header: str | None = spec(
        "Header that carries the key. Give this or `inject_into`.", "X-API-Key", None, template=BASE
    )
    inject_into: RequestOption | None = spec(
        "Where the key goes, for keys sent other than in a header. Give this or `header`.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "api_key"},
        None,
    )

    @model_validator(mode="after")
    def _one_place(self) -> ApiKeyAuthenticator:
        if (self.header is None) == (self.inject_into is None):
            raise ValueError("give exactly one of `header` or `inject_into`")
        return self


class BearerAuthenticator(Component):
    """Sends `Authorization: Bearer <token>`."""

    type: Literal["BearerAuthenticator"] = spec("Component type.", "BearerAuthenticator", "BearerAuthenticator")
    api_token: str = spec("The token, usually taken from the config.", "{{ config['access_token'] }}", template=BASE)


class BasicHttpAuthenticator(Component):
    """Sends HTTP Basic credentials."""

    type: Literal["BasicHttpAuthenticator"] = spec(
        "Component type.", "BasicHttpAuthenticator", "BasicHttpAuthenticator"
    )
    username: str = spec("User name.", "{{ config['username'] }}", template=BASE)
    password: str = spec(
        "Password; empty when the API takes the key as user name.", "{{ config['password'] }}", "", template=BASE
    )


class OAuthAuthenticator(Component):
    """OAuth 2.0 access tokens from a refresh token or client credentials, refreshed before they expire."""

    type: Literal["OAuthAuthenticator"] = spec("Component type.", "OAuthAuthenticator", "OAuthAuthenticator")
    token_refresh_endpoint: str | None = spec(
        "URL that issues access tokens.", "https://auth.example.com/oauth/token", None, template=BASE
    )
    client_id: str | None = spec("OAuth client id.", "{{ config['client_id'] }}", None, template=BASE)
    client_secret: str | None = spec("OAuth client secret.", "{{ config['client_secret'] }}", None, template=BASE)
    refresh_token: str | None = spec(
        "Refresh token (for the `refresh_token` grant).", "{{ config['refresh_token'] }}", None, template=BASE
    )
    grant_type: str = spec(
        "OAuth grant: `refresh_token` or `client_credentials`.", "client_credentials", "refresh_token", template=BASE
    )
    scopes: tuple[str, ...] = spec("Scopes asked for.", ["read:orders"], ())
    access_token_value: str | None = spec(
        "An access token already held; used until it expires.", "{{ config['access_token'] }}", None, template=BASE
    )
    token_expiry_date: str | None = spec(
        "When `access_token_value` expires.", "{{ config['token_expiry_date'] }}", None, template=BASE
    )
    token_expiry_date_format: str | None = spec(
        "Format of the expiry in the token response, when it is a date rather than seconds.",
        "%Y-%m-%dT%H:%M:%S.%fZ",
        None,
        format="strftime",
    )
    access_token_name: str = spec("Key of the access token in the token response.", "access_token", "access_token")
    expires_in_name: str = spec("Key of the lifetime in the token response.", "expires_in", "expires_in")
    client_id_name: str = spec("Name of the client id field in the refresh request.", "client_id", "client_id")
    client_secret_name: str = spec(
        "Name of the client secret field in the refresh request.", "client_secret", "client_secret"
    )
    refresh_token_name: str = spec(
        "Name of the refresh token field in the refresh request.", "refresh_token", "refresh_token"
    )
    grant_type_name: str = spec("Name of the grant type field in the refresh request.", "grant_type", "grant_type")
    refresh_request_body: Mapping[str, Any] = spec(
        "Extra fields of the refresh request body.", {"audience": "api"}, default_factory=dict, template=BASE
    )
    refresh_request_headers: Mapping[str, Any] = spec(
        "Extra headers of the refresh request.", {"Accept": "application/json"}, default_factory=dict, template=BASE
    )
    refresh_token_updater: RefreshTokenUpdater | None = spec(
        "Rotating refresh tokens: take the new refresh token from each token response and save it (with the "
        "access token and its expiry) at these config paths.", {"refresh_token_name": "refresh_token"}, None
    )

    @model_validator(mode="after")
    def _grant_needs(self) -> OAuthAuthenticator:
        if self.access_token_value is None and not self.token_refresh_endpoint:
            raise ValueError("`token_refresh_endpoint` is required unless `access_token_value` is given")
        if (self.grant_type == "refresh_token" and self.access_token_value is None and self.refresh_token is None
                and self.refresh_token_updater is None):  # the updater reads it from its config path
            raise ValueError("the `refresh_token` grant needs `refresh_token`; or set `grant_type: client_credentials`")
        return self


class SessionTokenRequestApiKeyAuthenticator(Component):
    """Sends the session token like an API key."""

    takes_parameters = False

    type: Literal["ApiKey"] = spec("Component type.", "ApiKey", "ApiKey")
    inject_into: RequestOption = spec(
        "Where the session token goes.",
        {"type": "RequestOption", "inject_into": "header", "field_name": "X-Session"},
    )
    api_token: str = spec(
        "Value sent; the token itself by default.", "Token {{ session_token }}", "{{ session_token }}", template=SESSION
    )


class SessionTokenRequestBearerAuthenticator(Component):
    """Sends the session token as a bearer token."""

    takes_parameters = False

    type: Literal["Bearer"] = spec("Component type.", "Bearer", "Bearer")


SessionTokenUse = Annotated[
    SessionTokenRequestApiKeyAuthenticator | SessionTokenRequestBearerAuthenticator,
    Field(discriminator="type"),
]


class SessionTokenAuthenticator(Component):
    """Logs in with one request, then sends the session token it returned."""

    type: Literal["SessionTokenAuthenticator"] = spec(
        "Component type.", "SessionTokenAuthenticator", "SessionTokenAuthenticator"
    )
    login_requester: HttpRequester = spec(
        "The login request.",
        {"type": "HttpRequester", "url_base": "https://api.example.com", "path": "/login", "http_method": "POST"},
    )
    session_token_path: tuple[str, ...] = spec("Path of the token in the login response.", ["data", "token"])
    expiration_duration: str | None = spec(
        "ISO 8601 duration after which the token is renewed; never when left out.", "PT1H", None, format="duration"
    )
    request_authentication: SessionTokenUse = spec(
        "How the token is sent on the data requests.", {"type": "Bearer"}
    )
    decoder: LoginDecoder | None = spec(
        "How the login response is read (JSON when left out).", {"type": "XmlDecoder"}, None
    )


class SelectiveAuthenticator(Component):
    """Chooses one authenticator by a value in the config."""

    type: Literal["SelectiveAuthenticator"] = spec(
        "Component type.", "SelectiveAuthenticator", "SelectiveAuthenticator"
    )
    authenticator_selection_path: tuple[str, ...] = spec(
        "Path of the config value that names the authenticator.", ["credentials", "auth_type"]
    )
    authenticators: Mapping[str, Authenticator] = spec(
        "Authenticators by the config value that selects them.",
        {"api_key": {"type": "BearerAuthenticator", "api_token": "{{ config['credentials']['api_key'] }}"}},
    )


Authenticator = Annotated[
    NoAuth | ApiKeyAuthenticator | BearerAuthenticator | BasicHttpAuthenticator | OAuthAuthenticator
    | SessionTokenAuthenticator | SelectiveAuthenticator | CustomAuthenticator,
    Field(discriminator="type"),
]

# Last, because requests imports this module (an HttpRequester has an authenticator, and a session
# token authenticator has a login HttpRequester): pydantic resolves the names above from here.
from framework.models.decoders import LoginDecoder  # noqa: E402
from framework.models.requests import HttpRequester, RequestOption  # noqa: E402
