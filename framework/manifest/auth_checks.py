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
  (a warning: it is often a misspelling).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.models import JWT_ALGORITHMS, AuthFlow, JwtAuthenticator, OAuthAuthenticator, Spec

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


def _templated(text: str) -> bool:
    return "{{" in text or "{%" in text




__all__ = ["auth_checks"]
