"""``run-manifest`` with ``dynamic_streams`` against the fake API: streams made from an endpoint's answer
(HttpComponentsResolver) and from config entries (ConfigComponentsResolver).

Discover lists the made streams; a protocol sync reads them and keeps a state per made stream; a second
sync resumes each from its own state. In Spark mode the endpoint listing the streams is read once, on the
driver: the executors get the made streams with the task.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle

import orjson
import pytest
from fakes.api_server import ApiError, dated

from framework.cli.run import main

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check:
  type: CheckStream
  stream_names: [tables]
  dynamic_streams_check_configs: [{type: DynamicStreamCheckConfig, dynamic_stream_name: tables_from_api, stream_count: 1}]
definitions:
  requester: {type: HttpRequester, url_base: "{{ config['base_url'] }}", http_method: GET}
  selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
  table_stream:
    type: DeclarativeStream
    name: made_by_a_mapping  # the HTTP resolver writes only where the template has a place (as airbyte-cdk)
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema: {type: object, properties: {id: {type: integer}, updated_at: {type: string}}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /placeholder}
      record_selector: {$ref: "#/definitions/selector"}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%d"
      start_datetime: "2024-01-01"
      end_datetime: "2024-01-31"
      step: P100D
      cursor_granularity: P1D
      start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
streams:
  - type: DeclarativeStream
    name: tables
    primary_key: id
    schema_loader: {type: InlineSchemaLoader, schema: {type: object, properties: {id: {type: string}}}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /tables}
      record_selector: {$ref: "#/definitions/selector"}
dynamic_streams:
  - type: DynamicDeclarativeStream
    name: tables_from_api
    stream_template: {$ref: "#/definitions/table_stream"}
    components_resolver:
      type: HttpComponentsResolver
      retriever:
        type: SimpleRetriever
        requester: {$ref: "#/definitions/requester", path: /tables}
        record_selector: {$ref: "#/definitions/selector"}
      components_mapping:
        - {type: ComponentMappingDefinition, field_path: [name], value: "table_{{ components_values['id'] }}"}
        - type: ComponentMappingDefinition
          field_path: [retriever, requester, path]
          value: "/tables/{{ components_values['id'] }}/rows"
  - type: DynamicDeclarativeStream
    name: reports_from_config
    stream_template: {$ref: "#/definitions/table_stream"}
    components_resolver:
      type: ConfigComponentsResolver
      stream_config: {type: StreamConfig, configs_pointer: [reports]}
      components_mapping:
        - {type: ComponentMappingDefinition, field_path: [name], value: "{{ components_values['name'] }}"}
        - type: ComponentMappingDefinition
          field_path: [retriever, requester, path]
          value: "/reports/{{ components_values['name'] }}"
"""

ROWS = {
    "alpha": [{"id": 1, "updated_at": "2024-01-02"}, {"id": 2, "updated_at": "2024-01-05"}],
    "beta": [{"id": 3, "updated_at": "2024-01-03"}],
    "weekly": [{"id": 7, "updated_at": "2024-01-04"}],
}


@pytest.fixture
def api(fake_api):
    fake_api.route("GET", "/tables", lambda r: {"data": [{"id": "alpha"}, {"id": "beta"}]})
    fake_api.route("GET", "/tables/{name}/rows",
                   lambda r: {"data": dated(ROWS[r.path.split("/")[2]], r, "updated_at", "since")})
    fake_api.route("GET", "/reports/{name}", lambda r: {"data": dated(ROWS[r.path.split("/")[2]], r, "updated_at",
                                                                      "since")})
    return fake_api


@pytest.fixture
def files(tmp_path, api):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": api.url, "reports": [{"name": "weekly"}]}))
    return str(manifest), config


def run(files, *args: str) -> tuple[int, list[dict], str]:
    out = io.BytesIO()
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([files[0], "--config", str(files[1]), *args], out=out)
    return code, [orjson.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_discover_lists_the_streams_the_endpoint_and_the_config_make(files, api):
    code, messages, stderr = run(files, "--discover")
    assert code == 0, stderr
    [catalog] = [m["catalog"] for m in messages if m["type"] == "CATALOG"]
    assert [s["name"] for s in catalog["streams"]] == ["tables", "table_alpha", "table_beta", "weekly"]
    made = catalog["streams"][1]
    assert made["supported_sync_modes"] == ["full_refresh", "incremental"]
    assert made["default_cursor_field"] == ["updated_at"]
    assert [r.path for r in api.received()] == ["/tables"]  # the streams' own endpoints are not read


def test_a_sync_reads_the_made_streams_and_keeps_a_state_for_each(files, api, tmp_path):
    code, messages, stderr = run(files, "--protocol", "--streams", "table_alpha,table_beta,weekly")
    assert code == 0, stderr
    records = sorted((m["record"]["stream"], m["record"]["data"]["id"]) for m in messages if m["type"] == "RECORD")
    assert records == [("table_alpha", 1), ("table_alpha", 2), ("table_beta", 3), ("weekly", 7)]
    states = {m["state"]["stream"]["stream_descriptor"]["name"]: m["state"]["stream"]["stream_state"]
              for m in messages if m["type"] == "STATE"}
    assert states == {"table_alpha": {"updated_at": "2024-01-05"}, "table_beta": {"updated_at": "2024-01-03"},
                      "weekly": {"updated_at": "2024-01-04"}}
    (tmp_path / "state.json").write_text(json.dumps([m["state"] for m in messages if m["type"] == "STATE"]))
    api.requests.clear()
    code, messages, stderr = run(files, "--protocol", "--streams", "table_alpha,table_beta,weekly",
                                 "--state", str(tmp_path / "state.json"))
    assert code == 0, stderr
    since = {r.path: r.param("since") for r in api.received() if r.path != "/tables"}
    assert since == {"/tables/alpha/rows": "2024-01-05", "/tables/beta/rows": "2024-01-03",
                     "/reports/weekly": "2024-01-04"}


def test_a_worker_gets_the_made_streams_with_its_source_and_reads_no_listing(files, api):
    from framework.engine.connector import open_connector
    from framework.engine.worker import ConnectorSource, worker_connector

    config = json.loads(files[1].read_text())
    driver = open_connector(files[0], config)
    source = ConnectorSource.of_connector(driver, files[0], MANIFEST)
    api.requests.clear()
    worker = worker_connector(pickle.loads(pickle.dumps(source)))  # as Spark ships it
    assert list(worker.streams) == ["tables", "table_alpha", "table_beta", "weekly"]
    assert worker.stream("table_beta").retriever.requester.path.value == "/tables/beta/rows"
    assert api.received() == []


def test_a_config_making_two_streams_of_one_name_exits_2(files, api):
    files[1].write_text(json.dumps({"base_url": api.url, "reports": [{"name": "weekly"}, {"name": "weekly"}]}))
    code, messages, stderr = run(files, "--protocol")
    assert code == 2
    assert "two streams made by dynamic_streams are named `weekly`" in stderr and "manifest.yaml:" in stderr


def test_check_reads_the_first_made_stream_a_check_config_names(files, api):
    code, messages, stderr = run(files, "--check")
    assert code == 0, stderr
    assert messages[-1]["connectionStatus"]["status"] == "SUCCEEDED"
    assert {r.path for r in api.received()} == {"/tables", "/tables/alpha/rows"}  # not beta: stream_count 1


def test_check_dynamic_stream_reads_the_first_streams_in_discovers_order(files, api):
    text = MANIFEST.replace("  type: CheckStream\n  stream_names: [tables]\n", "  type: CheckDynamicStream\n"
                            "  stream_count: 2\n").replace("  dynamic_streams_check_configs: [{type: "
                                                            "DynamicStreamCheckConfig, dynamic_stream_name: "
                                                            "tables_from_api, stream_count: 1}]\n", "")
    assert "CheckDynamicStream" in text and "dynamic_streams_check_configs" not in text
    with open(files[0], "w") as handle:
        handle.write(text)
    code, messages, stderr = run(files, "--check")
    assert code == 0 and messages[-1]["connectionStatus"]["status"] == "SUCCEEDED", stderr
    assert {r.path for r in api.received()} == {"/tables", "/tables/alpha/rows"}  # `tables` is the first stream
    api.route("GET", "/tables/alpha/rows", lambda r: (_ for _ in ()).throw(ApiError(403, "no access")))
    code, messages, stderr = run(files, "--check")
    assert messages[-1]["connectionStatus"]["status"] == "FAILED"
    assert "table_alpha" in messages[-1]["connectionStatus"]["message"]


@pytest.mark.spark
def test_spark_mode_reads_the_listing_endpoint_on_the_driver_only(spark, files, api, tmp_path, capsys):
    out = tmp_path / "out"
    code = main([files[0], "--config", str(files[1]), "--output", str(out), "--format", "jsonl",
                 "--streams", "table_alpha,weekly", "--no-check"], out=io.BytesIO())  # the sync's own requests
    assert code == 0, capsys.readouterr().err
    assert len(api.received("/tables")) == 1  # the executors got the made streams with their tasks
    rows = {name: sorted(json.loads(line)["_airbyte_data"]["id"] for path in (out / name).rglob("*.jsonl")
                         for line in path.read_text().splitlines())
            for name in ("table_alpha", "weekly")}
    assert rows == {"table_alpha": [1, 2], "weekly": [7]}
