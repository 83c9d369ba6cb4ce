"""A StateDelegatingStream one of whose definitions airbyte-cdk must read: the whole stream goes through the bridge,
and airbyte-cdk picks the definition from the state (google-ads' criterion streams are written so)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
from fakes.api_server import FakeApi, RecordedRequest, dated

from framework.engine.connector import open_connector
from framework.engine.plan import open_sync

pytestmark = pytest.mark.skipif(importlib.util.find_spec("airbyte_cdk") is None,
                                reason="needs airbyte-cdk in this python (make test-airbyte)")

COMPONENTS = """
from dataclasses import dataclass
from airbyte_cdk.sources.declarative.requesters import HttpRequester


@dataclass
class Signed(HttpRequester):
    def get_request_headers(self, *, stream_state=None, stream_slice=None, next_page_token=None):
        return {"X-Signed": "yes"}
"""

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [customers]}
definitions:
  schema: {type: InlineSchemaLoader, schema: {type: object, properties: {}}}
  selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
  cursor:
    type: DatetimeBasedCursor
    cursor_field: updated_at
    datetime_format: "%Y-%m-%dT%H:%M:%SZ"
    start_datetime: {type: MinMaxDatetime, datetime: "2024-01-01T00:00:00Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
    end_datetime: {type: MinMaxDatetime, datetime: "2024-01-31T00:00:00Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
    step: P100D
    cursor_granularity: PT1S
    start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
streams:
  - type: StateDelegatingStream
    name: customers
    full_refresh_stream:
      type: DeclarativeStream
      name: customers
      primary_key: id
      schema_loader: {$ref: "#/definitions/schema"}
      incremental_sync: {$ref: "#/definitions/cursor"}
      retriever:
        type: SimpleRetriever
        requester: {type: CustomRequester, class_name: components.Signed, name: customers,
                    url_base: "{{ config['base_url'] }}", path: /customers, http_method: GET}
        record_selector: {$ref: "#/definitions/selector"}
    incremental_stream:
      type: DeclarativeStream
      name: customers
      primary_key: id
      schema_loader: {$ref: "#/definitions/schema"}
      incremental_sync: {$ref: "#/definitions/cursor"}
      retriever:
        type: SimpleRetriever
        requester: {type: HttpRequester, url_base: "{{ config['base_url'] }}", path: /events, http_method: GET}
        record_selector: {$ref: "#/definitions/selector"}
"""


@pytest.fixture
def folder(tmp_path: Path):
    (tmp_path / "manifest.yaml").write_text(MANIFEST)
    (tmp_path / "components.py").write_text(textwrap.dedent(COMPONENTS))
    saved = {name: sys.modules.pop(name) for name in list(sys.modules)
             if name == "components" or name.startswith("source_declarative_manifest")}
    yield tmp_path
    for name in [n for n in sys.modules if n == "components" or n.startswith("source_declarative_manifest")]:
        sys.modules.pop(name)
    sys.modules.update(saved)


def test_airbyte_picks_the_definition_of_a_bridged_state_delegating_stream(folder: Path) -> None:
    with FakeApi() as api:
        def customers(request: RecordedRequest) -> dict:
            assert request.headers.get("X-Signed") == "yes"
            return {"data": [{"id": 1, "updated_at": "2024-01-02T00:00:00Z"}]}

        api.route("GET", "/customers", customers)
        api.route("GET", "/events", lambda r: {"data": dated([{"id": 2, "updated_at": "2024-01-09T00:00:00Z"}], r,
                                                             "updated_at", "since")})
        connector = open_connector(str(folder / "manifest.yaml"), {"base_url": api.url}, allow_custom_code=True)
        stream = connector.stream("customers")
        assert stream.bridge is not None and "CustomRequester" in stream.bridge
        assert connector.delegations == {}

        def read(state):
            sync = open_sync(connector, stream, state)
            units = sync.plan()
            ids = [r["id"] for unit in units for page in sync.read(unit) for r in page]
            for unit in units:
                sync.done(unit)
            return ids, sync.state(final=True)

        first, state = read(None)
        assert first == [1] and state == {"updated_at": "2024-01-02T00:00:00Z"}
        second, _ = read(state)
        assert second == [2]
        assert [r.path for r in api.received()] == ["/customers", "/events"]
