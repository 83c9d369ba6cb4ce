"""One schema for a folder's files (framework.formats.unified): the order of columns, the types that win, and
batches made to fit without losing a value."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.formats.unified import conform, fits, text_of, unified_schema, unified_type
from framework.typed.arrow import ENVELOPE

ENV = list(ENVELOPE)


def test_columns_come_envelope_first_then_declared_then_new_ones_as_first_seen():
    old = pa.schema([("b", pa.string()), *ENV, ("a", pa.int64())])
    new = pa.schema([*ENV, ("z", pa.string()), ("a", pa.int64()), ("y", pa.bool_())])
    unified = unified_schema([old, new], declared=["_airbyte_raw_id", "a", "b"])
    assert unified.names == [f.name for f in ENV] + ["a", "b", "z", "y"]


def test_a_column_missing_from_a_file_is_nullable_and_the_envelope_stays_required():
    first = pa.schema([*ENV, pa.field("id", pa.int64(), nullable=False)])
    second = pa.schema([*ENV, pa.field("id", pa.int64(), nullable=False), ("priority", pa.string())])
    unified = unified_schema([first, second])
    assert [unified.field(f.name).nullable for f in ENV] == [False] * 4
    assert unified.field("id").nullable is False  # in every file, never null
    assert unified.field("priority").nullable is True


@pytest.mark.parametrize(("a", "b", "expected"), [
    (pa.int64(), pa.int64(), pa.int64()),
    (pa.int32(), pa.int64(), pa.int64()),
    (pa.int64(), pa.float64(), pa.float64()),
    (pa.float32(), pa.float64(), pa.float64()),
    (pa.null(), pa.date32(), pa.date32()),
    (pa.timestamp("ms", "UTC"), pa.timestamp("us", "UTC"), pa.timestamp("us", "UTC")),
    (pa.timestamp("us", "UTC"), pa.timestamp("us"), pa.string()),
    (pa.int64(), pa.string(), pa.string()),
    (pa.bool_(), pa.int64(), pa.string()),
    (pa.struct([("a", pa.int64())]), pa.struct([("b", pa.int64())]), pa.string()),
    (pa.list_(pa.int64()), pa.int64(), pa.string()),
])
def test_types_widen_or_become_text(a, b, expected):
    assert unified_type(a, b) == expected
    assert unified_type(b, a) == expected


def test_field_metadata_of_the_first_appearance_is_kept_and_the_schema_metadata_of_the_newest_file():
    first = pa.schema([pa.field("a", pa.int64(), metadata={"k": "1"})], metadata={"v": "old"})
    second = pa.schema([pa.field("a", pa.int64(), metadata={"k": "2"})], metadata={"v": "new"})
    unified = unified_schema([first, second])
    assert unified.field("a").metadata == {b"k": b"1"}
    assert unified.metadata == {b"v": b"new"}


def test_conform_fills_casts_and_writes_conflicts_as_text():
    schema = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("code", pa.string()),
                        ("when", pa.string()), ("obj", pa.string()), ("extra", pa.string())])
    batch = pa.record_batch({
        "obj": pa.array([{"x": 1, "y": [True]}, None]),
        "id": pa.array([1, 2]), "amount": pa.array([3, None]), "code": pa.array([7, 8]),
        "when": pa.array([datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc), None], pa.timestamp("us", "UTC")),
    })
    out = conform(batch, schema)
    assert out.schema == schema
    assert out.to_pydict() == {"id": [1, 2], "amount": [3.0, None], "code": ["7", "8"],
                               "when": ["2024-01-02T03:04:05+00:00", None], "obj": ['{"x":1,"y":[true]}', None],
                               "extra": [None, None]}


def test_text_of_values():
    assert text_of("a") == "a"
    assert text_of(None) is None
    assert text_of(True) == "true"
    assert text_of(1.5) == "1.5"
    assert text_of(date(2024, 3, 5)) == "2024-03-05"
    assert text_of([1, {"a": None}]) == '[1,{"a":null}]'


def test_fits_ignores_metadata_only():
    schema = pa.schema([("a", pa.int64())])
    assert fits(schema.with_metadata({"x": "y"}), schema)
    assert not fits(pa.schema([pa.field("a", pa.int64(), nullable=False)]), schema)
    assert not fits(pa.schema([("a", pa.float64())]), schema)


# ------------------------------------------------------------------ any files

_TYPES = {
    "int64": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "int32": (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    "float64": (pa.float64(), st.floats(allow_nan=False, allow_infinity=False, width=64)),
    "string": (pa.string(), st.text(max_size=5)),
    "bool": (pa.bool_(), st.booleans()),
    "date": (pa.date32(), st.dates()),
    "list": (pa.list_(pa.int64()), st.lists(st.integers(-5, 5), max_size=3)),
}


@st.composite
def files(draw):
    """A few files' columns: each file picks some of the names a..e, each name with a type of that file."""
    out = []
    for _ in range(draw(st.integers(1, 4))):
        names = draw(st.lists(st.sampled_from("abcde"), unique=True, max_size=5))
        rows = draw(st.integers(0, 3))
        columns = {}
        for name in names:
            kind, values = _TYPES[draw(st.sampled_from(sorted(_TYPES)))]
            columns[name] = pa.array(draw(st.lists(st.none() | values, min_size=rows, max_size=rows)), kind)
        out.append(pa.record_batch(columns) if columns else pa.record_batch({}, schema=pa.schema([])))
    return out


@given(files())
@settings(max_examples=150, deadline=None)
def test_every_file_conforms_and_keeps_its_values(batches):
    unified = unified_schema([b.schema for b in batches])
    assert set(unified.names) == {n for b in batches for n in b.schema.names}
    for batch in batches:
        out = conform(batch, unified)
        assert fits(out.schema, unified)
        assert out.num_rows == batch.num_rows
        for name in unified.names:
            got = out.column(name).to_pylist()
            if name not in batch.schema.names:
                assert got == [None] * batch.num_rows
                continue
            given_values = batch.column(name).to_pylist()
            assert [v is None for v in got] == [v is None for v in given_values]  # nothing nulled, nothing made up
            kind = unified.field(name).type
            if kind.equals(batch.schema.field(name).type):
                assert got == given_values
            elif pa.types.is_string(kind):
                assert got == [text_of(v) for v in given_values]
            else:  # widened numbers
                assert got == pytest.approx([None if v is None else float(v) if pa.types.is_floating(kind) else v
                                             for v in given_values], nan_ok=True)
