"""``run-manifest`` with config migrations, ConditionalStreams and a StateDelegatingStream, against the fake API.

Protocol modes announce a migrated config with a CONTROL message before anything
else and rewrite the config file (with a backup); Spark mode rewrites it and says
so on stderr. A config the manifest's validations reject exits 2 before anything is
read (and before Spark starts). A StateDelegatingStream reads its full-refresh
definition first and its incremental one from the state kept beside the output.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import orjson
import pytest
from fakes.api_server import dated

from framework.cli.run import main

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [customers]}
definitions:
  requester: {type: HttpRequester, url_base: "{{ config['base_url'] }}", http_method: GET}
  schema:
    type: InlineSchemaLoader
    schema: {type: object, properties: {id: {type: integer}, updated_at: {type: string}, region: {type: string}}}
  cursor:
    type: DatetimeBasedCursor
    cursor_field: updated_at
    datetime_format: "%Y-%m-%dT%H:%M:%SZ"
    start_datetime: {type: MinMaxDatetime, datetime: "2024-01-01T00:00:00Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
    end_datetime: {type: MinMaxDatetime, datetime: "2024-01-31T00:00:00Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
    step: P100D
    cursor_granularity: PT1S
    start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
  selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
  add_region:
    - type: AddFields
      fields: [{path: [region], value: "{{ config['region'] }}"}]
streams:
  - type: StateDelegatingStream
    name: customers
    full_refresh_stream:
      type: DeclarativeStream
      name: customers
      primary_key: id
      schema_loader: {$ref: "#/definitions/schema"}
      transformations: {$ref: "#/definitions/add_region"}
      retriever:
        type: SimpleRetriever
        requester: {$ref: "#/definitions/requester", path: /customers}
        record_selector: {$ref: "#/definitions/selector"}
    incremental_stream:
      type: DeclarativeStream
      name: customers
      primary_key: id
      schema_loader: {$ref: "#/definitions/schema"}
      transformations: {$ref: "#/definitions/add_region"}
      incremental_sync: {$ref: "#/definitions/cursor"}
      retriever:
        type: SimpleRetriever
        requester: {$ref: "#/definitions/requester", path: /events}
        record_selector: {$ref: "#/definitions/selector"}
  - type: ConditionalStreams
    condition: "{{ config.get('beta') }}"
    streams:
      - type: DeclarativeStream
        name: beta
        primary_key: id
        schema_loader: {$ref: "#/definitions/schema"}
        retriever:
          type: SimpleRetriever
          requester: {$ref: "#/definitions/requester", path: /beta}
          record_selector: {$ref: "#/definitions/selector"}
spec:
  type: Spec
  connection_specification:
    type: object
    required: [base_url, region]
    properties:
      base_url: {type: string}
      region: {type: string, enum: [eu, us]}
      beta: {type: boolean}
      api_key: {type: string, airbyte_secret: true}
  config_normalization_rules:
    type: ConfigNormalizationRules
    config_migrations:
      - type: ConfigMigration
        transformations:
          - {type: ConfigRemapField, field_path: [region], map: {europe: eu, america: us}}
          - {type: ConfigRemoveFields, field_pointers: [[old_token]]}
    validations:
      - type: DpathValidator
        field_path: [api_key]
        validation_strategy: {type: ValidateAdheresToSchema, base_schema: {type: object, required: [key]}}
"""

CUSTOMERS = [{"id": 1, "updated_at": "2024-01-02T00:00:00Z"}, {"id": 2, "updated_at": "2024-01-05T00:00:00Z"}]
EVENTS = [{"id": 2, "updated_at": "2024-01-04T00:00:00Z"}, {"id": 3, "updated_at": "2024-01-09T00:00:00Z"}]


@pytest.fixture
def api(fake_api):
    fake_api.route("GET", "/customers", lambda r: {"data": CUSTOMERS})
    fake_api.route("GET", "/events", lambda r: {"data": dated(EVENTS, r, "updated_at", "since")})
    fake_api.route("GET", "/beta", {"data": [{"id": 9}]})
    return fake_api


@pytest.fixture
def files(tmp_path, api):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": api.url, "region": "europe", "old_token": "t0k3n", "beta": True}))
    return str(manifest), config


def run(files, *args: str) -> tuple[int, list[dict], str, bytes]:
    out = io.BytesIO()
    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        code = main([files[0], "--config", str(files[1]), *args], out=out)
    raw = out.getvalue()
    return code, [orjson.loads(line) for line in raw.splitlines()], err.getvalue(), raw


def test_protocol_mode_announces_the_migrated_config_first_and_rewrites_the_file(files, api):
    code, messages, _, _ = run(files, "--protocol")
    assert code == 0
    migrated = {"base_url": api.url, "region": "eu", "beta": True}
    assert messages[0] == {"type": "CONTROL", "control": {"type": "CONNECTOR_CONFIG",
                                                          "emitted_at": messages[0]["control"]["emitted_at"],
                                                          "connectorConfig": {"config": migrated}}}
    assert json.loads(files[1].read_text()) == migrated
    assert json.loads(Path(f"{files[1]}.bak").read_text())["region"] == "europe"
    records = [m["record"] for m in messages if m["type"] == "RECORD"]
    assert [(r["stream"], r["data"]["id"]) for r in records] == [("customers", 1), ("customers", 2), ("beta", 9)]
    assert {r["data"].get("region") for r in records if r["stream"] == "customers"} == {"eu"}

    code, messages, _, _ = run(files, "--protocol")  # migrated already: nothing to announce
    assert code == 0 and not [m for m in messages if m["type"] == "CONTROL"]
    assert not Path(f"{files[1]}.bak.1").exists()


def test_check_and_discover_announce_it_too(files, api):
    code, messages, _, _ = run(files, "--check")
    assert code == 0 and [m["type"] for m in messages][:2] == ["CONTROL", "LOG"]
    assert messages[-1]["connectionStatus"]["status"] == "SUCCEEDED"
    config = json.loads(files[1].read_text())
    files[1].write_text(json.dumps(dict(config, region="america", beta=False)))
    code, messages, _, _ = run(files, "--discover")
    assert code == 0 and messages[0]["control"]["connectorConfig"]["config"]["region"] == "us"
    [catalog] = [m["catalog"] for m in messages if m["type"] == "CATALOG"]
    [entry] = catalog["streams"]  # `beta` exists only when the config asks for it
    assert entry["name"] == "customers" and entry["supported_sync_modes"] == ["full_refresh", "incremental"]
    assert entry["default_cursor_field"] == ["updated_at"]


def test_a_config_the_validations_reject_exits_2_before_any_request(files, api):
    files[1].write_text(json.dumps({"base_url": api.url, "region": "eu", "api_key": '{"secret": "hunter2"}'}))
    code, messages, stderr, _ = run(files, "--protocol")
    assert code == 2 and messages == []
    assert "config['api_key'] fails the manifest's validation" in stderr and "manifest.yaml:" in stderr
    assert "'key' is a required property" in stderr and "hunter2" not in stderr
    assert api.received() == []


def test_the_state_delegating_stream_reads_incrementally_from_its_state(files, api, tmp_path):
    code, messages, _, _ = run(files, "--protocol", "--streams", "customers")
    assert code == 0
    # the full-refresh definition has no cursor: its sync ends with Airbyte's marker, a state all the same
    [state] = [m["state"] for m in messages if m["type"] == "STATE"]
    assert state["stream"]["stream_state"] == {"__ab_no_cursor_state_message": True}
    (tmp_path / "state.json").write_text(json.dumps([state]))
    api.requests.clear()
    code, messages, _, _ = run(files, "--protocol", "--streams", "customers", "--state", str(tmp_path / "state.json"))
    assert code == 0
    assert [m["record"]["data"]["id"] for m in messages if m["type"] == "RECORD"] == [2, 3]
    assert [(r.path, r.param("since")) for r in api.received()] == [("/events", "2024-01-01T00:00:00Z")]
    [state] = [m["state"] for m in messages if m["type"] == "STATE"]
    assert state["stream"]["stream_state"] == {"updated_at": "2024-01-09T00:00:00Z"}


@pytest.mark.spark
def test_spark_mode_rewrites_the_config_says_so_and_delegates_by_the_saved_state(spark, files, api, tmp_path,
                                                                                  capsys):
    out = tmp_path / "out"
    capsys.readouterr()
    code = main([files[0], "--config", str(files[1]), "--output", str(out), "--format", "jsonl", "--no-check"],
                out=io.BytesIO())  # counts the sync's own requests
    stderr = capsys.readouterr().err
    assert code == 0, stderr
    assert f"{files[1]} now holds the migrated config (the previous one is in {files[1]}.bak)" in stderr
    assert json.loads(files[1].read_text())["region"] == "eu"
    assert {r.path for r in api.received()} == {"/customers", "/beta"}

    api.requests.clear()
    code = main([files[0], "--config", str(files[1]), "--output", str(out), "--format", "jsonl",
                 "--log-format", "json", "--no-check"], out=io.BytesIO())
    stderr = capsys.readouterr().err
    assert code == 0, stderr
    assert "config_migrated" not in stderr  # nothing left to migrate
    assert [(r.path, r.param("since")) for r in api.received() if r.path != "/beta"] == \
        [("/events", "2024-01-01T00:00:00Z")]
    rows = [json.loads(line) for path in sorted((out / "customers").rglob("*.jsonl"))
            for line in path.read_text().splitlines()]
    assert sorted(row["_airbyte_data"]["id"] for row in rows) == [1, 2, 2, 3]
    assert {row["_airbyte_data"]["region"] for row in rows} == {"eu"}
