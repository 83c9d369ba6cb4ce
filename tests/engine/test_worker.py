"""The engine's worker side without Spark: the connector cache, a group of units read into batches,
and every stream's schema for the executors."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from engine.incremental_kit import Shop, at, cursor, iso, orders, source, stream, write
from fakes.api_server import ApiError

from framework.engine.connector import open_connector
from framework.engine.plan import open_sync
from framework.engine.results import UnitResult
from framework.engine.worker import ConnectorSource, PageTyper, all_schemas, read_group, worker_connector
from framework.temporal.clock import FixedClock
from framework.typed import RecordConverter, parse_schema

SECRET = "s3cr3t-token-value"
SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}, "updated_at": {"type": "string"}}}


def daily_orders(tmp_path, fake_api, shop: Shop):
    """A connector over /orders in daily windows (days 0 to 3, the last one ending at noon), with a secret
    in its config."""
    manifest = source(stream("orders", "/orders", incremental=cursor(end_datetime=iso(at(3, 12)))))
    manifest["streams"][0]["schema_loader"]["schema"] = SCHEMA
    # The token goes in the query, so the URL a read error names carries it.
    manifest["streams"][0]["retriever"]["requester"]["request_parameters"] = {"token": "{{ config.token }}"}
    manifest["spec"] = {"type": "Spec", "connection_specification": {
        "type": "object", "properties": {"base_url": {"type": "string"},
                                         "token": {"type": "string", "airbyte_secret": True}}}}
    shop.install(fake_api)
    path = write(tmp_path, manifest)
    return open_connector(path, {"base_url": fake_api.url, "token": SECRET}, sleep=lambda s: None,
                          clock=FixedClock(at(9)))


def refusing_day(day: int):
    """A shop hook that refuses the window starting on ``day``."""
    def hook(request):
        if request.param("start") == iso(at(day)):
            raise ApiError(403, "this token may not read this window")
    return hook


def shop_with_orders(**more) -> Shop:
    shop = Shop(**more)
    for day in range(4):
        shop.add_order(1, f"o{day}", at(day, 5))
    return shop


def test_a_group_yields_typed_pages_then_one_result_per_unit(tmp_path, fake_api):
    connector = daily_orders(tmp_path, fake_api, shop_with_orders())
    stream_ = connector.stream("orders")
    units = open_sync(connector, stream_, None).plan()
    converter = RecordConverter(parse_schema(SCHEMA, stream="orders"), stream="orders")
    items = list(read_group(connector, stream_, units, PageTyper(converter, generation_id=3, sync_id=7)))
    results = [i for i in items if isinstance(i, UnitResult)]
    batches = [i for i in items if isinstance(i, pa.RecordBatch)]
    assert [r.unit for r in results] == [u.index for u in units]
    assert [r.records for r in results] == [1, 1, 1, 1]
    assert [r.latest for r in results] == [at(d, 5) for d in range(4)]
    assert all(r.error is None and r.pages == 1 for r in results)
    assert [b.column("id").to_pylist() for b in batches] == [["o0"], ["o1"], ["o2"], ["o3"]]
    assert set(batches[0].column("_airbyte_generation_id").to_pylist()) == {3}


def test_the_first_failure_ends_the_group_masked_and_later_units_are_not_read(tmp_path, fake_api):
    shop = shop_with_orders(hook=refusing_day(1))
    connector = daily_orders(tmp_path, fake_api, shop)
    stream_ = connector.stream("orders")
    units = open_sync(connector, stream_, None).plan()
    before = len(fake_api.requests)
    results = [i for i in read_group(connector, stream_, units, PageTyper(None)) if isinstance(i, UnitResult)]
    assert [(r.unit, r.records) for r in results] == [(0, 1), (1, 0), (2, 0), (3, 0)]
    assert results[0].error is None
    assert "403" in results[1].error and SECRET not in results[1].error
    assert results[2].error == results[3].error == results[1].error
    assert [r.param("start") for r in fake_api.requests[before:]] == [iso(at(0)), iso(at(1))]


def test_a_failed_write_fails_its_unit_like_a_failed_read(tmp_path, fake_api):
    connector = daily_orders(tmp_path, fake_api, shop_with_orders())
    stream_ = connector.stream("orders")
    units = open_sync(connector, stream_, None).plan()
    written = []

    def write_batch(batch: pa.RecordBatch) -> None:
        if written:
            raise OSError(f"disk full while writing with {SECRET}")
        written.append(batch)

    items = list(read_group(connector, stream_, units, PageTyper(None), write_batch))
    assert all(isinstance(i, UnitResult) for i in items)  # every batch went to write_batch
    assert [r.error is None for r in items] == [True, False, False, False]
    assert items[1].error.startswith("disk full while writing with ") and SECRET not in items[1].error
    assert len(written) == 1


def test_the_worker_connector_is_built_once_for_the_last_source(tmp_path, fake_api):
    manifest = write(tmp_path, source(stream("orders", "/orders", incremental=cursor())))
    text = open(manifest, encoding="utf-8").read()
    first = ConnectorSource.of(manifest, text, {"base_url": fake_api.url, "b": 1, "a": 2})
    same = ConnectorSource.of(manifest, text, {"a": 2, "base_url": fake_api.url, "b": 1})  # keys in another order
    other = ConnectorSource.of(manifest, text, {"base_url": fake_api.url, "a": 3})
    connector = worker_connector(first)
    assert worker_connector(same) is connector
    assert worker_connector(other) is not connector
    assert worker_connector(first) is not connector  # one connector is kept: the last one
    assert worker_connector(ConnectorSource.of(manifest, text, first.config, {"orders": SCHEMA})).stream(
        "orders").json_schema == SCHEMA  # the schemas given win over the manifest's


def test_all_schemas_has_the_parents_of_substreams(tmp_path, fake_api):
    path = write(tmp_path, source(orders()))  # orders: a substream of accounts, which is not a stream of its own
    connector = open_connector(path, {"base_url": fake_api.url})
    assert sorted(connector.streams) == ["orders"]
    assert sorted(all_schemas(connector)) == ["accounts", "orders"]


@pytest.mark.parametrize("at_most", [1, 3])
def test_a_group_reads_units_in_the_order_given(tmp_path, fake_api, at_most):
    from framework.engine.plan import contiguous_groups

    connector = daily_orders(tmp_path, fake_api, shop_with_orders())
    stream_ = connector.stream("orders")
    units = open_sync(connector, stream_, None).plan()
    seen = []
    for group in contiguous_groups(units, at_most):
        seen += [i.unit for i in read_group(connector, stream_, group, PageTyper(None)) if isinstance(i, UnitResult)]
    assert seen == [u.index for u in units]


def test_a_wrong_field_path_is_a_warning_of_each_unit_with_its_empty_page(tmp_path, fake_api):
    """What a normal run warns of (engine/signals.py), from the first pages of each unit a task reads."""
    shop = shop_with_orders()
    shop.install(fake_api)
    manifest = source(stream("orders", "/orders", incremental=cursor(end_datetime=iso(at(3, 12)))))
    manifest["streams"][0]["retriever"]["record_selector"]["extractor"]["field_path"] = ["orders"]
    connector = open_connector(write(tmp_path, manifest), {"base_url": fake_api.url}, clock=FixedClock(at(9)))
    stream_ = connector.stream("orders")
    units = open_sync(connector, stream_, None).plan()
    results = [r for r in read_group(connector, stream_, units, PageTyper(None)) if isinstance(r, UnitResult)]
    assert [(r.records, r.pages, r.empty_pages) for r in results] == [(0, 0, 1)] * 4
    for result in results:
        assert [w.kind for w in result.warnings] == ["extractor-empty"]
        assert "field_path: ['orders'] found no records, but the response has a list of 1 objects at `data`" in (
            result.warnings[0].message)
        assert result.warnings[0].fix == "set the record selector's extractor to field_path: ['data']"


def test_a_right_manifest_reads_without_warnings(tmp_path, fake_api):
    connector = daily_orders(tmp_path, fake_api, shop_with_orders())
    stream_ = connector.stream("orders")
    units = open_sync(connector, stream_, None).plan()
    results = [r for r in read_group(connector, stream_, units, PageTyper(None)) if isinstance(r, UnitResult)]
    assert [(r.records, r.warnings, r.empty_pages) for r in results] == [(1, (), 0)] * 4
def test_a_machine_without_the_manifests_folder_builds_the_connector_from_the_schemas_sent(tmp_path):
    """An executor on another machine (or a Spark Connect server) lacks the folder the schema files are in:
    the schemas the driver read travel with the source, and nothing is looked up there."""
    folder = tmp_path / "connector"
    (folder / "schemas").mkdir(parents=True)
    (folder / "schemas" / "orders.json").write_text('{"type": "object", "properties": {"id": {"type": "string"}}}')
    manifest = source(stream("orders", "/orders"))
    manifest["streams"][0]["schema_loader"] = {"type": "JsonFileSchemaLoader", "file_path": "schemas/orders.json"}
    path = write(folder, manifest)
    connector = open_connector(path, {"base_url": "http://127.0.0.1:9"})
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    sent = ConnectorSource.of_connector(connector, path, text)
    shutil.rmtree(folder)  # the other machine has no such folder

    rebuilt = sent.open()
    assert dict(rebuilt.stream("orders").json_schema)["properties"] == {"id": {"type": "string"}}


def test_a_task_reads_no_record_from_an_empty_body(tmp_path, fake_api):
    """The Spark task's read (read_group, what an executor runs) takes records as protocol mode does: a `{}`
    body, or a list of empty documents, at the root is no record (as in airbyte-cdk)."""
    bodies = iter([{}, [{}, {"id": "o1", "updated_at": iso(at(1, 5))}], [], {"id": "o3", "updated_at": iso(at(3, 5))}])
    fake_api.route("GET", "/orders", lambda request: next(bodies))
    manifest = source(stream("orders", "/orders", incremental=cursor(end_datetime=iso(at(3, 12)))))
    manifest["streams"][0]["retriever"]["record_selector"]["extractor"]["field_path"] = []
    manifest["streams"][0]["schema_loader"]["schema"] = SCHEMA
    connector = open_connector(write(tmp_path, manifest), {"base_url": fake_api.url}, clock=FixedClock(at(9)))
    stream_ = connector.stream("orders")
    units = open_sync(connector, stream_, None).plan()
    converter = RecordConverter(parse_schema(SCHEMA, stream="orders"), stream="orders")
    items = list(read_group(connector, stream_, units, PageTyper(converter)))
    results = [i for i in items if isinstance(i, UnitResult)]
    assert [(r.records, r.error) for r in results] == [(0, None), (1, None), (0, None), (1, None)]
    assert [i.column("id").to_pylist() for i in items if isinstance(i, pa.RecordBatch)] == [["o1"], ["o3"]]
