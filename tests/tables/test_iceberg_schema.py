"""Union by name of a stream's Arrow schema into an Iceberg table's: added, widened, incompatible."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyiceberg.catalog.sql import SqlCatalog

from framework.tables.iceberg_schema import iceberg_schema_of, plan_evolution

PRIMITIVES = {"int": pa.int32(), "long": pa.int64(), "float": pa.float32(), "double": pa.float64(),
              "string": pa.string(), "boolean": pa.bool_(), "date": pa.date32(), "time": pa.time64("us"),
              "timestamptz": pa.timestamp("us", tz="UTC"), "decimal(10, 2)": pa.decimal128(10, 2),
              "decimal(20, 2)": pa.decimal128(20, 2)}
#: (table's, stream's) pairs Iceberg widens; the reverse pairs need nothing (readers promote the file's type).
WIDENS = {("int", "long"), ("float", "double"), ("decimal(10, 2)", "decimal(20, 2)")}


def _table(schema: pa.Schema):
    from pyiceberg.schema import assign_fresh_schema_ids

    return assign_fresh_schema_ids(iceberg_schema_of(schema))


def test_a_new_column_and_a_new_nested_field_are_added():
    table = _table(pa.schema([pa.field("id", pa.int64()),
                              pa.field("tags", pa.list_(pa.struct([pa.field("k", pa.string())])))]))
    incoming = pa.schema([pa.field("id", pa.int64()), pa.field("email", pa.string()),
                          pa.field("tags", pa.list_(pa.struct([pa.field("k", pa.string()), pa.field("v", pa.int64())])))])
    plan = plan_evolution(table, incoming)
    assert plan.added == ("email", "tags.element.v") and plan.widened == () and plan.incompatible == ()
    assert plan.schema_change().added == ("email", "tags.element.v")


def test_a_column_the_stream_dropped_is_no_change():
    table = _table(pa.schema([pa.field("id", pa.int64()), pa.field("gone", pa.string())]))
    assert plan_evolution(table, pa.schema([pa.field("id", pa.int64())])).steps == ()


def test_millisecond_and_microsecond_timestamps_are_the_same_iceberg_type():
    table = _table(pa.schema([pa.field("at", pa.timestamp("ms", tz="UTC"))]))
    assert plan_evolution(table, pa.schema([pa.field("at", pa.timestamp("us", tz="UTC"))])).steps == ()


def test_a_required_column_given_as_nullable_becomes_optional():
    table = _table(pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    plan = plan_evolution(table, pa.schema([pa.field("id", pa.int64())]))
    assert [(step.kind, step.path) for step in plan.steps] == [("optional", ("id",))]


def test_a_struct_where_the_table_has_a_string_is_incompatible():
    table = _table(pa.schema([pa.field("address", pa.string())]))
    plan = plan_evolution(table, pa.schema([pa.field("address", pa.struct([pa.field("city", pa.string())]))]))
    assert [column[:2] for column in plan.incompatible] == [("address", "string")] and plan.steps == ()


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(sorted(PRIMITIVES)), st.sampled_from(sorted(PRIMITIVES)))
def test_each_pair_of_types_is_the_same_widened_narrower_or_incompatible(old, new):
    plan = plan_evolution(_table(pa.schema([pa.field("c", PRIMITIVES[old])])), pa.schema([pa.field("c", PRIMITIVES[new])]))
    if old == new or (new, old) in WIDENS:
        assert plan.steps == () and plan.incompatible == ()
    elif (old, new) in WIDENS:
        assert plan.widened == (("c", old, new),) and plan.incompatible == ()
    else:
        assert plan.incompatible == (("c", old, new),) and plan.steps == ()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    folder = tmp_path_factory.mktemp("catalog")
    catalog = SqlCatalog("schemas", uri=f"sqlite:///{folder}/catalog.db", warehouse=f"file://{folder}")
    catalog.create_namespace("plans")
    return catalog


FIELDS = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(sorted(PRIMITIVES))),
                  min_size=1, max_size=4, unique_by=lambda pair: pair[0])


@settings(max_examples=25, deadline=None)
@given(FIELDS, FIELDS)
def test_an_applied_plan_leaves_nothing_to_do_for_the_same_stream_schema(catalog, before, after):
    """Applied through pyiceberg, a plan without incompatible columns makes the table take the stream's files."""
    table = catalog.create_table(("plans", "t"), schema=pa.schema([pa.field(n, PRIMITIVES[k]) for n, k in before]))
    try:
        incoming = pa.schema([pa.field(n, PRIMITIVES[k]) for n, k in after])
        plan = plan_evolution(table.schema(), incoming)
        if plan.incompatible:
            return
        with table.update_schema() as update:
            plan.apply(update)
        table = catalog.load_table(("plans", "t"))
        again = plan_evolution(table.schema(), incoming)
        assert again.steps == () and again.incompatible == ()
        names = [field.name for field in table.schema().fields]
        assert names[:len(before)] == [n for n, _ in before]  # nothing dropped, nothing reordered
        assert set(names) == {n for n, _ in before} | {n for n, _ in after}
    finally:
        catalog.drop_table(("plans", "t"))
