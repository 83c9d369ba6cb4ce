"""validate-manifest's checks of ``api_budget`` (framework/manifest/budget_checks.py and the models' types)."""

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
          requester: {type: HttpRequester, url_base: "https://api.example.com", path: /items}
          record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
    api_budget:
      type: HTTPAPIBudget
    """)


def check(budget: str) -> list:
    return list(check_manifest_text(BASE + textwrap.indent(textwrap.dedent(budget), "  ")).diagnostics)


def test_the_shapes_airbyte_manifests_use_are_accepted_without_a_word():
    assert check("""\
        policies:
          - type: UnlimitedCallRatePolicy
            matchers: [{url_path_pattern: "^/health"}]
          - type: MovingWindowCallRatePolicy
            rates: [{limit: 900, interval: PT1M}, {limit: "{{ config.get('hourly', 5000) }}", interval: PT1H}]
            matchers: [{method: GET, url_path_pattern: ".*", weight: 2}]
          - type: FixedWindowCallRatePolicy
            period: PT1H
            call_limit: 1000
            matchers: []
        status_codes_for_ratelimit_hit: [429, 420]
        ratelimit_reset_header: X-RateLimit-Reset
        """) == []


def test_a_bad_interval_is_an_error_at_its_line_with_a_fix():
    [problem] = check("""\
        policies:
          - type: MovingWindowCallRatePolicy
            rates: [{limit: 10, interval: 1 minute}]
            matchers: []
        """)
    assert (problem.code, problem.line, problem.severity) == ("bad-duration", 16, "error")
    assert "PT1H" in (problem.fix or "")


def test_rules_beyond_the_types_are_located_errors():
    problems = check("""\
        policies:
          - type: MovingWindowCallRatePolicy
            rates: [{limit: 0, interval: PT1S}]
            matchers: []
          - type: FixedWindowCallRatePolicy
            period: PT1S
            call_limit: 5
            matchers: [{url_path_pattern: "([", weight: 9, url_base: api.example.com}]
        status_codes_for_ratelimit_hit: [4290]
        """)
    found = {(p.code, p.line, p.severity) for p in problems}
    assert found == {("bad-budget", 16, "error"), ("bad-regex", 21, "error"), ("bad-budget", 21, "error"),
                     ("unreachable-policy", 18, "warning"), ("bad-budget", 22, "error")}, problems
    messages = " ".join(p.message for p in problems)
    assert "weight` 9 is above the policy's limit of 5" in messages and "has no scheme" in messages
    assert all(p.fix for p in problems)


def test_an_unknown_key_and_a_missing_field_are_reported_at_their_place():
    problems = check("""\
        policies:
          - type: FixedWindowCallRatePolicy
            period: PT1S
            matchers: [{method: GET, path: /items}]
        """)
    codes = sorted(p.code for p in problems)
    assert len(problems) == 2, problems
    assert any("call_limit" in p.message for p in problems) and any("path" in p.message for p in problems), codes


def test_token_quota_types_are_known_and_their_authenticator_needs_its_quota_status_source():
    text = BASE.replace("api_budget:\n  type: HTTPAPIBudget\n", "").replace(
        'path: /items}', 'path: /items, authenticator: {type: RateLimitedMultipleTokenAuthenticator, tokens: a, '
        'quotas: [{type: TokenQuota, name: core, remaining_path: [r], reset_path: [s]}]}}')
    [problem] = check_manifest_text(text).diagnostics
    assert problem.code == "missing-field" and "quota_status_source" in problem.message
    fixed = text.replace("tokens: a,", "tokens: a, quota_status_source: {type: QuotaStatusSource, url: "
                                       "'https://api.test/rate_limit'},")
    assert list(check_manifest_text(fixed).diagnostics) == []
