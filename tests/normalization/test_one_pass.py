"""One-pass normalization (framework/normalization/tables.py): every table written from one pass over the
records equals the same table derived on its own (root nodes, then each child from its parent's rows), on
nested records with arrays of objects several levels deep; and the pass is one Spark job."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from framework.normalization.files import write_tables
from framework.normalization.plan import plan_catalog
from framework.normalization.raw import raw_frame
from framework.normalization.tables import Layout, StreamTables, split
from framework.normalization.transform import all_tables, root_nodes
from framework.storage import CatalogStore, storage_for
from normalization.conftest import at, land

pytestmark = pytest.mark.spark

OBJ = "object"
SCHEMA = {"type": OBJ, "properties": {
    "id": {"type": "integer"}, "name": {"type": ["null", "string"]}, "score": {"type": "number"},
    "ok": {"type": "boolean"}, "at": {"type": "string", "format": "date-time"},
    "day": {"type": "string", "format": "date"}, "any": {},
    "either": {"type": ["integer", "object"], "properties": {"x": {"type": "string"}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    "customer": {"type": OBJ, "properties": {
        "name": {"type": "string"},
        "contact": {"type": OBJ, "properties": {
            "email": {"type": "string"}, "phones": {"type": "array", "items": {"type": "string"}}}}}},
    "orders": {"type": "array", "items": {"type": OBJ, "properties": {
        "number": {"type": "integer"}, "placed": {"type": "string", "format": "date-time"},
        "note": {"type": OBJ, "properties": {"text": {"type": "string"}}},
        "lines": {"type": "array", "items": {"type": OBJ, "properties": {
            "sku": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": "number"},
            "options": {"type": "array", "items": {"type": OBJ, "properties": {
                "key": {"type": "string"}, "value": {"type": "string"}}}},
            "size": {"type": OBJ, "properties": {"w": {"type": "number"}, "h": {"type": "number"}}},
        }}},
    }}},
}}


def maybe(rng: random.Random, value, none=0.2):
    return None if rng.random() < none else value


def records(count: int, seed: int = 7) -> list[dict]:
    """Varied nested records: missing and null objects, empty and null arrays, null items, odd scalars."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        def line(i: int, j: int) -> dict | None:
            if rng.random() < 0.05:
                return None
            return {"sku": maybe(rng, f"s{i}-{j}"), "qty": maybe(rng, rng.choice([j, str(j), "x", 2.0])),
                    "price": maybe(rng, rng.random() * 100),
                    "options": maybe(rng, [{"key": f"k{k}", "value": maybe(rng, f"v{k}")}
                                           for k in range(rng.randint(0, 3))]),
                    "size": maybe(rng, {"w": rng.random(), "h": maybe(rng, 1.5)})}

        order = [{"number": n, "placed": maybe(rng, f"2024-02-0{1 + n % 9}T10:00:00.123Z"),
                  "note": maybe(rng, {"text": f"note {n}"}, 0.5),
                  "lines": maybe(rng, [line(i, j) for j in range(rng.randint(0, 4))])}
                 for n in range(rng.randint(0, 3))]
        record = {"id": i, "name": maybe(rng, f"n{i}"), "score": maybe(rng, rng.random()), "ok": maybe(rng, i % 2 == 0),
                  "at": maybe(rng, "2024-01-01T00:00:00Z"), "day": maybe(rng, "2024-03-04"),
                  "any": maybe(rng, rng.choice([{"a": [1, 2]}, [1, "b"], "text", 3])),
                  "either": maybe(rng, rng.choice([5, {"x": "y"}])),
                  "tags": maybe(rng, [maybe(rng, f"t{k}") for k in range(rng.randint(0, 3))]),
                  "grid": maybe(rng, [[k, k + 1] for k in range(rng.randint(0, 2))]),
                  "customer": maybe(rng, {"name": f"c{i}", "contact": maybe(rng, {
                      "email": maybe(rng, f"c{i}@x"), "phones": maybe(rng, [f"+{i}", f"+{i + 1}"])})}),
                  "orders": maybe(rng, order)}
        out.append({k: v for k, v in record.items() if not (v is None and rng.random() < 0.3)})
    return out


def rows_of(table: pa.Table) -> list[tuple]:
    return sorted((tuple(row.values()) for row in table.to_pylist()), key=repr)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_one_pass_equals_each_table_derived_on_its_own(spark, output, local_settings, fmt):
    settings = local_settings(fmt)
    land(settings, "shop", records(300), SCHEMA, emitted_at=at(1))
    land(settings, "shop", records(200, seed=8), SCHEMA, emitted_at=at(2))
    storage = storage_for(settings)
    [plan] = plan_catalog(CatalogStore(storage).load(), "spark")
    assert len(plan.tables()) == 11  # the stream's table and ten child tables, four levels down
    when = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)
    landed = raw_frame(spark, settings, storage, plan)
    try:
        tables = StreamTables(landed.frame, plan, when)
        destination = settings.model_dump(mode="json", by_alias=True)
        sc = spark.sparkContext
        sc.setJobGroup(f"one-pass-{fmt}", "one pass")
        try:
            written = write_tables(tables, destination, "one-pass")
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        assert len(sc.statusTracker().getJobIdsForGroup(f"one-pass-{fmt}")) == 1  # the records are read once

        nodes = root_nodes(landed.frame, plan, when, keep_data=True)
        expected = {plan.raw_table: landed.frame.select("_airbyte_ab_id", "_airbyte_emitted_at", "_airbyte_data"),
                    **all_tables(nodes, plan)}
        assert list(written) == list(expected)
        for name, frame in expected.items():
            files = [storage.path(w["key"]) for w in written[name]]
            got = pa.concat_tables([pq.read_table(f) for f in files])
            want = frame.toArrow()
            assert got.schema.names == want.schema.names, name
            assert [f.type for f in got.schema] == [f.type for f in want.schema], name
            assert sum(w["rows"] for w in written[name]) == got.num_rows == want.num_rows, name
            assert rows_of(got) == rows_of(want), name
            assert want.num_rows > 0, name  # every level has rows to compare
    finally:
        landed.release()


def test_split_cuts_a_record_batch_into_tables():
    """Pure: a child's rows are its parent's list column flattened, with the parent's metadata per item."""
    from framework.normalization.plan import Column, TablePlan

    leaf = TablePlan("t_c_d", "scalars", "d", ("t", "c", "d"), (Column("data", "data", "bigint"),), (),
                     "_airbyte_d_hashid", "_airbyte_c_foreign_hashid")
    child = TablePlan("t_c", "array", "c", ("t", "c"), (Column("v", "v", "string"),), (leaf,),
                      "_airbyte_c_hashid", "_airbyte_t_foreign_hashid")
    root = TablePlan("t", "root", None, ("t",), (Column("id", "id", "bigint"),), (child,), "_airbyte_t_hashid")
    ts = pa.timestamp("us", tz="UTC")
    meta = [("_airbyte_ab_id", pa.string()), ("_airbyte_emitted_at", ts)]
    schemas = (
        ("_airbyte_raw_t", pa.schema([*meta, ("_airbyte_data", pa.string())])),
        ("t", pa.schema([*meta, ("_airbyte_t_hashid", pa.string()), ("_airbyte_normalized_at", ts),
                         ("id", pa.int64())])),
        ("t_c", pa.schema([*meta, ("_airbyte_c_hashid", pa.string()), ("_airbyte_t_foreign_hashid", pa.string()),
                           ("_airbyte_normalized_at", ts), ("v", pa.string())])),
        ("t_c_d", pa.schema([*meta, ("_airbyte_d_hashid", pa.string()), ("_airbyte_c_foreign_hashid", pa.string()),
                             ("_airbyte_normalized_at", ts), ("data", pa.int64())])),
    )
    leaf_type = pa.list_(pa.struct([("data", pa.int64()), ("_airbyte_d_hashid", pa.string())]))
    child_type = pa.list_(pa.struct([("v", pa.string()), ("_airbyte_c_hashid", pa.string()), ("#t_c_d", leaf_type)]))
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    batch = pa.RecordBatch.from_pydict({
        "_airbyte_ab_id": ["a", "b", "c"],
        "_airbyte_emitted_at": pa.array([when] * 3, pa.timestamp("us", tz="Etc/UTC")),
        "_airbyte_t_hashid": ["ha", "hb", "hc"], "_airbyte_normalized_at": pa.array([when] * 3, ts),
        "id": [1, 2, 3], "#data": ["{}", "{}", "{}"],
        "#t_c": pa.array([[{"v": "x", "_airbyte_c_hashid": "cx", "#t_c_d": [{"data": 7, "_airbyte_d_hashid": "d7"}]},
                           {"v": "y", "_airbyte_c_hashid": "cy", "#t_c_d": None}],
                          None,
                          [{"v": "z", "_airbyte_c_hashid": "cz",
                            "#t_c_d": [{"data": 8, "_airbyte_d_hashid": "d8"}, {"data": None,
                                                                                "_airbyte_d_hashid": "d0"}]}]],
                         child_type)})
    out = split(batch, Layout(root, "_airbyte_raw_t", schemas))
    assert {name: table.schema.names for name, table in out.items()} == {name: s.names for name, s in schemas}
    assert out["_airbyte_raw_t"].column("_airbyte_emitted_at").type == ts
    assert [(r["_airbyte_ab_id"], r["_airbyte_t_foreign_hashid"], r["v"]) for r in out["t_c"].to_pylist()] == [
        ("a", "ha", "x"), ("a", "ha", "y"), ("c", "hc", "z")]
    assert [(r["_airbyte_ab_id"], r["_airbyte_c_foreign_hashid"], r["data"], r["_airbyte_d_hashid"])
            for r in out["t_c_d"].to_pylist()] == [("a", "cx", 7, "d7"), ("c", "cz", 8, "d8"), ("c", "cz", None, "d0")]
    with pytest.raises(TypeError, match="schema says"):
        split(batch.set_column(4, "id", pa.array(["1", "2", "3"])), Layout(root, "_airbyte_raw_t", schemas))
