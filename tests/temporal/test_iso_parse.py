"""The ISO fast path reads exactly what parse_datetime reads, and fails where it fails."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.errors import DatetimeFormatError
from framework.temporal.datetime_formats import format_datetime, parse_datetime
from framework.temporal.iso_parse import FAST_FORMATS, parser_of

UTC = timezone.utc
FORMATS = sorted(FAST_FORMATS)


def outcome(parse, value):
    try:
        found = parse(value)
        return found, found.tzinfo  # the same instant and the same zone (UTC)
    except DatetimeFormatError:
        return "error"


@settings(max_examples=400, deadline=None)
@given(
    fmt=st.sampled_from(FORMATS),
    instant=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)),
    offset_minutes=st.integers(-23 * 60, 23 * 60),
)
def test_formatted_values_read_the_same(fmt, instant, offset_minutes):
    local = instant.astimezone(timezone(timedelta(minutes=offset_minutes)))
    text = format_datetime(local, fmt)
    assert outcome(parser_of(fmt), text) == outcome(lambda v: parse_datetime(v, fmt), text) != "error"


@settings(max_examples=400, deadline=None)
@given(
    fmt=st.sampled_from(FORMATS),
    text=st.from_regex(
        r"\A[0-9]{1,5}-[0-9]{1,2}-[0-9]{1,3}([T ][0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?(Z|[+-][0-9]{2}:?[0-9]{2}|\+00:00)?)?\Z"
    ),
)
def test_odd_texts_read_the_same_or_fail_the_same(fmt, text):
    fast, slow = outcome(parser_of(fmt), text), outcome(lambda v: parse_datetime(v, fmt), text)
    assert fast == slow


@pytest.mark.parametrize(
    "fmt, value",
    [("%Y-%m-%d", "2022-1-5"), ("%Y-%m-%dT%H:%M:%SZ", "2022-02-30T00:00:00Z"), ("%Y-%m-%d", 20220105),
     ("%Y-%m-%dT%H:%M:%S%z", "2022-01-01T00:00:00+05:30:15"), ("%s", "1640995200")],
)
def test_values_off_the_fast_path_fall_back(fmt, value):
    assert outcome(parser_of(fmt), value) == outcome(lambda v: parse_datetime(v, fmt), value)
