"""validate-manifest's checks of authenticators (framework/manifest/auth_checks.py)."""

from __future__ import annotations

import textwrap

from framework.manifest import check_manifest_text

BASE = textwrap.dedent("""\
    version: 6.7.0
    type: DeclarativeSource
    check: {type: CheckStream, stream_names: [items]}
    streams:
      - type: DeclarativeStream
        name: items
        schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
        retriever:
          type: SimpleRetriever
          record_selector:
            type: RecordSelector
            extractor: {type: DpathExtractor, field_path: []}
          requester:
            type: HttpRequester
            url_base: "https://api.example.com"
            path: /items
            authenticator:
    """)


def check(authenticator: str) -> list:
    text = BASE + textwrap.indent(textwrap.dedent(authenticator), " " * 10)
    return sorted(check_manifest_text(text).diagnostics, key=lambda d: d.line)


def codes(authenticator: str) -> list[tuple[str, int, str]]:
    return [(d.code, d.line, d.severity) for d in check(authenticator)]


JWT = """\
type: JwtAuthenticator
secret_key: "{{ config['key'] }}"
algorithm: RS256
"""


def test_good_authenticators_pass_without_a_word():
    assert check(JWT) == []
    assert check("""\
        type: JwtAuthenticator
        secret_key: "{{ config['key'] }}"
        algorithm: HS512
        token_duration: 60
        header_prefix: Bearer
        jwt_headers: {kid: "{{ config['kid'] }}", typ: JWT}
        jwt_payload: {iss: "{{ config['iss'] }}", aud: api}
        additional_jwt_payload: {scope: read}
        request_option: {type: RequestOption, inject_into: request_parameter, field_name: jwt}
        """) == []
    assert check("""\
        type: LegacySessionTokenAuthenticator
        header: X-Session
        login_url: session
        validate_session_url: user/current
        session_token_response_key: id
        username: "{{ config['username'] }}"
        password: "{{ config['password'] }}"
        """) == []
    assert check("""\
        type: OAuthAuthenticator
        token_refresh_endpoint: https://auth.example.com/token
        client_id: "{{ config['credentials']['client_id'] }}"
        client_secret: "{{ config['credentials']['client_secret'] }}"
        refresh_token_updater: {refresh_token_name: refresh_token}
        refresh_token_error_status_codes: [400]
        refresh_token_error_key: error
        refresh_token_error_values: [invalid_grant]
        use_profile_assertion: false
        """) == []


def test_an_unknown_algorithm_is_placed_and_a_close_name_suggested():
    [problem] = check(JWT.replace("RS256", "rs265"))
    assert (problem.code, problem.line) == ("unknown-jwt-algorithm", 20)
    assert "RS256" in problem.fix
    [problem] = check(JWT.replace("RS256", "\"{{ config['alg'] }}\""))
    assert problem.code == "unknown-jwt-algorithm" and "template" in problem.message


def test_token_duration_must_be_positive_seconds():
    assert codes(JWT + "token_duration: 0\n") == [("bad-token-duration", 21, "error")]
    assert codes(JWT + "token_duration: -60\n") == [("bad-token-duration", 21, "error")]


def test_a_literal_secret_that_is_no_pem_key_is_refused_for_key_pair_algorithms():
    literal = JWT.replace("\"{{ config['key'] }}\"", "my-shared-secret")
    [problem] = check(literal)
    assert (problem.code, problem.line) == ("jwt-key-not-pem", 19) and "PEM" in problem.fix
    assert check(literal.replace("RS256", "HS256")) == []
    pem = JWT.replace("\"{{ config['key'] }}\"", "\"-----BEGIN PRIVATE KEY-----\\nMII...\\n-----END PRIVATE KEY-----\"")
    assert check(pem) == []


def test_reserved_fields_in_the_extras():
    found = check(JWT + "additional_jwt_headers: {kid: k1}\nadditional_jwt_payload: {iat: 1, team: a}\n")
    assert [(d.code, d.line) for d in found] == [("reserved-jwt-field", 21), ("reserved-jwt-field", 22)]
    assert "jwt_headers.kid" in found[0].fix


def test_profile_assertion_must_be_a_jwt_authenticator():
    found = check("""\
        type: OAuthAuthenticator
        token_refresh_endpoint: https://auth.example.com/token
        use_profile_assertion: true
        profile_assertion: {type: BearerAuthenticator, api_token: x}
        """)
    assert [(d.code, d.line) for d in found] == [("wrong-component", 21)] and "JwtAuthenticator" in found[0].fix


def test_refresh_token_errors_in_two_places_or_incomplete():
    found = check("""\
        type: OAuthAuthenticator
        token_refresh_endpoint: https://auth.example.com/token
        refresh_token: "{{ config['refresh_token'] }}"
        refresh_token_error_status_codes: [400]
        refresh_token_updater: {refresh_token_error_key: error, refresh_token_error_values: [invalid_grant],
                                refresh_token_error_status_codes: [400]}
        """)
    assert sorted((d.code, d.severity) for d in found) == [("refresh-token-errors-incomplete", "warning"),
                                                           ("refresh-token-errors-twice", "error")]


def test_an_unknown_advanced_auth_key_is_a_warning():
    text = BASE.replace("            authenticator:\n", "") + textwrap.dedent("""\
        spec:
          type: Spec
          connection_specification: {type: object}
          advanced_auth: {auth_flow_type: oauth2.0, predicate_keys: [auth_type]}
        """)
    [problem] = check_manifest_text(text).diagnostics
    assert (problem.code, problem.severity) == ("unknown-auth-flow-key", "warning")
    assert "predicate_key" in problem.fix


QUOTAS = """\
type: RateLimitedMultipleTokenAuthenticator
tokens: "{{ config['tokens'] }}"
quota_status_source: {type: QuotaStatusSource, url: "https://api.example.com/rate_limit"}
quotas:
"""


def _pool(name: str, matchers: str = "") -> str:
    more = f", matchers: [{matchers}]" if matchers else ""
    return f"  - {{type: TokenQuota, name: {name}, remaining_path: [r], reset_path: [s]{more}}}\n"


def test_quota_pools_with_one_default_are_accepted():
    assert check(QUOTAS + _pool("search", "{url_path_pattern: '^/search'}") + _pool("core")) == []


def test_quota_pools_named_twice_or_unreachable_or_without_a_default_are_reported():
    found = codes(QUOTAS + _pool("core") + _pool("core") + _pool("graphql"))
    assert sorted((code, severity) for code, _, severity in found) == [
        ("duplicate-quota-pool", "error"), ("quota-pool-unreachable", "warning"), ("quota-pool-unreachable", "warning")]
    [problem] = check(QUOTAS + _pool("search", "{url_path_pattern: '^/search'}"))
    assert problem.code == "no-default-quota-pool" and problem.severity == "warning"
