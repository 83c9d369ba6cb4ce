"""framework.typed.columns.lookup_keys: the records' own key objects for dict.get, and the same batch as by name."""

from __future__ import annotations

from unittest import mock

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from typed.helpers import STREAM, convert

from framework.typed import RecordConverter, parse_schema
from framework.typed.columns import lookup_keys

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "when": {"type": "string", "format": "date-time"},
    "customer": {"type": "object", "properties": {
        "email": {"type": "string"}, "address": {"type": "object", "properties": {"city": {"type": "string"}}}}},
    "items": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "number"}}}},
}}
NAMES = ["id", "name", "when", "customer", "email", "address", "city", "items", "sku", "qty", "other"]


def fresh(text: str) -> str:
    """An equal string that is a new object (not the literal's, not interned)."""
    copy = "".join(list(text + "!"))[:-1]
    assert copy == text and copy is not text
    return copy


class OddKey(str):
    """A key equal to a name with another hash: a dict finds it only by itself."""

    def __hash__(self) -> int:
        return hash("odd " + str(self))

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


def test_the_first_rows_own_key_objects_are_taken():
    shared = {name: fresh(name) for name in ("id", "name")}
    rows = [{shared["id"]: 1, shared["name"]: "a", "extra": 2}, {shared["id"]: 2}]
    keys = lookup_keys(rows, ["id", "name", "missing"])
    assert keys == ["id", "name", "missing"]
    assert keys[0] is shared["id"] and keys[1] is shared["name"]


def test_names_stay_for_no_rows_a_first_row_not_a_dict_or_keys_not_plain_strings():
    names = ["id"]
    assert lookup_keys([], names) is names
    assert lookup_keys([None, {"id": 1}], names) is names
    assert lookup_keys([["id"]], names) is names

    class Record(dict):
        pass

    assert lookup_keys([Record(id=1)], names) is names
    odd = OddKey("id")
    assert lookup_keys([{odd: 1}], names)[0] is names[0]


def test_a_key_of_another_hash_in_the_first_record_changes_nothing():
    conv = RecordConverter(parse_schema(SCHEMA, stream=STREAM), stream=STREAM)
    records = [{OddKey("id"): 1, "name": "a"}, {"id": 2, "name": "b"}]
    batch = convert(conv, records)
    assert batch.column("id").to_pylist() == [None, 2]  # dict.get finds the odd key by itself only
    assert batch.column("name").to_pylist() == ["a", "b"]


leaves = (st.none() | st.booleans() | st.integers(-(2 ** 65), 2 ** 65) | st.floats() | st.text(max_size=4)
          | st.sampled_from(["2024-01-02T03:04:05Z", "2024-01-02", "0000-01-01T00:00:00", "12"]))
values = st.recursive(leaves, lambda children: st.lists(children, max_size=3)
                      | st.dictionaries(st.sampled_from(NAMES), children, max_size=4), max_leaves=12)
records = st.lists(st.dictionaries(st.sampled_from(NAMES), values, max_size=6), min_size=1, max_size=6)


def rekey(value, keys: dict[str, str] | None):
    """``value`` with every dict key the object of ``keys`` (shared by every record), or a fresh one (None)."""
    if isinstance(value, dict):
        return {(keys[key] if keys is not None else fresh(key)): rekey(item, keys) for key, item in value.items()}
    if isinstance(value, list):
        return [rekey(item, keys) for item in value]
    return value


def by_name(rows, names):
    return names


@given(records, st.lists(st.booleans(), min_size=6, max_size=6))
def test_the_batch_is_the_one_looked_up_by_name(drawn, shared_keys):
    """Records sharing key objects (as orjson gives them) or not, keys missing, extra or in any order,
    values of any type: the same batch and the same count of nulled values as looking up by name."""
    conv = RecordConverter(parse_schema(SCHEMA, stream=STREAM), stream=STREAM)
    shared = {name: fresh(name) for name in NAMES}
    page = [rekey(record, shared if share else None) for record, share in zip(drawn, shared_keys)]
    batch = convert(conv, page)
    nulled = conv.last_nulled
    with mock.patch("framework.typed.converter.lookup_keys", by_name), \
            mock.patch("framework.typed.columns.lookup_keys", by_name):
        reference = convert(conv, page)
    assert conv.last_nulled == nulled
    assert batch.drop_columns(["_airbyte_raw_id"]).equals(reference.drop_columns(["_airbyte_raw_id"]))
    batch.validate(full=True)
    assert isinstance(batch, pa.RecordBatch)
