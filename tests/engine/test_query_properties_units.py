"""Where chunks are merged: in the reader of one unit, so a Spark task merges the chunks it reads itself.

A unit (one partition, one window) read by :func:`~framework.engine.worker.read_group`, as a
task reads it, yields pages whose records are already merged; a connector rebuilt from the
driver's :class:`~framework.engine.worker.ConnectorSource` asks for the same properties
without reading the property endpoint again.
"""

from __future__ import annotations

import pyarrow as pa
from cli.test_run_manifest_query_properties import MANIFEST
from fakes.api_server import FakeApi
from fakes.properties_api import PROPERTIES, serve_properties_api

from framework.engine.connector import open_connector
from framework.engine.plan import open_sync
from framework.engine.results import UnitResult
from framework.engine.worker import ConnectorSource, PageTyper, read_group
from framework.typed import RecordConverter, parse_schema


def test_each_unit_yields_merged_pages_and_workers_reuse_the_drivers_property_list(tmp_path, fake_api: FakeApi):
    serve_properties_api(fake_api)
    path = tmp_path / "manifest.yaml"
    path.write_text(MANIFEST)
    driver = open_connector(str(path), {"base_url": fake_api.url})
    source = ConnectorSource.of_connector(driver, str(path), MANIFEST).with_query_properties(driver, "contacts")
    assert source.query_properties == {"contacts": {"properties": list(PROPERTIES)}}
    assert len(fake_api.received("/properties")) == 4
    fake_api.requests.clear()

    worker = source.open()  # what a task builds
    stream = worker.stream("contacts")
    units = open_sync(worker, stream, None).plan()
    assert len(units) == 2  # the two regions
    converter = RecordConverter(parse_schema(dict(stream.json_schema), stream="contacts"), stream="contacts")
    for unit in units:
        items = list(read_group(worker, stream, [unit], PageTyper(converter)))
        batches = [i for i in items if isinstance(i, pa.RecordBatch)]
        result = next(i for i in items if isinstance(i, UnitResult))
        assert result.error is None and (result.records, result.pages) == (7, 3)
        assert [b.num_rows for b in batches] == [3, 3, 1]  # a page is 3 records, not 3 per chunk
        rows = [row for b in batches for row in b.to_pylist()]
        assert all(row["properties"] == {n: f"{n}-{row['id'][1:]}" for n in PROPERTIES} for row in rows)
    assert fake_api.received("/properties") == []
    assert len(fake_api.received("/contacts")) == 2 * 3 * 3
