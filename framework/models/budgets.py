"""API budgets: how many requests the whole sync may send to an API in a time window (``api_budget``).

Airbyte writes ``Rate`` and ``HttpRequestRegexMatcher`` without a ``type``; here they are components whose
``type`` is implied (it may be written, Airbyte allows the key). ``TokenQuota`` and ``QuotaStatusSource`` are
the parts of ``RateLimitedMultipleTokenAuthenticator`` (:mod:`framework.models.auth`): a token's quota pools,
matched to requests like a budget's policies.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from framework.models.base import BASE, Component, spec


class Rate(Component):
    """At most ``limit`` calls in any ``interval`` (a moving window)."""

    takes_parameters = False

    type: Literal["Rate"] = spec("Component type (Airbyte leaves it out; implied here).", "Rate", "Rate")
    limit: int | str = spec("The calls allowed within the interval; a template must render an integer.", 900,
                            template=BASE, result="integer")
    interval: str = spec("The length of the window, an ISO 8601 duration.", "PT1M", format="duration")


class HttpRequestRegexMatcher(Component):
    """Which requests a policy applies to; every criterion given must hold (none given: every request)."""

    takes_parameters = False

    type: Literal["HttpRequestRegexMatcher"] = spec(
        "Component type (Airbyte leaves it out; implied here).", "HttpRequestRegexMatcher", "HttpRequestRegexMatcher")
    method: str | None = spec("The HTTP method, compared without regard to case.", "GET", None)
    url_base: str | None = spec("Scheme and host the request's URL must have (a trailing `/` is ignored).",
                                "https://api.example.com", None)
    url_path_pattern: str | None = spec("A regular expression searched for in the URL's path.", r"^/v1/orders", None)
    params: Mapping[str, Any] = spec("Query parameters the request must have, with these values.",
                                     {"archived": "true"}, default_factory=dict)
    headers: Mapping[str, Any] = spec("Headers the request must have (names without regard to case), with these "
                                      "values.", {"X-Tenant": "eu"}, default_factory=dict)
    weight: int | str | None = spec(
        "The calls a matching request counts for (1 when left out); a template must render an integer of at "
        "least 1.", 2, None, template=BASE, result="integer")


Matchers = tuple[HttpRequestRegexMatcher, ...]


class MovingWindowCallRatePolicy(Component):
    """Calls allowed within a window that moves with the calls: every rate must allow a call."""

    takes_parameters = False

    type: Literal["MovingWindowCallRatePolicy"] = spec(
        "Component type.", "MovingWindowCallRatePolicy", "MovingWindowCallRatePolicy")
    rates: tuple[Rate, ...] = spec("The rates; a call is made when every one allows it.",
                                   [{"limit": 900, "interval": "PT1M"}], default_type="Rate")
    matchers: Matchers = spec("The requests this policy applies to; every request when empty.",
                              [{"method": "GET", "url_path_pattern": "^/v1/"}], default_type="HttpRequestRegexMatcher")


class FixedWindowCallRatePolicy(Component):
    """``call_limit`` calls per ``period``; the count starts again when the period ends (or the API says so)."""

    takes_parameters = False

    type: Literal["FixedWindowCallRatePolicy"] = spec(
        "Component type.", "FixedWindowCallRatePolicy", "FixedWindowCallRatePolicy")
    period: str = spec("The length of a window, an ISO 8601 duration.", "PT1H", format="duration")
    call_limit: int = spec("The calls allowed within one window.", 5000)
    matchers: Matchers = spec("The requests this policy applies to; every request when empty.",
                              [{"url_base": "https://api.example.com"}], default_type="HttpRequestRegexMatcher")


class UnlimitedCallRatePolicy(Component):
    """The matching requests are never held back (put it before a policy that would match them)."""

    takes_parameters = False

    type: Literal["UnlimitedCallRatePolicy"] = spec(
        "Component type.", "UnlimitedCallRatePolicy", "UnlimitedCallRatePolicy")
    matchers: Matchers = spec("The requests this policy applies to; every request when empty.",
                              [{"url_path_pattern": "^/v1/health"}], default_type="HttpRequestRegexMatcher")


CallRatePolicy = Annotated[MovingWindowCallRatePolicy | FixedWindowCallRatePolicy | UnlimitedCallRatePolicy,
                           Field(discriminator="type")]


class HTTPAPIBudget(Component):
    """The calls the whole sync may make, by policy (the first policy matching a request applies; a request
    no policy matches is not held back), kept in step with the API's rate-limit answers."""

    takes_parameters = False

    type: Literal["HTTPAPIBudget"] = spec("Component type.", "HTTPAPIBudget", "HTTPAPIBudget")
    policies: tuple[CallRatePolicy, ...] = spec(
        "The policies, in the order they are tried.",
        [{"type": "MovingWindowCallRatePolicy", "rates": [{"limit": 900, "interval": "PT1M"}], "matchers": []}])
    ratelimit_reset_header: str = spec(
        "The response header holding when the API's window ends (seconds since the epoch).", "X-RateLimit-Reset",
        "ratelimit-reset")
    ratelimit_remaining_header: str = spec(
        "The response header holding how many calls the API still allows in its window.", "X-RateLimit-Remaining",
        "ratelimit-remaining")
    status_codes_for_ratelimit_hit: tuple[int, ...] = spec(
        "Response statuses meaning the API's window is spent: no call is made until it moves on.", [429, 420],
        (429,))


class QuotaStatusSource(Component):
    """Where a token's current quota is read (a part of RateLimitedMultipleTokenAuthenticator)."""

    takes_parameters = False

    type: Literal["QuotaStatusSource"] = spec("Component type.", "QuotaStatusSource", "QuotaStatusSource")
    url: str = spec("The full URL of the quota status endpoint.", "{{ config['api_url'] }}/rate_limit",
                    template=frozenset({"config"}))
    http_method: Literal["GET", "POST"] = spec("The HTTP method of the quota request.", "GET", "GET")
    request_headers: Mapping[str, str] = spec("More headers sent with the quota request.",
                                              {"Accept": "application/json"}, default_factory=dict)
    unavailable_status_codes: tuple[int, ...] = spec(
        "Statuses of the quota endpoint meaning quota tracking is off (the token's pools are then untracked).",
        [404], ())


class TokenQuota(Component):
    """A named quota pool of a token, read from the quota status answer (a part of
    RateLimitedMultipleTokenAuthenticator)."""

    takes_parameters = False

    type: Literal["TokenQuota"] = spec("Component type.", "TokenQuota", "TokenQuota")
    name: str = spec("The pool's name.", "core")
    remaining_path: tuple[str, ...] = spec("Path to the pool's remaining calls in the quota answer.",
                                           ["resources", "core", "remaining"])
    reset_path: tuple[str, ...] = spec("Path to the pool's reset time in the quota answer.",
                                       ["resources", "core", "reset"])
    limit_path: tuple[str, ...] | None = spec("Path to the pool's total calls in the quota answer.",
                                              ["resources", "core", "limit"], None)
    matchers: Matchers = spec("The requests counted in this pool; a pool without matchers is the default one.",
                              [{"url_path_pattern": "^/graphql"}], (), default_type="HttpRequestRegexMatcher")
    remaining_header: str | None = spec("Response header with the pool's remaining calls.", "X-RateLimit-Remaining",
                                        None)
    reset_header: str | None = spec("Response header with the pool's reset time.", "X-RateLimit-Reset", None)
    limit_header: str | None = spec("Response header with the pool's total calls.", "X-RateLimit-Limit", None)
    exhaustion_status_codes: tuple[int, ...] = spec("Response statuses meaning this token's pool is spent.",
                                                    [403, 429], ())


__all__ = ["CallRatePolicy", "FixedWindowCallRatePolicy", "HTTPAPIBudget", "HttpRequestRegexMatcher",
           "MovingWindowCallRatePolicy", "QuotaStatusSource", "Rate", "TokenQuota", "UnlimitedCallRatePolicy"]
