"""A stream whose read a custom retriever drives, read end to end through the airbyte-cdk bridge by the engine.

The manifest's ``CustomRetriever`` subclasses airbyte-cdk's ``SimpleRetriever``
(a ``components.py`` beside the manifest), so airbyte-cdk reads the stream
(:mod:`framework.engine.bridge`): in protocol mode twice (the state, in
Airbyte's shape, moves and the second sync reads only from it), and through the
Spark pipeline, whose tasks read the units and whose driver folds them into the
same state. Needs airbyte-cdk (``make test-airbyte``); skipped without it.
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from fakes.api_server import FakeApi, RecordedRequest, paged

from framework.components.custom.airbyte import airbyte_available
from framework.engine.connector import open_connector
from framework.engine.selection import parse_state, select_streams
from framework.protocol.read import read

pytestmark = pytest.mark.skipif(not airbyte_available(), reason="needs airbyte-cdk (make test-airbyte): "
                                "pip install 'manifest-framework[airbyte]'")

COMPONENTS = """
    from dataclasses import dataclass
    from airbyte_cdk.sources.declarative.retrievers import SimpleRetriever

    @dataclass
    class TaggingRetriever(SimpleRetriever):
        def read_records(self, records_schema, stream_slice=None):
            for record in super().read_records(records_schema, stream_slice):
                data = dict(record.data) if hasattr(record, "data") else dict(record)
                data["via"] = "custom-retriever"
                yield data
"""

SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "updated_at": {"type": "string"},
                                           "via": {"type": "string"}}}


def manifest() -> dict:
    requester = {"type": "HttpRequester", "url_base": "{{ config.base_url }}", "path": "/orders",
                 "http_method": "GET",
                 "request_parameters": {"since": "{{ stream_interval.start_time }}",
                                        "until": "{{ stream_interval.end_time }}"}}
    return {
        "version": "6.0.0",
        "type": "DeclarativeSource",
        "check": {"type": "CheckStream", "stream_names": ["orders"]},
        "spec": {"type": "Spec", "connection_specification": {  # airbyte-cdk's reader wants one
            "type": "object", "required": ["base_url"], "properties": {"base_url": {"type": "string"}}}},
        "streams": [{
            "type": "DeclarativeStream",
            "name": "orders",
            "primary_key": "id",
            "schema_loader": {"type": "InlineSchemaLoader", "schema": SCHEMA},
            "retriever": {
                "type": "CustomRetriever",
                "class_name": "components.TaggingRetriever",
                "requester": requester,
                "record_selector": {"type": "RecordSelector",
                                    "extractor": {"type": "DpathExtractor", "field_path": ["data"]}},
                # a custom retriever's paginator is built apart from its requester: Airbyte asks for url_base here
                "paginator": {"type": "DefaultPaginator", "$parameters": {"url_base": "{{ config.base_url }}"},
                              "pagination_strategy": {"type": "PageIncrement", "page_size": 2, "start_from_page": 1},
                              "page_token_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                                    "field_name": "page"},
                              "page_size_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                                   "field_name": "per_page"}},
            },
            "incremental_sync": {
                "type": "DatetimeBasedCursor",
                "cursor_field": "updated_at",
                "datetime_format": "%Y-%m-%dT%H:%M:%SZ",
                "start_datetime": "2024-01-01T00:00:00Z",
                "end_datetime": "2024-01-03T00:00:00Z",
                "step": "P1D",
                "cursor_granularity": "PT1S",
            },
        }],
    }


ORDERS = [{"id": i, "updated_at": f"2024-01-0{1 + i % 2}T0{i}:00:00Z"} for i in range(1, 8)]
NEW = {"id": 8, "updated_at": "2024-01-02T09:00:00Z"}


class Orders:
    """The fake API's orders between ``since`` and ``until``, two a page."""

    def __init__(self) -> None:
        self.items = list(ORDERS)

    def __call__(self, request: RecordedRequest) -> dict:
        since, until = request.param("since") or "", request.param("until") or "~"
        chosen = sorted((o for o in self.items if since <= o["updated_at"] <= until), key=lambda o: o["id"])
        return paged(chosen, request)


@pytest.fixture
def api() -> Any:
    with FakeApi() as server:
        orders = Orders()
        server.route("GET", "/orders", orders)
        server.orders = orders  # type: ignore[attr-defined]
        yield server


@pytest.fixture
def path(tmp_path: Path) -> str:
    folder = tmp_path / "connector"
    folder.mkdir()
    (folder / "components.py").write_text(textwrap.dedent(COMPONENTS))
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest(), sort_keys=False))
    return str(folder / "manifest.yaml")


def protocol_sync(path: str, base_url: str, state: Any = None) -> list[dict]:
    connector = open_connector(path, {"base_url": base_url}, allow_custom_code=True)
    assert connector.stream("orders").bridge == "its retriever is a CustomRetriever (`components.TaggingRetriever`)"
    out, err = io.BytesIO(), io.StringIO()
    report = read(connector, select_streams(connector.streams, None), parse_state(state) if state else {}, out, err,
                  concurrency=2)
    assert not report.failed, err.getvalue()
    return [orjson.loads(line) for line in out.getvalue().splitlines()]


def records(messages: list[dict]) -> list[dict]:
    return sorted((m["record"]["data"] for m in messages if m["type"] == "RECORD"), key=lambda r: r["id"])


def states(messages: list[dict]) -> list[dict]:
    return [m["state"] for m in messages if m["type"] == "STATE"]


def test_protocol_mode_reads_twice_and_the_second_sync_starts_from_the_airbyte_state(path: str, api: Any) -> None:
    first = protocol_sync(path, api.url)
    assert records(first) == [{**o, "via": "custom-retriever"} for o in ORDERS]
    assert states(first)[-1]["stream"]["stream_state"] == {"updated_at": "2024-01-02T07:00:00Z"}
    assert ("2024-01-02T00:00:00Z", "2") in {(r.param("since"), r.param("page")) for r in api.received()}
    assert [m["trace"]["stream_status"]["status"] for m in first if m["type"] == "TRACE"][-1] == "COMPLETE"

    api.orders.items.append(NEW)
    second = protocol_sync(path, api.url, [states(first)[-1]])
    # only from the saved instant on (Airbyte's cursor reads that instant again), the new order included
    assert records(second) == [{**o, "via": "custom-retriever"} for o in (ORDERS[6], NEW)]
    assert states(second)[-1]["stream"]["stream_state"] == {"updated_at": "2024-01-02T09:00:00Z"}


@pytest.fixture(scope="session", autouse=True)
def _executors_python() -> None:
    """Spark's Python workers need airbyte-cdk too: this interpreter's, unless the caller chose one."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.mark.spark
def test_the_spark_pipeline_reads_the_units_in_tasks_and_saves_the_airbyte_state(path: str, api: Any,
                                                                                   tmp_path: Path, spark: Any) -> None:
    import pyarrow.parquet as pq

    from framework.models.destination import DestinationSettings
    from framework.spark.pipeline import PipelineOptions, run_pipeline
    from framework.storage.state_store import STATE_KEY

    out = tmp_path / "out"
    settings = DestinationSettings.model_validate({"output": str(out), "format": {"format_type": "Parquet"}})
    connector = open_connector(path, {"base_url": api.url}, allow_custom_code=True)
    result = run_pipeline(connector, path, select_streams(connector.streams, None), settings, spark,
                          options=PipelineOptions(tasks_per_core=1))
    stream = result.streams[0]
    assert stream.error is None and stream.units == 2 and stream.units_done == 2 and stream.records == 7
    files = sorted((out / "orders").glob("*.parquet"))
    rows = sorted((row for file in files for row in pq.read_table(file).to_pylist()), key=lambda r: r["id"])
    assert [{key: row[key] for key in ("id", "updated_at", "via")} for row in rows] == [
        {**o, "via": "custom-retriever"} for o in ORDERS]  # the same rows as protocol mode
    saved = orjson.loads((out / STATE_KEY).read_bytes())
    # the state saved beside the output is Airbyte's, as in protocol mode
    assert saved["streams"]["orders"]["state"] == {"updated_at": "2024-01-02T07:00:00Z"}

    api.orders.items.append(NEW)  # a second run starts from it
    again = run_pipeline(open_connector(path, {"base_url": api.url}, allow_custom_code=True), path,
                         select_streams(connector.streams, None), settings, spark,
                         options=PipelineOptions(tasks_per_core=1))
    assert again.streams[0].error is None and again.streams[0].records == 2
    saved = orjson.loads((out / STATE_KEY).read_bytes())
    assert saved["streams"]["orders"]["state"] == {"updated_at": "2024-01-02T09:00:00Z"}


def test_parity_with_airbyte_cdk_two_syncs(path: str, api: Any) -> None:
    """Our ``run-manifest --protocol`` and airbyte-cdk's ``source-declarative-manifest`` on the same manifest
    and components.py: the same records and states, twice (needs AIRBYTE_CDK_PYTHON, as the parity tests)."""
    from parity.test_airbyte_parity import _cdk_available, catalog_for
    from parity.test_custom_components_parity import run_cdk, run_ours

    if not _cdk_available():
        pytest.skip("parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk "
                    "(make test-airbyte)")
    folder = Path(path).parent
    config, catalog = {"base_url": api.url}, catalog_for({"orders": "incremental"})
    ours, cdk = run_ours(folder, config, catalog), run_cdk(folder, config, catalog)
    ours.check("run-manifest")
    cdk.check("source-declarative-manifest")
    assert records_of(ours) == records_of(cdk) == [{**o, "via": "custom-retriever"} for o in ORDERS]
    assert ours.stream_state("orders") == cdk.stream_state("orders") == {"updated_at": "2024-01-02T07:00:00Z"}

    api.orders.items.append(NEW)
    ours_again = run_ours(folder, config, catalog, ours.state_input())
    cdk_again = run_cdk(folder, config, catalog, cdk.state_input())
    ours_again.check("run-manifest")
    cdk_again.check("source-declarative-manifest")
    assert records_of(ours_again) == records_of(cdk_again) == [{**o, "via": "custom-retriever"}
                                                               for o in (ORDERS[6], NEW)]
    assert ours_again.stream_state("orders") == cdk_again.stream_state("orders") == {
        "updated_at": "2024-01-02T09:00:00Z"}


def records_of(output: Any) -> list[dict]:
    return sorted(output.records.get("orders", []), key=lambda r: r["id"])


@pytest.mark.spark
def test_the_dataframe_reader_reads_the_units_in_its_input_partitions(path: str, api: Any, spark: Any) -> None:
    from framework.spark.datasource import register

    register(spark)
    frame = (spark.read.format("manifest").option("manifest", path).option("stream", "orders")
             .option("config_json", orjson.dumps({"base_url": api.url}).decode())
             .option("allow_custom_code", "true").option("partitions", "2").load())
    rows = sorted((row.asDict() for row in frame.collect()), key=lambda r: r["id"])
    assert [{key: row[key] for key in ("id", "updated_at", "via")} for row in rows] == [
        {**o, "via": "custom-retriever"} for o in ORDERS]  # the same rows as protocol mode
