"""Checks of the source's ``api_budget`` that its types cannot say: numbers that must be at least 1, a
matcher's path pattern that must be a regular expression, a weight no limit of its policy could ever
allow, rate-limit statuses that must be HTTP statuses, and a policy that can never apply because an
earlier one matches every request."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.models import FixedWindowCallRatePolicy, HTTPAPIBudget, HttpRequestRegexMatcher, Rate

__all__ = ["budget_checks"]


def _number(value: Any) -> int | None:
    """A literal whole number (None for a template, which is checked when the config is known)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def budget_checks(sites: list[Site], place: Placement) -> Iterator[Diagnostic]:
    for site in sites:
        data = site.data
        if site.model is Rate:
            limit = _number(data.get("limit"))
            if limit is not None and limit < 1:
                yield place.diagnostic(site.path + ("limit",), "bad-budget", f"`limit` is {limit}: no call could "
                                       "ever be made", "allow at least 1 call per interval")
        elif site.model is FixedWindowCallRatePolicy:
            limit = _number(data.get("call_limit"))
            if limit is not None and limit < 1:
                yield place.diagnostic(site.path + ("call_limit",), "bad-budget", f"`call_limit` is {limit}: no "
                                       "call could ever be made", "allow at least 1 call per period")
        elif site.model is HttpRequestRegexMatcher:
            yield from _matcher_checks(site, place)
        elif site.model is HTTPAPIBudget:
            yield from _budget_checks(site, place)


def _matcher_checks(site: Site, place: Placement) -> Iterator[Diagnostic]:
    pattern = site.data.get("url_path_pattern")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as exc:
            yield place.diagnostic(site.path + ("url_path_pattern",), "bad-regex",
                                   f"`url_path_pattern` is not a regular expression: {exc}",
                                   "fix the pattern (Python's `re` syntax), e.g. `^/v1/orders`")
    weight = _number(site.data.get("weight"))
    if weight is not None and weight < 1:
        yield place.diagnostic(site.path + ("weight",), "bad-budget", f"`weight` is {weight}; a request counts "
                               "for at least 1 call", "write a weight of 1 or more, or leave it out")
    base = site.data.get("url_base")
    if isinstance(base, str) and "://" not in base:
        yield place.diagnostic(site.path + ("url_base",), "bad-budget", f"`url_base` `{base}` has no scheme, so "
                               "no request's URL could match it", f"write it as `https://{base}`")


def _limits(policy: dict) -> list[int]:
    if policy.get("type") == "FixedWindowCallRatePolicy":
        return [n for n in [_number(policy.get("call_limit"))] if n is not None]
    rates = policy.get("rates")
    return [n for rate in rates if isinstance(rate, dict) for n in [_number(rate.get("limit"))]
            if n is not None] if isinstance(rates, list) else []


def _budget_checks(site: Site, place: Placement) -> Iterator[Diagnostic]:
    codes = site.data.get("status_codes_for_ratelimit_hit")
    for index, code in enumerate(codes if isinstance(codes, list) else ()):
        if isinstance(code, int) and not 100 <= code <= 599:
            yield place.diagnostic(site.path + ("status_codes_for_ratelimit_hit", index), "bad-budget",
                                   f"{code} is not an HTTP status", "write a status such as 429")
    policies = site.data.get("policies")
    catch_all: int | None = None
    for index, policy in enumerate(policies if isinstance(policies, list) else ()):
        if not isinstance(policy, dict):
            continue
        here = site.path + ("policies", index)
        if catch_all is not None:
            yield place.diagnostic(here, "unreachable-policy", f"policy {index} never applies: policy "
                                   f"{catch_all} has no matchers, so it matches every request first",
                                   "move this policy before it, or give that one matchers", severity="warning")
        matchers = policy.get("matchers")
        if matchers == [] and catch_all is None:
            catch_all = index
        limits = _limits(policy)
        for m_index, matcher in enumerate(matchers if isinstance(matchers, list) else ()):
            weight = _number(matcher.get("weight")) if isinstance(matcher, dict) else None
            if weight is not None and limits and weight > min(limits):
                yield place.diagnostic(here + ("matchers", m_index, "weight"), "bad-budget",
                                       f"`weight` {weight} is above the policy's limit of {min(limits)}: such a "
                                       "request could never be sent", "lower the weight or raise the limit")
