"""Checks of authenticators that a schema cannot say.

* a JwtAuthenticator's ``algorithm`` must be one Airbyte knows (a template is refused too: airbyte-cdk
  reads the field as a fixed name);
* its ``token_duration`` must be a positive number of seconds;
* an RS, PS, ES or EdDSA algorithm signs with a PEM private key: a ``secret_key`` written in the
  manifest (not a template) that is no PEM block cannot work;
* ``additional_jwt_headers`` and ``additional_jwt_payload`` cannot set what the authenticator sets
  itself (``kid``, ``alg``, ``typ``, ``cty``; ``iss``, ``sub``, ``aud``, ``iat``, ``exp``, ``nbf``);
* an OAuthAuthenticator's ``refresh_token_error_*`` belong on it or on its ``refresh_token_updater``,
  not both, and act only when all three are given;
* a key of the spec's ``advanced_auth`` that Airbyte does not know is dropped from the SPEC message
  (a warning: it is often a misspelling);
* a RateLimitedMultipleTokenAuthenticator's quota pools need names of their own (each token's counts are
  kept by name), and only the first pool without matchers counts the requests no matcher takes (a
  second such pool counts nothing; with none, the first pool counts them: warnings).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.models import (
    JWT_ALGORITHMS,
    AuthFlow,
    JwtAuthenticator,
    OAuthAuthenticator,
    RateLimitedMultipleTokenAuthenticator,
    Spec,
)

#: Header fields and claims the JwtAuthenticator sets itself (as airbyte-cdk refuses them in the extras).
RESERVED = {"additional_jwt_headers": ("kid", "alg", "typ", "cty"),
            "additional_jwt_payload": ("iss", "sub", "aud", "iat", "exp", "nbf")}
_NAMED_IN = {"kid": "jwt_headers", "typ": "jwt_headers", "cty": "jwt_headers", "iss": "jwt_payload",
             "sub": "jwt_payload", "aud": "jwt_payload"}
_ERROR_FIELDS = ("refresh_token_error_status_codes", "refresh_token_error_key", "refresh_token_error_values")


def auth_checks(sites: list[Site], place: Placement) -> Iterator[Diagnostic]:
    for site in sites:
        if site.model is JwtAuthenticator:
            yield from _jwt_checks(site, place)
        elif site.model is OAuthAuthenticator:
            yield from _oauth_checks(site, place)
        elif site.model is RateLimitedMultipleTokenAuthenticator:
            yield from _quota_checks(site, place)
        elif site.model is Spec and isinstance(site.data.get("advanced_auth"), dict):
            for key in site.data["advanced_auth"]:
                if key not in AuthFlow.model_fields:
                    close = difflib.get_close_matches(str(key), list(AuthFlow.model_fields), n=1)
                    yield place.diagnostic(
                        site.path + ("advanced_auth", key), "unknown-auth-flow-key",
                        f"`advanced_auth` has no `{key}`: it is left out of the SPEC message, as airbyte-cdk "
                        "leaves it out", f"did you mean `{close[0]}`?" if close else
                        f"use {', '.join(f'`{name}`' for name in AuthFlow.model_fields)}",
                        severity="warning", key=True)


def _jwt_checks(site: Site, place: Placement) -> Iterator[Diagnostic]:
    data = site.data
    algorithm = data.get("algorithm")
    if isinstance(algorithm, str) and algorithm not in JWT_ALGORITHMS:
        close = difflib.get_close_matches(algorithm.upper(), JWT_ALGORITHMS, n=1)
        templated = "{{" in algorithm or "{%" in algorithm
        yield place.diagnostic(
            site.path + ("algorithm",), "unknown-jwt-algorithm",
            f"`{algorithm}` is not a JWT algorithm airbyte-cdk knows"
            + (" (a template is not read here: the field is a fixed name)" if templated else ""),
            (f"did you mean `{close[0]}`? " if close and not templated else "")
            + f"use one of {', '.join(JWT_ALGORITHMS)}")
    duration = data.get("token_duration")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, int) or duration <= 0):
        yield place.diagnostic(
            site.path + ("token_duration",), "bad-token-duration",
            f"`token_duration` is {duration!r}; it is the token's lifetime in seconds",
            "write a positive whole number of seconds, such as `3600`, or leave it out (1200)")
    secret = data.get("secret_key")
    if (isinstance(algorithm, str) and algorithm in JWT_ALGORITHMS and not algorithm.startswith("HS")
            and isinstance(secret, str) and not _templated(secret) and "-----BEGIN" not in secret
            and not _templated(str(data.get("passphrase") or ""))):
        yield place.diagnostic(
            site.path + ("secret_key",), "jwt-key-not-pem",
            f"{algorithm} signs with a PEM private key, and this `secret_key` is not one",
            "read the key from the config (`{{ config['private_key'] }}`) or write the whole PEM block, "
            "from `-----BEGIN PRIVATE KEY-----` to its END line; or use an HS algorithm for a shared secret")
    for field, names in RESERVED.items():
        extras = data.get(field)
        if not isinstance(extras, dict):
            continue
        for name in names:
            if name in extras:
                owner = _NAMED_IN.get(name)
                yield place.diagnostic(
                    site.path + (field, name), "reserved-jwt-field",
                    f"`{field}` cannot set `{name}`: the authenticator sets it itself (airbyte-cdk refuses it)",
                    f"set it in `{owner}.{name}`" if owner else f"remove `{name}` (it comes from the clock "
                    "and `token_duration`)" if name != "alg" else "remove `alg`: `algorithm` names it", key=True)


def _oauth_checks(site: Site, place: Placement) -> Iterator[Diagnostic]:
    data = site.data
    updater = data.get("refresh_token_updater")
    own = [name for name in _ERROR_FIELDS if data.get(name)]
    legacy = [name for name in _ERROR_FIELDS if isinstance(updater, dict) and updater.get(name)]
    if own and legacy:
        yield place.diagnostic(
            site.path + ("refresh_token_updater", legacy[0]), "refresh-token-errors-twice",
            "`refresh_token_error_*` are set both on the OAuthAuthenticator and on its `refresh_token_updater` "
            "(airbyte-cdk refuses that)", "keep them on the OAuthAuthenticator only", key=True)
    for given, where in ((own, site.path), (legacy, site.path + ("refresh_token_updater",))):
        if given and len(given) < len(_ERROR_FIELDS):
            missing = [name for name in _ERROR_FIELDS if name not in given]
            yield place.diagnostic(
                where + (given[0],), "refresh-token-errors-incomplete",
                f"`{given[0]}` has no effect without {' and '.join(f'`{m}`' for m in missing)}",
                "give the statuses, the key and the values together (such as `[400]`, `error`, "
                "`[invalid_grant]`)", severity="warning", key=True)


def _quota_checks(site: Site, place: Placement) -> Iterator[Diagnostic]:
    quotas = site.data.get("quotas")
    if not isinstance(quotas, list):
        return
    seen: dict[str, int] = {}
    defaults: list[int] = []
    for index, quota in enumerate(quotas):
        if not isinstance(quota, dict):
            continue
        name = quota.get("name")
        if isinstance(name, str):
            if name in seen:
                yield place.diagnostic(
                    site.path + ("quotas", index, "name"), "duplicate-quota-pool",
                    f"two quota pools are named `{name}` (pools {seen[name] + 1} and {index + 1}); each token's "
                    "counts are kept by pool name", "give each TokenQuota a name of its own")
            seen.setdefault(name, index)
        if not quota.get("matchers"):
            defaults.append(index)
    for index in defaults[1:]:
        yield place.diagnostic(
            site.path + ("quotas", index), "quota-pool-unreachable",
            f"quota pool {index + 1} has no matchers, and neither has pool {defaults[0] + 1}, which takes every "
            "request no matcher takes: this one counts nothing", "give it `matchers`, or remove it",
            severity="warning")
    if quotas and not defaults:
        yield place.diagnostic(
            site.path + ("quotas",), "no-default-quota-pool",
            "every quota pool has matchers: a request none of them takes is counted in the first pool",
            "add a TokenQuota without matchers for the other requests", severity="warning")


def _templated(text: str) -> bool:
    return "{{" in text or "{%" in text




__all__ = ["auth_checks"]
