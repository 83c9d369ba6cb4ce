"""Properties: converting never raises; a value is kept (equal to the input) or nulled with exactly one change."""

from __future__ import annotations

import calendar
import json
import re
from datetime import date, datetime, time, timedelta, timezone

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from typed.helpers import STREAM, changes, convert, converter, storage_values

from framework.typed import RecordConverter, parse_schema, values
from framework.typed.columns import Changes, TopField, column_for, convert_each
from framework.typed.types import DATE, TIMESTAMP_WITH_TZ, TIMESTAMP_WITHOUT_TZ, Array, Object

REASONS = {"DESTINATION_SERIALIZATION_ERROR", "DESTINATION_FIELD_SIZE_LIMITATION"}

leaves = (st.none() | st.booleans() | st.integers() | st.integers(-(2 ** 70), 2 ** 70)
          | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
json_values = st.recursive(
    leaves, lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children,
                                                                              max_size=3),
    max_leaves=8)
offsets = st.builds(lambda minutes: timezone(timedelta(minutes=minutes)), st.integers(-23 * 60 - 59, 23 * 60 + 59))
datetimes = st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31),
                         timezones=st.none() | offsets)
times = st.times(timezones=st.none() | offsets)

_CONVERTERS: dict[str, RecordConverter] = {}


def run(field_schema: dict, value):
    """The stored value of field ``f`` and the record's changes (converter compiled once per schema)."""
    key = json.dumps(field_schema, sort_keys=True)
    conv = _CONVERTERS.get(key) or _CONVERTERS.setdefault(key, converter(field_schema))
    batch = convert(conv, [{"f": value}])
    batch.validate(full=True)
    return storage_values(batch.column("f"))[0], changes(batch)[0]


def check(field_schema: dict, value, expected, same=lambda out, wanted: out == wanted):
    """Kept and equal to ``expected(value)``, or nulled with exactly one change on ``f``."""
    out, record_changes = run(field_schema, value)
    if value is None:
        assert (out, record_changes) == (None, [])
    elif out is None:
        assert len(record_changes) == 1
        assert record_changes[0]["field"] == "f" and record_changes[0]["change"] == "NULLED"
        assert record_changes[0]["reason"] in REASONS
    else:
        assert record_changes == []
        assert same(out, expected(value))
    return out


def micros_utc(moment: datetime) -> int:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
    return calendar.timegm(aware.utctimetuple()) * 1_000_000 + aware.microsecond


def integer_expected(value):
    if isinstance(value, str):
        assert re.fullmatch(r"[+-]?[0-9]+", value)
        return int(value)
    assert not isinstance(value, bool)
    assert value == int(value)
    return int(value)


@given(st.one_of(json_values, st.integers().map(str), st.integers(-(2 ** 64), 2 ** 64).map(float)))
def test_integer(value):
    out = check({"type": "integer"}, value, integer_expected)
    if isinstance(value, int) and not isinstance(value, bool):
        assert (out is None) == (not -(2 ** 63) <= value < 2 ** 63)


@given(st.one_of(json_values, st.floats(allow_nan=False, allow_infinity=False).map(repr)))
def test_number(value):
    def expected(given_value):
        assert not isinstance(given_value, bool) and isinstance(given_value, (int, float, str))
        return float(given_value)

    out = check({"type": "number"}, value, expected)
    if isinstance(value, float):
        assert out == value


@given(json_values)
def test_string(value):
    out = check({"type": "string"}, value, lambda v: v,
                same=lambda out, wanted: (out if isinstance(wanted, str) else json.loads(out)) == wanted)
    if value is not None:
        assert out is not None  # every JSON value has a text


@given(json_values)
def test_boolean(value):
    out = check({"type": "boolean"}, value, lambda v: v)
    assert (out is not None) == isinstance(value, bool)


@given(json_values)
def test_unknown(value):
    out = check({}, value, lambda v: v, same=lambda out, wanted: json.loads(out) == wanted)
    assert (out is None) == (value is None)


@given(st.one_of(json_values, st.dates().map(date.isoformat)))
def test_date(value):
    out = check({"type": "string", "format": "date"}, value,
                lambda v: (date.fromisoformat(v[:10]) - date(1970, 1, 1)).days)
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        assert out is not None


@given(st.one_of(json_values, datetimes))
def test_timestamp_with_timezone(value):
    text = value.isoformat() if isinstance(value, datetime) else value
    check({"type": "string", "format": "date-time"}, text, lambda _: micros_utc(value))
    if isinstance(value, datetime):
        out, _ = run({"type": "string", "format": "date-time"}, text)
        assert out is not None
        back = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=out)
        assert back == (value if value.tzinfo else value.replace(tzinfo=timezone.utc))  # the same instant


@given(datetimes)
def test_timestamp_without_timezone_keeps_wall_clock(value):
    schema = {"type": "string", "format": "date-time", "airbyte_type": "timestamp_without_timezone"}
    out = check(schema, value.isoformat(), lambda _: micros_utc(value.replace(tzinfo=None)))
    assert out is not None


@given(st.one_of(json_values, times))
def test_time_with_timezone(value):
    def expected(_):
        wall = datetime.combine(date(2000, 1, 2), value.replace(tzinfo=None))
        utc = wall - (value.utcoffset() or timedelta(0))
        return (utc - datetime.combine(utc.date(), time())) // timedelta(microseconds=1)

    text = value.isoformat() if isinstance(value, time) else value
    out = check({"type": "string", "format": "time"}, text, expected)
    if isinstance(value, time):
        assert out is not None and 0 <= out < 86_400_000_000


@given(st.one_of(json_values, st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_union(value):
    out, record_changes = run({"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}]}, value)
    if out is None:
        assert len(record_changes) == (0 if value is None else 1)
    else:
        assert record_changes == []
        member = out["type"]
        assert [name for name in ("integer", "string", "boolean") if out[name] is not None] == [member]
        assert out[member] == value


# ------------------------------------------------------------------ nested values


NESTED = {"type": "object", "properties": {
    "o": {"type": "object", "properties": {
        "i": {"type": "integer"},
        "l": {"type": "array", "items": {"type": "object", "properties": {
            "t": {"type": "string", "format": "date-time"}, "b": {"type": "boolean"}}}},
    }},
    "a": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
    "s": {"type": "string"},
}}
NESTED_TYPE = parse_schema(NESTED, stream=STREAM)
NESTED_CONVERTER = RecordConverter(NESTED_TYPE, stream=STREAM)


def expected_changes(kind, value, path: str) -> list[str]:
    """The paths a conversion must null, worked out value by value with the single-value converters."""
    if value is None:
        return []
    if isinstance(kind, Object):
        if not isinstance(value, dict):
            return [path]
        return [change for name, child in kind.properties
                for change in expected_changes(child, value.get(name), f"{path}.{name}")]
    if isinstance(kind, Array):
        if not isinstance(value, list):
            return [path]
        return [change for index, item in enumerate(value)
                for change in expected_changes(kind.items, item, f"{path}[{index}]")]
    try:
        values.LENIENT[type(kind)](value)
    except Exception:  # noqa: BLE001 - any failure nulls the value, as the converter does
        return [path]
    return []


nested_values = st.fixed_dictionaries({}, optional={
    "o": json_values | st.fixed_dictionaries({}, optional={
        "i": json_values,
        "l": json_values | st.lists(json_values | st.fixed_dictionaries({}, optional={
            "t": json_values | datetimes.map(datetime.isoformat), "b": json_values}), max_size=3),
        "extra": json_values}),
    "a": json_values | st.lists(json_values | st.lists(json_values, max_size=3), max_size=3),
    "s": json_values,
})


@settings(max_examples=200)
@given(st.lists(nested_values, max_size=4))
def test_nested_records_null_exactly_what_does_not_fit(records):
    batch = convert(NESTED_CONVERTER, records)
    batch.validate(full=True)
    got = changes(batch)
    for record, record_changes in zip(records, got):
        expected = [change for name, kind in NESTED_TYPE.properties
                    for change in expected_changes(kind, record.get(name), name)]
        # Grouped by top-level field in schema order; nested ones in no promised order.
        assert sorted(change["field"] for change in record_changes) == sorted(expected)
        assert all(change["change"] == "NULLED" and change["reason"] in REASONS for change in record_changes)


# ------------------------------------------------------------------ Arrow's parser and Python's agree


near_iso = st.builds(
    "{}-{:02d}-{:02d}{}{:02d}:{:02d}{}{}{}".format,
    st.sampled_from(["0000", "0001", "1969", "1970", "2024", "2023", "9999"]),
    st.integers(0, 13), st.integers(0, 32), st.sampled_from(["T", " ", "t", "_"]),
    st.integers(0, 24), st.integers(0, 60),
    st.sampled_from(["", ":00", ":59", ":60", ":5"]),
    st.sampled_from(["", ".", ".1", ".123456", ".1234567", ".123456789"]),
    st.sampled_from(["", "Z", "z", "+02:00", "-05:30", "+0200", "+02", "+24:00", "-00:00", "+01:00:30"]),
) | st.dates().map(date.isoformat)


@settings(max_examples=300)
@given(st.lists(near_iso | st.none(), min_size=1, max_size=5),
       st.sampled_from([TIMESTAMP_WITH_TZ, TIMESTAMP_WITHOUT_TZ, DATE]))
def test_column_fast_path_agrees_with_value_by_value(texts, kind):
    column = column_for(kind)
    fast = column.build(list(texts), TopField("f"), Changes())
    slow = convert_each(texts, values.LENIENT[type(kind)], TopField("f"), Changes())
    storage = pa.int32() if kind == DATE else pa.int64()
    assert fast.cast(storage).to_pylist() == slow


# ------------------------------------------------------------------ Avro carries what Arrow holds


AVRO_SCHEMA = {"type": "object", "properties": {
    "when": {"type": "string", "format": "date-time"},
    "day": {"type": "string", "format": "date"},
    "at": {"type": "string", "format": "time"},
    "u": {"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "object", "properties": {
        "n-1": {"type": "number"}, "d": {"type": "string", "format": "date"}}}]},
    "mixed": {"type": "array", "items": {"anyOf": [{"type": "boolean"}, {"type": "number"}]}},
    "first name": {"type": "string"},
}}
AVRO_CONVERTER = RecordConverter(parse_schema(AVRO_SCHEMA, stream=STREAM), stream=STREAM)
avro_records_strategy = st.fixed_dictionaries({}, optional={
    "when": json_values | datetimes.map(datetime.isoformat),
    "day": json_values | st.dates().map(date.isoformat),
    "at": json_values | times.map(time.isoformat),
    "u": json_values | st.fixed_dictionaries({}, optional={"n-1": json_values, "d": json_values}),
    "mixed": json_values | st.lists(json_values, max_size=4),
    "first name": json_values,
})


def plain(value):
    """An Arrow union value (disjoint record) as the plain value Avro holds."""
    if value is None:
        return None
    member = value[value["type"]]
    return {"n_1": member["n-1"], "d": member["d"]} if value["type"] == "object" else member


@settings(max_examples=100)
@given(st.lists(avro_records_strategy, max_size=4))
def test_avro_records_hold_the_values_of_the_batch(records):
    from typed.helpers import avro_roundtrip

    batch = convert(AVRO_CONVERTER, records)
    _, read = avro_roundtrip(AVRO_CONVERTER, batch)
    for arrow_row, avro_row in zip(batch.to_pylist(), read):
        assert str(avro_row["_airbyte_raw_id"]) == arrow_row["_airbyte_raw_id"]
        assert avro_row["_airbyte_meta"] == arrow_row["_airbyte_meta"]
        for name in ("when", "day", "at"):
            assert avro_row[name] == arrow_row[name]
        assert avro_row["first_name"] == arrow_row["first name"]
        assert avro_row["u"] == plain(arrow_row["u"])
        assert avro_row["mixed"] == (None if arrow_row["mixed"] is None else [plain(x) for x in arrow_row["mixed"]])
