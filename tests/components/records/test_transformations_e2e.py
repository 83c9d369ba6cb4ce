"""Record transformations end to end: ``run-manifest`` over the fake API with parity scenario (h)'s manifest.

Protocol mode reads twice (the second time from the first run's state, after the API changed); Spark mode lands
the streams as Parquet, typed by the stream schemas, the transformed names as columns.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from parity.test_transformations_parity import (
    FIRST_ORDERS,
    SECOND_ORDERS,
    Scenario,
    config_for,
)

from framework.cli.run import main

MANIFEST = Path(__file__).resolve().parents[2] / "parity" / "manifests" / "transformations.yaml"


def run(tmp_path: Path, config: dict, *args: str) -> tuple[int, list[dict]]:
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    out = io.BytesIO()
    code = main([str(MANIFEST), "--config", str(config_file), *args], out=out)
    return code, [orjson.loads(line) for line in out.getvalue().splitlines() if line.startswith(b"{")]


def records(messages: list[dict], stream: str) -> list[dict]:
    return [m["record"]["data"] for m in messages if m["type"] == "RECORD" and m["record"]["stream"] == stream]


def last_state(messages: list[dict]) -> list[dict]:
    found = {}
    for m in messages:
        if m["type"] == "STATE":
            found[m["state"]["stream"]["stream_descriptor"]["name"]] = m["state"]
    return list(found.values())


def test_protocol_mode_two_syncs(fake_api, tmp_path):
    scenario = Scenario(fake_api)
    config = config_for(fake_api)
    code, first = run(tmp_path, config, "--protocol")
    assert code == 0
    orders = records(first, "orders")
    # the filter reads `order_status`, a name KeysToSnakeCase makes: the transformations ran first
    assert {o["order_id"] for o in orders} == {str(o["OrderId"]) for o in FIRST_ORDERS if o["orderStatus"] != "draft"}
    one = next(o for o in orders if o["order_id"] == "101")
    assert one["amount"] == 12.5 and one["quantity"] == 1 and one["paid"] is False and one["tags"] == ["solo"]
    assert one["client_name"] == "Zoë 1" and one["meta"] == {"source": "app", "raw": {"httpcode": 200}}
    assert one["attr_size"] == 1 and one["attr_color"] == "red" and "attributes" not in one
    assert one["coupon"] == "P1" and one["source"] == "app"
    assert "coupon" not in next(o for o in orders if o["order_id"] == "102")  # condition: value is not none
    lines = records(first, "order_lines")
    assert {"order_id": "102", "sku": "s2-1", "qty": 2, "w": 1, "parts.0": 1, "parts.1.n": 1} in lines
    assert any(line.get("orderid") == 103 for line in lines)  # no lines: the order itself (emit_parent)
    profiles = records(first, "profiles")
    assert {"ID": 11, "Full-name": "Ana B", "city": "X", "geo": [1, 2]} in profiles
    assert all(p.get("kind") != "bot" for p in profiles)

    scenario.orders = SECOND_ORDERS
    code, second = run(tmp_path, config, "--protocol", "--state", _write(tmp_path, last_state(first)))
    assert code == 0
    # 107 holds the state's own instant: kept, as Airbyte keeps it
    assert {o["order_id"] for o in records(second, "orders")} == {"103", "107", "121", "122"}
    assert next(o for o in records(second, "orders") if o["order_id"] == "103")["amount"] == 99.0


def _write(folder: Path, state: list[dict]) -> str:
    path = folder / "state.json"
    path.write_text(json.dumps(state))
    return str(path)


@pytest.mark.spark
def test_spark_lands_the_transformed_records_typed(spark, fake_api, tmp_path):
    Scenario(fake_api)
    out = tmp_path / "out"
    code, _ = run(tmp_path, config_for(fake_api), "--output", str(out), "--streams", "orders,order_lines", "--quiet")
    assert code == 0
    table = pq.read_table(sorted((out / "orders").glob("*.parquet"))[0])
    assert {"order_id", "amount", "quantity", "attr_size", "client_name", "updated_at"} <= set(table.column_names)
    assert str(table.schema.field("amount").type) == "double"
    assert str(table.schema.field("quantity").type) == "int64"
    rows = {row["order_id"]: row for row in table.to_pylist()}
    assert rows["101"]["quantity"] == 1 and rows["101"]["client_name"] == "Zoë 1"
    lines = pq.read_table(sorted((out / "order_lines").glob("*.parquet"))[0]).to_pylist()
    assert {(row["order_id"], row["qty"]) for row in lines} >= {("102", 2), ("101", 1)}
