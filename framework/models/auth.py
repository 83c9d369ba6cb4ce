"""Authenticators: how a request proves who is asking."""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from framework.models.base import BASE, SESSION, Component, Model, spec
from framework.models.budgets import QuotaStatusSource, TokenQuota
from framework.models.custom import CustomAuthenticator
from framework.models.decoders import LoginDecoder

if TYPE_CHECKING:  # requests imports this module: an HttpRequester has an authenticator (see back_references)
    from framework.models.requests import HttpRequester, RequestOption


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
    inject_into: "RequestOption | None" = spec(
        "Where the key goes, for keys sent other than in a header. Give this or `header`.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "api_key"},
        None,
    )

    @model_validator(mode="after")
    def _one_place(self) -> "ApiKeyAuthenticator":
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
        "Extra headers of the refresh request. With an `Authorization` header here the client id and secret "
        "are left out of the body (they travel in that header).",
        {"Accept": "application/json"}, default_factory=dict, template=BASE
    )
    send_refresh_request_as_query_params: bool = spec(
        "Send the refresh fields in the URL's query string, with an empty body (for providers that ask so).",
        True, False,
    )
    refresh_token_error_status_codes: tuple[int, ...] = spec(
        "Statuses of a token answer that, with an error value below, mean the refresh token was refused "
        "(the sync fails as a config error: re-authenticate).", [400], ()
    )
    refresh_token_error_key: str = spec("Key of the error value in such an answer.", "error", "")
    refresh_token_error_values: tuple[str, ...] = spec(
        "Error values that mean the refresh token was refused.", ["invalid_grant"], ()
    )
    refresh_token_updater: "RefreshTokenUpdater | None" = spec(
        "For rotating (single-use) refresh tokens: the tokens and expiry are read from and written back to "
        "these config paths, and each token answer's new refresh token is used from then on.",
        {"refresh_token_name": "refresh_token", "refresh_token_config_path": ["credentials", "refresh_token"]},
        None,
    )
    profile_assertion: "JwtAuthenticator | None" = spec(
        "The JWT sent as `assertion` in the JWT bearer grant (with `use_profile_assertion`).",
        {"type": "JwtAuthenticator", "secret_key": "{{ config['private_key'] }}", "algorithm": "RS256"},
        None,
    )
    use_profile_assertion: bool | str = spec(
        "Get tokens by the JWT bearer grant (`urn:ietf:params:oauth:grant-type:jwt-bearer`) with "
        "`profile_assertion`'s token, instead of a refresh token or client credentials.",
        True, False, template=BASE, result="boolean",
    )

    @model_validator(mode="after")
    def _grant_needs(self) -> "OAuthAuthenticator":
        if self.access_token_value is None and not self.token_refresh_endpoint:
            raise ValueError("`token_refresh_endpoint` is required unless `access_token_value` is given")
        if self.use_profile_assertion is True and self.profile_assertion is None:
            raise ValueError("`use_profile_assertion` needs `profile_assertion` (a JwtAuthenticator)")
        if (self.grant_type == "refresh_token" and self.access_token_value is None and self.refresh_token is None
                and self.refresh_token_updater is None and not self.use_profile_assertion):
            raise ValueError("the `refresh_token` grant needs `refresh_token`; or set `grant_type: client_credentials`")
        return self


class RefreshTokenUpdater(Model):
    """Where a rotating refresh token, its access token and their expiry live in the config."""

    refresh_token_name: str = spec(
        "Key of the new refresh token in the token answer.", "refresh_token", "refresh_token"
    )
    access_token_config_path: tuple[str, ...] = spec(
        "Config path of the access token.", ["credentials", "access_token"], ("credentials", "access_token")
    )
    refresh_token_config_path: tuple[str, ...] = spec(
        "Config path of the refresh token.", ["credentials", "refresh_token"], ("credentials", "refresh_token")
    )
    token_expiry_date_config_path: tuple[str, ...] = spec(
        "Config path of the access token's expiry date.", ["credentials", "token_expiry_date"],
        ("credentials", "token_expiry_date"),
    )
    refresh_token_error_status_codes: tuple[int, ...] = spec(
        "Deprecated: set it on the OAuthAuthenticator.", [400], ()
    )
    refresh_token_error_key: str = spec("Deprecated: set it on the OAuthAuthenticator.", "error", "")
    refresh_token_error_values: tuple[str, ...] = spec(
        "Deprecated: set it on the OAuthAuthenticator.", ["invalid_grant"], ()
    )

    @model_validator(mode="after")
    def _paths_not_empty(self) -> "RefreshTokenUpdater":
        for name in ("access_token_config_path", "refresh_token_config_path", "token_expiry_date_config_path"):
            if not getattr(self, name):
                raise ValueError(f"`{name}` must name at least one key of the config")
        return self


#: The signing algorithms of Airbyte's JwtAuthenticator (all of them PyJWT's, with `cryptography`).
JWT_ALGORITHMS = ("HS256", "HS384", "HS512", "ES256", "ES256K", "ES384", "ES512", "RS256", "RS384", "RS512",
                  "PS256", "PS384", "PS512", "EdDSA")


class JwtHeaders(Model):
    """The JOSE header fields of a JWT that have a name of their own."""

    kid: str | None = spec("Key identifier.", "{{ config['kid'] }}", None, template=BASE)
    typ: str | None = spec("Media type of the token.", "JWT", "JWT", template=BASE)
    cty: str | None = spec("Content type.", "JWT", None, template=BASE)


class JwtPayload(Model):
    """The registered claims of a JWT that a manifest sets (`iat`, `nbf` and `exp` come from the clock)."""

    iss: str | None = spec("Issuer.", "{{ config['client_email'] }}", None, template=BASE)
    sub: str | None = spec("Subject.", "{{ config['user_id'] }}", None, template=BASE)
    aud: str | None = spec("Audience.", "appstoreconnect-v1", None, template=BASE)


class JwtAuthenticator(Component):
    """Signs a JSON Web Token and sends it (`Authorization: <prefix> <token>` unless `request_option` says
    otherwise), signing a new one before it expires."""

    type: Literal["JwtAuthenticator"] = spec("Component type.", "JwtAuthenticator", "JwtAuthenticator")
    secret_key: str = spec(
        "The key that signs: a shared secret for HS algorithms, a PEM private key for the others.",
        "{{ config['secret_key'] }}", template=BASE,
    )
    base64_encode_secret_key: bool | str = spec(
        "Sign with the base64 encoding of `secret_key` (only when the API asks for it).", True, False,
        template=BASE, result="boolean",
    )
    algorithm: str = spec(f"Signing algorithm: one of {', '.join(JWT_ALGORITHMS)}.", "RS256")
    token_duration: int | None = spec(
        "Seconds a token is valid after it is issued (`exp` = `iat` + this).", 3600, 1200
    )
    header_prefix: str | None = spec(
        "Word sent before the token, such as `Bearer`; none when left out.", "Bearer", None, template=BASE
    )
    jwt_headers: JwtHeaders | None = spec(
        "`kid`, `typ` and `cty` of the token's header.", {"kid": "{{ config['key_id'] }}", "typ": "JWT"}, None,
        template=BASE,
    )
    additional_jwt_headers: Mapping[str, Any] = spec(
        "More header fields (not `kid`, `alg`, `typ` or `cty`).", {"x5t": "{{ config['thumbprint'] }}"},
        default_factory=dict, template=BASE,
    )
    jwt_payload: JwtPayload | None = spec(
        "`iss`, `sub` and `aud` of the token's claims.", {"iss": "{{ config['issuer_id'] }}", "aud": "api"}, None,
        template=BASE,
    )
    additional_jwt_payload: Mapping[str, Any] = spec(
        "More claims (not `iss`, `sub`, `aud`, `iat`, `exp` or `nbf`).", {"scope": "read"},
        default_factory=dict, template=BASE,
    )
    passphrase: str | None = spec(
        "Password of an encrypted PEM private key.", "{{ config['passphrase'] }}", None, template=BASE
    )
    request_option: "RequestOption | None" = spec(
        "Where the token goes; the `Authorization` header when left out.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "jwt"}, None,
    )


class LegacySessionTokenAuthenticator(Component):
    """Deprecated in Airbyte (use SessionTokenAuthenticator): sends a session token in a header, from the
    config when the validation URL accepts it, otherwise from a login with user name and password."""

    type: Literal["LegacySessionTokenAuthenticator"] = spec(
        "Component type.", "LegacySessionTokenAuthenticator", "LegacySessionTokenAuthenticator"
    )
    header: str = spec("Header that carries the session token.", "X-Session", template=BASE)
    login_url: str = spec(
        "Path of the login request, appended to the requester's `url_base` as written.", "session", template=BASE
    )
    session_token: str | None = spec(
        "A session token already held; used while the validation URL accepts it.", "{{ config['session_token'] }}",
        None, template=BASE,
    )
    session_token_response_key: str = spec("Key of the token in the login answer.", "id", template=BASE)
    username: str | None = spec("User name of the login.", "{{ config['username'] }}", None, template=BASE)
    password: str | None = spec("Password of the login.", "{{ config['password'] }}", "", template=BASE)
    validate_session_url: str = spec(
        "Path (appended to `url_base`) that answers 2xx for a valid session token and 401 otherwise.",
        "user/current", template=BASE,
    )


class OAuthConfigSpecification(Model):
    """How an OAuth flow fills the config (passed through to the SPEC message as written)."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    oauth_user_input_from_connector_config_specification: Mapping[str, Any] | None = spec(
        "Config values the user gives that the OAuth flow uses (each with `path_in_connector_config`).",
        {"app_id": {"type": "string", "path_in_connector_config": ["app_id"]}}, None,
    )
    oauth_connector_input_specification: Mapping[str, Any] | None = spec(
        "Airbyte's declarative OAuth flow: `consent_url`, `access_token_url` and what they take.",
        {"consent_url": "https://example.com/oauth/authorize?client_id={{client_id_value}}",
         "access_token_url": "https://example.com/oauth/token"}, None,
    )
    complete_oauth_output_specification: Mapping[str, Any] | None = spec(
        "JSON Schema of what the flow returns, each with its `path_in_connector_config`.",
        {"refresh_token": {"type": "string", "path_in_connector_config": ["credentials", "refresh_token"]}}, None,
    )
    complete_oauth_server_input_specification: Mapping[str, Any] | None = spec(
        "JSON Schema of what the server side of the flow needs (client id and secret).",
        {"client_id": {"type": "string"}, "client_secret": {"type": "string"}}, None,
    )
    complete_oauth_server_output_specification: Mapping[str, Any] | None = spec(
        "JSON Schema of server values copied into the config, each with its `path_in_connector_config`.",
        {"client_id": {"type": "string", "path_in_connector_config": ["credentials", "client_id"]}}, None,
    )

    @model_validator(mode="after")
    def _declarative_flow_urls(self) -> "OAuthConfigSpecification":
        flow = self.oauth_connector_input_specification
        if flow is not None:
            missing = [key for key in ("consent_url", "access_token_url") if key not in flow]
            if missing:
                raise ValueError(f"`oauth_connector_input_specification` needs {' and '.join(map(repr, missing))}")
        return self


#: The keys of a declarative OAuth flow (`oauth_connector_input_specification`) that Airbyte's SPEC message
#: carries (others are dropped, as airbyte-cdk drops them); `scopes_join_strategy` defaults to `space` there.
OAUTH_CONNECTOR_INPUT_KEYS = (
    "consent_url", "scope", "scopes", "optional_scopes", "scopes_join_strategy", "access_token_url",
    "access_token_headers", "access_token_params", "extract_output", "state", "client_id_key", "client_secret_key",
    "scope_key", "state_key", "auth_code_key", "redirect_uri_key",
)
_OAUTH_SPEC_KEYS = ("oauth_user_input_from_connector_config_specification", "oauth_connector_input_specification",
                    "complete_oauth_output_specification", "complete_oauth_server_input_specification",
                    "complete_oauth_server_output_specification")


class AuthFlow(Model):
    """Advanced authentication (`advanced_auth` of the spec): how a UI runs an OAuth flow to fill the config.

    Other keys are accepted and left out of the SPEC message, as airbyte-cdk does (validate-manifest warns).
    """

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    def as_message(self) -> dict[str, Any]:
        """The SPEC message's `advanced_auth`, as airbyte-cdk writes it: fields left out stay out, a
        declarative flow keeps its known keys only, with `scopes_join_strategy: space` unless given."""
        out: dict[str, Any] = {}
        if self.auth_flow_type is not None:
            out["auth_flow_type"] = self.auth_flow_type
        if self.predicate_key is not None:
            out["predicate_key"] = list(self.predicate_key)
        if self.predicate_value is not None:
            out["predicate_value"] = self.predicate_value
        flow = self.oauth_config_specification
        if flow is not None:
            spec_out: dict[str, Any] = {}
            for key in _OAUTH_SPEC_KEYS:
                value = getattr(flow, key)
                if value is None:
                    continue
                if key == "oauth_connector_input_specification":
                    given = {**value, "scopes_join_strategy": value.get("scopes_join_strategy") or "space"}
                    value = {name: given[name] for name in OAUTH_CONNECTOR_INPUT_KEYS if given.get(name) is not None}
                spec_out[key] = _plain(value)
            out["oauth_config_specification"] = spec_out
        return out

    auth_flow_type: Literal["oauth2.0", "oauth1.0"] | None = spec("The kind of flow.", "oauth2.0", None)
    predicate_key: tuple[str, ...] | None = spec(
        "Config path whose value says when this flow applies.", ["credentials", "auth_type"], None
    )
    predicate_value: str | None = spec("The value at `predicate_key` for which it applies.", "Oauth", None)
    oauth_config_specification: OAuthConfigSpecification | None = spec(
        "How the flow fills the config.",
        {"complete_oauth_output_specification": {
            "refresh_token": {"type": "string", "path_in_connector_config": ["credentials", "refresh_token"]}}},
        None,
    )


class SessionTokenRequestApiKeyAuthenticator(Component):
    """Sends the session token like an API key."""

    takes_parameters = False

    type: Literal["ApiKey"] = spec("Component type.", "ApiKey", "ApiKey")
    inject_into: "RequestOption" = spec(
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
    login_requester: "HttpRequester" = spec(
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
    authenticators: "Mapping[str, Authenticator]" = spec(
        "Authenticators by the config value that selects them.",
        {"api_key": {"type": "BearerAuthenticator", "api_token": "{{ config['credentials']['api_key'] }}"}},
    )


class RateLimitedMultipleTokenAuthenticator(Component):
    """Several interchangeable tokens, each used until its rate limit is spent, then the next.

    Each request is counted in the first quota pool whose matchers match it (a pool without matchers is the
    default) and sent with a token that still has calls in that pool. Every token's pools are read from the
    quota status endpoint on first use and again after a wait; when every token is spent, requests wait
    for the earliest reset, at most `max_wait_time`. The counts are the whole sync's (one set, however many
    streams and Spark tasks send)."""

    type: Literal["RateLimitedMultipleTokenAuthenticator"] = spec(
        "Component type.", "RateLimitedMultipleTokenAuthenticator", "RateLimitedMultipleTokenAuthenticator")
    tokens: str | tuple[str, ...] = spec(
        "The tokens: a list, or one text of tokens separated by `token_delimiter`; empty ones are left out.",
        "{{ config['credentials']['personal_access_token'] }}", template=BASE)
    token_delimiter: str = spec("What separates the tokens of one text.", ",", ",")
    auth_method: str = spec("What comes before the token in the header's value (`Bearer <token>`); empty: the "
                            "token alone.", "token", "Bearer")
    header: str = spec("The header the token is sent in.", "Authorization", "Authorization")
    quota_status_source: QuotaStatusSource = spec(
        "Where each token's quota is read, once per token at the start and after a wait (not per request).",
        {"type": "QuotaStatusSource", "url": "{{ config['api_url'] }}/rate_limit"})
    quotas: tuple[TokenQuota, ...] = spec(
        "The quota pools of each token, in the order a request is matched against them.",
        [{"type": "TokenQuota", "name": "core", "remaining_path": ["resources", "core", "remaining"],
          "reset_path": ["resources", "core", "reset"]}], default_type="TokenQuota")
    max_wait_time: str = spec(
        "The longest wait, an ISO 8601 duration, for a reset when every token is spent; a longer one fails the "
        "request as a transient error.", "PT30M", "PT2H", template=BASE, format="duration")
    budget_reserve_fraction: float = spec(
        "The share of each token's limit kept in reserve: once every token is below its reserve, requests are "
        "spread over the time left until the reset (0, with `budget_min_reserve` 0: never).", 0.1, 0.1)
    budget_min_reserve: int = spec("The least calls of a token's reserve.", 50, 50)

    @model_validator(mode="after")
    def _some_quota(self) -> "RateLimitedMultipleTokenAuthenticator":
        if not self.quotas:
            raise ValueError("`quotas` needs at least one TokenQuota (a pool without matchers counts every request)")
        if not 0 <= self.budget_reserve_fraction <= 1:
            raise ValueError("`budget_reserve_fraction` is a share of the limit, from 0 to 1")
        if self.budget_min_reserve < 0:
            raise ValueError("`budget_min_reserve` is a number of calls, 0 or more")
        return self


def _plain(value: Any) -> Any:
    """Mappings and sequences of a frozen model as JSON-ready dicts and lists."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


Authenticator = Annotated[
    NoAuth | ApiKeyAuthenticator | BearerAuthenticator | BasicHttpAuthenticator | OAuthAuthenticator
    | SessionTokenAuthenticator | SelectiveAuthenticator | CustomAuthenticator
    | JwtAuthenticator | LegacySessionTokenAuthenticator | RateLimitedMultipleTokenAuthenticator,
    Field(discriminator="type"),
]
