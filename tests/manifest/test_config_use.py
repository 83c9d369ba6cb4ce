"""With a config (``validate-manifest --config``): config keys no template can find, and config dates the
cursors' formats do not parse, are errors at their places."""

import json
from datetime import datetime, timezone

from hypothesis import given
from hypothesis import strategies as st

from framework.interpolation import analyze_template
from framework.manifest import check_manifest_text
from framework.manifest.config_check import read_config_file
from framework.temporal.datetime_formats import format_datetime

MANIFEST = """
version: 6.7.0
streams:
  - name: items
    retriever:
      requester:
        url_base: https://api.example.com
        path: "/items/{{ config['region'] }}"
        authenticator: {type: BearerAuthenticator, api_token: "{{ config['api_token'] }}"}
      record_selector:
        extractor: {field_path: []}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime:
        type: MinMaxDatetime
        datetime: "{{ config['start_date'] }}"
        datetime_format: "FORMAT"
      end_datetime: "{{ config['end_date'] }}"
check:
  stream_names: [items]
spec:
  connection_specification:
    type: object
    properties:
      api_key: {type: string, airbyte_secret: true}
      region: {type: string}
      start_date: {type: string}
      end_date: {type: string}
"""


def checked_with(tmp_path, config, manifest=MANIFEST, fmt="%Y-%m-%d"):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, indent=1))
    return check_manifest_text(manifest.replace("FORMAT", fmt), "manifest.yaml",
                               config=read_config_file(str(path)))


def codes(checked, code):
    return [d for d in checked.diagnostics if d.code == code]


GOOD = {"api_key": "k" * 20, "region": "eu", "start_date": "2024-01-01", "end_date": "2024-02-01T00:00:00Z"}


def test_a_key_neither_the_config_nor_the_spec_has_is_an_error_naming_both_with_the_likely_key(tmp_path):
    checked = checked_with(tmp_path, GOOD)
    [problem] = codes(checked, "config-key-unknown")
    assert problem.severity == "error" and problem.file == "manifest.yaml"
    assert "`config['api_token']`" in problem.message and str(tmp_path / "config.json") in problem.message
    assert problem.fix == "did you mean `api_key`? (the config has it)"
    assert problem.path == "streams[0].retriever.requester.authenticator.api_token"
    assert not codes(checked, "config-key-undeclared")  # the error replaces the warning


def test_a_key_the_config_has_but_the_spec_does_not_stays_a_warning(tmp_path):
    checked = checked_with(tmp_path, {**GOOD, "api_token": "t" * 20})
    assert not codes(checked, "config-key-unknown")
    assert [d.severity for d in codes(checked, "config-key-undeclared")] == ["warning"]


def test_without_a_config_the_key_is_a_warning_as_before():
    checked = check_manifest_text(MANIFEST.replace("FORMAT", "%Y-%m-%d"), "manifest.yaml")
    assert [d.severity for d in codes(checked, "config-key-undeclared")] == ["warning"]
    assert not codes(checked, "config-key-unknown")


def test_a_key_read_with_a_fallback_is_not_an_error(tmp_path):
    for template in ("{{ config.get('api_token') }}", "{{ config['api_token'] | default('x') }}",
                     "{% if config['api_token'] is defined %}{{ config['api_token'] }}{% endif %}",
                     "{{ config['api_token'] if 'api_token' in config else 'x' }}"):
        checked = checked_with(tmp_path, GOOD, MANIFEST.replace("{{ config['api_token'] }}", template))
        assert not codes(checked, "config-key-unknown"), template


def test_a_config_date_in_another_form_is_an_error_at_the_config_value_with_the_expected_form(tmp_path):
    checked = checked_with(tmp_path, {**GOOD, "start_date": "2024-01-01T00:00:00Z"})
    [problem] = codes(checked, "config-date-format")
    assert problem.severity == "error" and problem.file == str(tmp_path / "config.json")
    assert (problem.line, problem.path) == (4, "start_date")
    assert "'2024-01-01T00:00:00Z'" in problem.message and "'%Y-%m-%d'" in problem.message
    assert "manifest.yaml:" in problem.message and "`start_datetime`" in problem.message
    assert "2024-01-31 is 2024-01-31 12:30:00 UTC" in problem.fix


def test_a_template_bound_is_parsed_with_the_cursor_format(tmp_path):
    checked = checked_with(tmp_path, {**GOOD, "end_date": "2024-02-01"})
    [problem] = codes(checked, "config-date-format")
    assert problem.path == "end_date" and "'%Y-%m-%dT%H:%M:%SZ'" in problem.message
    assert "`end_datetime`" in problem.message


def test_a_secret_date_is_never_shown(tmp_path):
    manifest = MANIFEST.replace("start_date: {type: string}", "start_date: {type: string, airbyte_secret: true}")
    checked = checked_with(tmp_path, {**GOOD, "start_date": "01/02/2024"}, manifest)
    [problem] = codes(checked, "config-date-format")
    assert "01/02/2024" not in problem.message


def test_good_dates_and_keys_give_no_config_error(tmp_path):
    checked = checked_with(tmp_path, {**GOOD, "api_token": "t" * 20})
    assert not [d for d in checked.diagnostics if d.severity == "error"]


FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ", "%s", "%ms", "%d/%m/%Y %H:%M"]


@given(st.sampled_from(FORMATS), st.sampled_from(FORMATS),
       st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(timezone.utc)))
def test_a_date_is_an_error_exactly_when_the_bound_format_does_not_parse_it(tmp_path_factory, written, parsed, when):
    from framework.errors import DatetimeFormatError
    from framework.temporal.datetime_formats import parse_datetime

    value = str(format_datetime(when, written))
    try:
        parse_datetime(value, parsed)
        expected = 0
    except DatetimeFormatError:
        expected = 1
    checked = checked_with(tmp_path_factory.mktemp("c"), {**GOOD, "start_date": value}, fmt=parsed)
    assert len(codes(checked, "config-date-format")) == expected


def test_fallbacks_are_found_by_the_analysis():
    assert analyze_template("{{ config.get('a', 1) ~ config['b'] }}").config_fallbacks == {"a"}
    assert analyze_template("{{ config['a'] }}").config_fallbacks == frozenset()
    assert analyze_template("{{ 'a' not in config }}").config_fallbacks == {"a"}
