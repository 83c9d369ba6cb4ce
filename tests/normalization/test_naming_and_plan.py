"""Names and plans of normalized tables (pure: no Spark)."""

from __future__ import annotations

import hashlib
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.errors import ConfigError
from framework.normalization.naming import (
    NameSet,
    child_table_name,
    normalize_identifier,
    path_hash,
    root_table_name,
    truncate_middle,
)
from framework.normalization.plan import plan_catalog

CAMPAIGN = (["companies"], "property_engagements_last_meeting_booked_campaign")
MEDIUM = (["deals", "properties"], "engagements_last_meeting_booked_medium")


@pytest.mark.parametrize("dialect, path, expected", [
    ("bigquery", CAMPAIGN, "companies_2e8_property_engagements_last_meeting_booked_campaign"),
    ("bigquery", MEDIUM, "deals_properties_6e6_engagements_last_meeting_booked_medium"),
    ("postgres", CAMPAIGN, "companies_2e8_property_engag__oked_campaign"),
    ("postgres", MEDIUM, "deals_prop_6e6_engagements_l__booked_medium"),
])
def test_the_four_names_of_the_seed(dialect, path, expected):
    assert child_table_name(path[0], path[1], dialect) == expected


def test_the_hash_is_of_the_json_path_joined_with_airbyte():
    assert path_hash(["cars", "cars"]) == hashlib.sha1(b"cars&airbyte&cars").hexdigest()[:3]
    assert child_table_name(["cars"], "cars", "spark") == f"cars_{path_hash(['cars', 'cars'])}_cars"


@given(st.text(alphabet="abcdefghij_", min_size=1, max_size=80), st.integers(min_value=3, max_value=70))
def test_truncating_in_the_middle_keeps_both_ends(name, length):
    cut = truncate_middle(name, length)
    assert len(cut) <= length
    if len(name) <= length:
        assert cut == name
    else:
        head = (length - 1) // 2  # characters kept before the `__`; the rest come from the end
        tail = length - 2 - head
        assert len(cut) == length and cut[head:head + 2] == "__"
        assert name.startswith(cut[:head]) and name.endswith(cut[head + 2:]) and len(cut[head + 2:]) == tail


@given(st.lists(st.sampled_from(["ab", "cd", "x" * 40, "y" * 41]), min_size=1, max_size=5),
       st.text(alphabet="abc_", min_size=1, max_size=60))
def test_child_names_stay_within_the_postgres_limit(path, column):
    assert len(child_table_name(path, column, "postgres")) <= 43


def test_identifiers_by_dialect():
    assert normalize_identifier("Prénom du client", "postgres") == "prenom_du_client"
    assert normalize_identifier("2nd-field", "spark") == "_2nd_field"
    assert normalize_identifier("Name", "snowflake") == "NAME"
    assert normalize_identifier("Name", "bigquery") == "Name"
    assert root_table_name("x" * 70, "postgres") == truncate_middle("x" * 70, 43)


def test_a_taken_name_gets_a_number_and_stays_within_the_limit():
    names = NameSet(["cars"])
    assert names.claim("CARS") == "CARS_1"
    assert names.claim("cars") == "cars_2"
    assert names.claim("a" * 10, limit=10) == "a" * 10
    second = names.claim("a" * 10, limit=10)
    assert second.endswith("_1") and len(second) == 10


def entry(name, properties, **more):
    stream = {"name": name, "json_schema": {"type": "object", "properties": properties}}
    return {"stream": stream, "sync_mode": "incremental", "destination_sync_mode": "append", **more}


def columns(table):
    return [(c.name, c.type) for c in table.columns]


CAR = {"make": {"type": "string"}, "model": {"type": "string"}, "horsepower": {"type": "integer"}}


def test_the_seed_cars_examples():
    objects = entry("cars", {**CAR, "limited_editions": {"type": "array", "items": {
        "type": "object", "properties": {"name": {"type": "string"}, "release_year": {"type": "integer"}}}}})
    strings = entry("cars_s", {**CAR, "limited_editions": {"type": "array", "items": {"type": "string"}}})
    specs = entry("cars_p", {**CAR, "powertrain_specs": {"type": "object", "properties": {
        "horsepower": {"type": "integer"}, "transmission": {"type": "string"}}}})
    nested = entry("cars_n", {**CAR, "cars": {"type": "array", "items": {"type": "object", "properties": CAR}}})
    plans = {p.stream: p for p in plan_catalog([objects, strings, specs, nested], "postgres")}

    cars = plans["cars"].root
    assert cars.name == "cars" and cars.column_names == (
        "_airbyte_ab_id", "_airbyte_emitted_at", "_airbyte_cars_hashid", "_airbyte_normalized_at",
        "make", "model", "horsepower")
    assert columns(cars) == [("make", "string"), ("model", "string"), ("horsepower", "bigint")]
    [editions] = cars.children
    assert editions.kind == "array" and editions.name == child_table_name(["cars"], "limited_editions", "postgres")
    assert editions.hashid == "_airbyte_limited_editions_hashid" and editions.foreign == "_airbyte_cars_foreign_hashid"
    assert columns(editions) == [("name", "string"), ("release_year", "bigint")]

    [as_strings] = plans["cars_s"].root.children
    assert as_strings.kind == "scalars" and columns(as_strings) == [("data", "string")]
    [power] = plans["cars_p"].root.children
    assert power.kind == "object" and columns(power) == [("horsepower", "bigint"), ("transmission", "string")]
    assert power.hashid == "_airbyte_powertrain_specs_hashid"
    [inner] = plans["cars_n"].root.children
    assert inner.name == f"cars_n_{path_hash(['cars_n', 'cars'])}_cars"
    assert (inner.hashid, inner.foreign) == ("_airbyte_cars_hashid", "_airbyte_cars_n_foreign_hashid")


def test_types_come_from_the_catalog():
    plan, = plan_catalog([entry("t", {
        "n": {"type": "number"}, "b": {"type": ["null", "boolean"]}, "ts": {"type": "string", "format": "date-time"},
        "d": {"type": "string", "format": "date"}, "tm": {"type": "string", "format": "time"},
        "free": {"type": "object"}, "u": {"type": ["integer", "number"]}, "us": {"type": ["integer", "string"]},
        "any": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"a": {"type": "string"}}}]},
    })], "spark")
    assert columns(plan.root) == [("n", "double"), ("b", "boolean"), ("ts", "timestamp"), ("d", "date"),
                                  ("tm", "string"), ("free", "json"), ("u", "double"), ("us", "string"),
                                  ("any", "json")]


def test_deep_and_wide_nesting():
    leaf = {"type": "object", "properties": {f"f{i}": {"type": "integer"} for i in range(60)}}
    deep = leaf
    for level in range(6):
        deep = {"type": "array" if level % 2 else "object",
                **({"items": {"type": "object", "properties": {"v": {"type": "string"}, "down": deep}}}
                   if level % 2 else {"properties": {"v": {"type": "string"}, "down": deep}})}
    plan, = plan_catalog([entry("deep", {"top": deep})], "postgres")
    tables = plan.tables()
    assert len(tables) == 8 and len(tables[-1].columns) == 60
    assert all(len(t.name) <= 43 for t in tables)
    assert len({t.name for t in tables}) == 8
    for parent, child in itertools.pairwise(tables[1:]):
        assert child.json_path == parent.json_path + ("down",)
        assert child.foreign == "_airbyte_down_foreign_hashid" or parent is tables[1]


def test_name_collisions_are_resolved_in_order():
    plan_a, plan_b = plan_catalog([
        entry("cars", {"First Name": {"type": "string"}, "first_name": {"type": "string"},
                       "_airbyte_ab_id": {"type": "string"},
                       "cars": {"type": "object", "properties": {"a": {"type": "string"}}}}),
        entry(f"cars_{path_hash(['cars', 'cars'])}_cars", {"x": {"type": "string"}}),
    ], "postgres")
    assert [c.name for c in plan_a.root.columns] == ["first_name", "first_name_1", "_airbyte_ab_id_1"]
    assert [c.key for c in plan_a.root.columns] == ["First Name", "first_name", "_airbyte_ab_id"]
    assert plan_b.root.name == f"cars_{path_hash(['cars', 'cars'])}_cars"
    assert plan_a.root.children[0].name == plan_b.root.name + "_1"


def test_dedup_needs_a_primary_key_and_top_level_cursor():
    with pytest.raises(ConfigError, match="no primary key"):
        plan_catalog([entry("t", CAR)], "spark", "append_dedup")
    with pytest.raises(ConfigError, match="cursor"):
        plan_catalog([entry("t", CAR, cursor_field=["a", "b"], primary_key=[["make"]])], "spark", "append_dedup")
    plan, = plan_catalog([entry("t", CAR, cursor_field=["horsepower"], primary_key=[["make"]])], "spark",
                         "append_dedup")
    assert plan.dedup and plan.cursor.name == "horsepower" and [c.name for c in plan.primary_key] == ["make"]
    assert plan.scd_table == "t_scd" and plan.raw_table == "_airbyte_raw_t"
