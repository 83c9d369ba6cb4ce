"""A legacy per-partition state migrated on read: from ``--state`` in protocol mode, and from the state kept
beside the output in Spark mode. The router here yields partitions of the partition field alone (a custom
router), so the migrated cursors match their partitions and each partition resumes from its own."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import orjson
import pytest
from fakes.api_server import RecordedRequest, dated

from framework.cli.run import main

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [orders]}
streams:
  - type: DeclarativeStream
    name: orders
    primary_key: id
    schema_loader: {type: InlineSchemaLoader, schema: {type: object, properties: {id: {type: integer}}}}
    state_migrations:
      - type: LegacyToPerPartitionStateMigration
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime: {type: MinMaxDatetime, datetime: "2024-01-01T00:00:00Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
      end_datetime: {type: MinMaxDatetime, datetime: "2024-01-31T00:00:00Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
      step: P100D
      cursor_granularity: PT1S
      start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: "{{ config['base_url'] }}"
        path: "/accounts/{{ stream_partition.account_id }}/orders"
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [orders]}}
      partition_router:
        type: CustomPartitionRouter
        class_name: components.Accounts
        parent_stream_configs: [{partition_field: account_id}]
"""

COMPONENTS = '''
from dataclasses import dataclass


@dataclass
class Accounts:
    config: dict

    def stream_slices(self):
        for account in self.config["accounts"]:
            yield {"account_id": account}
'''

ORDERS = {"a1": [{"id": 11, "updated_at": "2024-01-02T00:00:00Z"}, {"id": 12, "updated_at": "2024-01-12T00:00:00Z"}],
          "a2": [{"id": 21, "updated_at": "2024-01-05T00:00:00Z"}]}
LEGACY = {"a1": {"updated_at": "2024-01-10T00:00:00Z"}}


@pytest.fixture
def files(tmp_path, fake_api):
    def orders(request: RecordedRequest) -> dict:
        return {"orders": dated(ORDERS[request.path.split("/")[2]], request, "updated_at", "since")}

    fake_api.route("GET", "/accounts/{id}/orders", orders)
    (tmp_path / "manifest.yaml").write_text(MANIFEST)
    (tmp_path / "components.py").write_text(COMPONENTS)
    (tmp_path / "config.json").write_text(json.dumps({"base_url": fake_api.url, "accounts": ["a1", "a2"]}))
    saved = sys.modules.pop("components", None)
    yield tmp_path, fake_api
    sys.modules.pop("components", None)
    if saved is not None:
        sys.modules["components"] = saved


def _since(api) -> dict[str, str]:
    return {r.path.split("/")[2]: r.param("since") for r in api.received()}


def test_protocol_mode_migrates_a_legacy_state_from_the_state_file(files):
    folder, api = files
    (folder / "state.json").write_text(json.dumps({"orders": LEGACY}))
    out = io.BytesIO()
    code = main([str(folder / "manifest.yaml"), "--config", str(folder / "config.json"), "--protocol",
                 "--allow-custom-code", "--state", str(folder / "state.json")], out=out)
    assert code == 0
    messages = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert sorted(m["record"]["data"]["id"] for m in messages if m["type"] == "RECORD") == [12, 21]
    assert _since(api) == {"a1": "2024-01-10T00:00:00Z", "a2": "2024-01-01T00:00:00Z"}
    [*_, last] = [m["state"]["stream"]["stream_state"] for m in messages if m["type"] == "STATE"]
    assert {json.dumps(s["partition"]): s["cursor"]["updated_at"] for s in last["states"]} == {
        '{"account_id": "a1"}': "2024-01-12T00:00:00Z", '{"account_id": "a2"}': "2024-01-05T00:00:00Z"}


@pytest.mark.spark
def test_spark_mode_migrates_the_legacy_state_kept_beside_the_output(spark, files, capsys):
    folder, api = files
    out = folder / "out"
    (out / "_airbyte_state").mkdir(parents=True)
    (out / "_airbyte_state" / "state.json").write_text(json.dumps(
        {"sync_id": 3, "streams": {"orders": {"state": LEGACY, "generation_id": 0}}}))
    code = main([str(folder / "manifest.yaml"), "--config", str(folder / "config.json"), "--allow-custom-code",
                 "--output", str(out), "--format", "jsonl", "--quiet"], out=io.BytesIO())
    assert code == 0, capsys.readouterr().err
    assert _since(api) == {"a1": "2024-01-10T00:00:00Z", "a2": "2024-01-01T00:00:00Z"}
    saved = json.loads((out / "_airbyte_state" / "state.json").read_text())
    assert saved["sync_id"] == 4 and "states" in saved["streams"]["orders"]["state"]
    rows = [json.loads(line)["_airbyte_data"]["id"] for path in Path(out, "orders").rglob("*.jsonl")
            for line in path.read_text().splitlines()]
    assert sorted(rows) == [12, 21]
