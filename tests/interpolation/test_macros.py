import re
from datetime import date, datetime, timedelta, timezone

import isodate
import pytest

from framework.errors import InterpolationError
from framework.interpolation import GLOBALS, MACROS, TemplateEngine
from framework.interpolation.macros import build_macros
from framework.temporal.clock import FixedClock

NOW = datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)


@pytest.fixture
def clock():
    return FixedClock(NOW)


@pytest.fixture
def engine(clock):
    return TemplateEngine(clock)


@pytest.fixture
def macros(clock):
    return build_macros(clock)


def test_macro_names_match_the_globals(engine):
    assert set(GLOBALS) == set(engine.environment.globals)
    assert set(MACROS) < set(GLOBALS)
    assert len(MACROS) == 13


def test_now_utc_reads_the_injected_clock(engine, clock):
    assert engine.evaluate("{{ now_utc() }}", {}, "string") == "2024-01-02 03:04:05.678901+00:00"
    assert engine.render("{{ now_utc().strftime('%Y') }}", {}) == "2024"
    clock.advance(timedelta(days=1))
    assert engine.render("{{ now_utc().day }}", {}) == "3"


def test_now_utc_returns_an_aware_datetime(macros):
    value = macros["now_utc"]()
    assert value == NOW and value.tzinfo is not None


def test_today_utc(engine, macros):
    assert macros["today_utc"]() == date(2024, 1, 2)
    assert engine.render("{{ today_utc() }}", {}) == "2024-01-02"


def test_today_with_timezone(engine):
    late = TemplateEngine(FixedClock(datetime(2024, 1, 2, 20, tzinfo=timezone.utc)))
    assert late.render("{{ today_with_timezone('UTC') }}", {}) == "2024-01-02"
    assert late.render("{{ today_with_timezone('Pacific/Tarawa') }}", {}) == "2024-01-03"
    assert late.render("{{ today_with_timezone('America/Los_Angeles') }}", {}) == "2024-01-02"
    with pytest.raises(InterpolationError, match="unknown time zone 'Mars/Base'"):
        engine.render("{{ today_with_timezone('Mars/Base') }}", {})


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ timestamp(1658505815.223235) }}", 1658505815),
        ("{{ timestamp(1658505815) }}", 1658505815),
        ("{{ timestamp('2022-07-22T16:03:35Z') }}", 1658505815),
        ("{{ timestamp('2022-07-22T18:03:35+02:00') }}", 1658505815),
        ("{{ timestamp('2022-07-22 16:03:35') }}", 1658505815),
        ("{{ timestamp(now_utc()) }}", 1704164645.678901),
        ("{{ timestamp('20220722') }}", 1658448000),
    ],
)
def test_timestamp(engine, source, expected):
    assert engine.evaluate(source, {}, "any") == expected


def test_timestamp_of_a_number_is_an_int_and_of_text_a_float_as_in_airbyte(engine):
    assert engine.render("{{ timestamp(1658505815.9) }}", {}) == "1658505815"
    assert engine.render("{{ timestamp('2022-07-22T16:03:35Z') }}", {}) == "1658505815.0"
    assert engine.render("{{ timestamp('2022-07-22T16:03:35.250Z') }}", {}) == "1658505815.25"


def test_sanitize_url(engine):
    assert engine.render("{{ sanitize_url('a b/c?d=e&f') }}", {}) == "a+b%2Fc%3Fd%3De%26f"
    assert engine.render("{{ sanitize_url(config.v) }}", {"config": {"v": "é~_.-"}}) == "%C3%A9~_.-"
    with pytest.raises(InterpolationError, match="sanitize_url takes text"):
        engine.render("{{ sanitize_url(5) }}", {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [("CamelCase", "camel_case"), ("camelCase", "camel_case"), ("HTTPError", "h_t_t_p_error"),
     ("snake_case", "snake_case"), ("A", "a"), ("", ""), ("ÉtéCase", "été_case")],
)
def test_camel_case_to_snake_case(engine, text, expected):
    assert engine.render("{{ camel_case_to_snake_case(config.t) }}", {"config": {"t": text}}) == expected


def test_format_datetime_keeps_the_offset_of_text_read_with_an_input_format(engine):
    source = "{{ format_datetime(config.d, '%H:%M%z', '%Y-%m-%d %H:%M %z') }}"
    assert engine.render(source, {"config": {"d": "2024-01-02 10:00 +0100"}}) == "10:00+0100"
    assert engine.render("{{ format_datetime('2024-01-02T10:00+01:00', '%H:%M%z') }}", {}) == "09:00+0000"


def test_jinja_globals(engine):
    assert engine.evaluate("{{ dict(a=1) }}", {}, "any") == {"a": 1}
    loop = "{% set ns = namespace(n=0) %}{% for x in [1, 2] %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}"
    assert engine.render(loop, {}) == "3"
    assert engine.render("{% set c = cycler(1, 2) %}{{ c.next() }}{{ c.next() }}{{ c.next() }}", {}) == "121"
    assert engine.render("{% set j = joiner() %}{% for x in 'ab' %}{{ j() }}{{ x }}{% endfor %}", {}) == "a, b"


def test_max_and_min(engine):
    assert engine.evaluate("{{ max(2, 3) }}", {}, "integer") == 3
    assert engine.evaluate("{{ min(2, 3) }}", {}, "integer") == 2
    assert engine.evaluate("{{ max([4, 9, 1]) }}", {}, "integer") == 9
    assert engine.render("{{ max('2024-01-01', config.start) }}", {"config": {"start": "2023-05-01"}}) == (
        "2024-01-01"
    )
    with pytest.raises(InterpolationError):
        engine.render("{{ max() }}", {})


def test_day_delta(engine):
    assert engine.render("{{ day_delta(1) }}", {}) == "2024-01-03T03:04:05.678901+0000"
    assert engine.render("{{ day_delta(-2, '%Y-%m-%d') }}", {}) == "2023-12-31"
    assert engine.render("{{ day_delta(0.5, format='%Y-%m-%dT%H') }}", {}) == "2024-01-02T15"
    assert engine.evaluate("{{ day_delta(0, '%s') }}", {}, "integer") == 1704164645


def test_duration(engine, macros):
    assert macros["duration"]("P1D") == timedelta(days=1)
    assert isinstance(macros["duration"]("P1M"), isodate.Duration)
    assert engine.render("{{ (now_utc() - duration('P1D')).strftime('%Y-%m-%d') }}", {}) == "2024-01-01"
    assert engine.render("{{ (now_utc() + duration('P1M')).strftime('%Y-%m-%d') }}", {}) == "2024-02-02"
    with pytest.raises(InterpolationError, match="did you mean `P1D`"):
        engine.render("{{ duration('1d') }}", {})


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ format_datetime(config.dt, '%Y/%m/%d') }}", "2024/01/02"),
        ("{{ format_datetime('2024-01-02T03:04:05Z', '%d.%m.%Y %H:%M') }}", "02.01.2024 03:04"),
        ("{{ format_datetime('2024-01-02', '%s') }}", "1704153600"),
        ("{{ format_datetime('2024-01-02', '%ms') }}", "1704153600000"),
        ("{{ format_datetime('02/01/2024', '%Y-%m-%d', '%d/%m/%Y') }}", "2024-01-02"),
        ("{{ format_datetime(1704153600, '%Y-%m-%d') }}", "2024-01-02"),
        ("{{ format_datetime('1704153600000', '%Y-%m-%d', '%ms') }}", "2024-01-02"),
        ("{{ format_datetime(1704153600000, '%Y-%m-%dT%H:%M:%S.%_msZ', '%ms') }}",
         "2024-01-02T00:00:00.000Z"),
        ("{{ format_datetime(now_utc(), '%Y-%m-%dT%H:%M:%S.%_msZ') }}", "2024-01-02T03:04:05.678Z"),
        ("{{ format_datetime(today_utc(), '%Y-%m-%dT%H:%M:%S%:z') }}", "2024-01-02T00:00:00+00:00"),
    ],
)
def test_format_datetime(engine, source, expected):
    context = {"config": {"dt": datetime(2024, 1, 2, 3, 4, 5)}}
    assert engine.render(source, context) == expected


def test_format_datetime_always_returns_text(macros):
    assert macros["format_datetime"]("2024-01-02", "%s") == "1704153600"


def test_format_datetime_errors(engine):
    with pytest.raises(InterpolationError, match="cannot parse"):
        engine.render("{{ format_datetime('yesterday-ish', '%Y', '%Y-%m-%d') }}", {})
    with pytest.raises(InterpolationError, match="cannot read 'not a date'"):
        engine.render("{{ format_datetime('not a date', '%Y') }}", {})
    with pytest.raises(InterpolationError, match="%Q"):
        engine.render("{{ format_datetime('2024-01-01', '%Q') }}", {})


def test_str_to_datetime(macros):
    convert = macros["str_to_datetime"]
    assert convert("2022-01-14") == datetime(2022, 1, 14, tzinfo=timezone.utc)
    assert convert("2022-01-14T13:45:30") == datetime(2022, 1, 14, 13, 45, 30, tzinfo=timezone.utc)
    converted = convert("2022-01-14T13:45:30+02:00")
    assert converted == datetime(2022, 1, 14, 11, 45, 30, tzinfo=timezone.utc)
    assert converted.utcoffset() == timedelta(0)
    assert convert("1700000000") == datetime.fromtimestamp(1700000000, timezone.utc)
    assert convert(datetime(2022, 1, 1)).tzinfo is not None


def test_str_to_datetime_fills_missing_parts_from_the_clock(macros):
    assert macros["str_to_datetime"]("10:30") == datetime(2024, 1, 2, 10, 30, tzinfo=timezone.utc)


def test_str_to_datetime_in_templates(engine):
    assert engine.render("{{ str_to_datetime('2022-01-14').isoformat() }}", {}) == (
        "2022-01-14T00:00:00+00:00"
    )
    assert engine.evaluate("{{ str_to_datetime('2022-01-14') < now_utc() }}", {}, "boolean") is True


def test_generate_uuid(engine):
    first = engine.render("{{ generate_uuid() }}", {})
    second = engine.render("{{ generate_uuid() }}", {})
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first)
    assert first != second
