"""StateDelegatingStream's choice of definition, and ConditionalStreams' streams for a config."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from framework.components.context import BuildContext
from framework.components.delegating import Delegation, listed_streams
from framework.components.stream import Stream
from framework.errors import ConfigError
from framework.manifest import check_manifest_text
from framework.temporal.clock import FixedClock

NOW = FixedClock(datetime(2024, 3, 1, tzinfo=timezone.utc))

BASE = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [events]}
definitions:
  retriever:
    type: SimpleRetriever
    requester: {type: HttpRequester, url_base: "https://x.io", path: /events}
    record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
  cursor:
    type: DatetimeBasedCursor
    cursor_field: updated_at
    datetime_format: "%Y-%m-%dT%H:%M:%SZ"
    start_datetime: {type: MinMaxDatetime, datetime: "2024-01-01T00:00:00Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
streams:
  - type: StateDelegatingStream
    name: events
    api_retention_period: P30D
    full_refresh_stream:
      type: DeclarativeStream
      name: events
      schema_loader: {type: InlineSchemaLoader, schema: {}}
      retriever: {$ref: "#/definitions/retriever"}
    incremental_stream:
      type: DeclarativeStream
      name: events
      schema_loader: {type: InlineSchemaLoader, schema: {}}
      incremental_sync: {$ref: "#/definitions/cursor"}
      retriever: {$ref: "#/definitions/retriever", requester: {type: HttpRequester, url_base: "https://x.io", path: /changes}}
  - type: ConditionalStreams
    condition: "{{ config.get('beta') }}"
    streams:
      - type: DeclarativeStream
        name: beta
        schema_loader: {type: InlineSchemaLoader, schema: {}}
        retriever: {$ref: "#/definitions/retriever"}
"""


def delegation(text: str = BASE) -> Delegation:
    checked = check_manifest_text(text)
    assert checked.ok, [d.format() for d in checked.diagnostics]
    built = BuildContext(config={}, clock=NOW).build(checked.source.streams[0], ("streams", 0))
    assert isinstance(built, Delegation)
    return built


def test_no_state_reads_the_full_refresh_definition():
    found = delegation()
    stream, start, _ = found.choose(None, NOW)
    assert stream is found.full_refresh and start is None
    assert found.choose({}, NOW)[0] is found.full_refresh


def test_a_recent_state_reads_the_incremental_definition_from_it():
    found = delegation()
    state = {"updated_at": "2024-02-20T00:00:00Z"}
    stream, start, _ = found.choose(state, NOW)
    assert stream is found.incremental and start == state
    per_partition = {"states": [], "state": {"updated_at": "2024-02-20T00:00:00Z"}}
    assert found.choose(per_partition, NOW)[0] is found.incremental


def test_a_state_older_than_the_retention_period_reads_everything_again():
    found = delegation()
    stream, start, reason = found.choose({"updated_at": "2024-01-15T00:00:00Z"}, NOW)
    assert stream is found.full_refresh and start is None and "P30D" in reason
    assert found.choose({"something": "else"}, NOW)[0] is found.full_refresh  # unreadable: safe side
    # the state a full refresh without a cursor ends with counts as now
    assert found.choose({"__ab_no_cursor_state_message": True}, NOW)[0] is found.incremental


def test_without_a_retention_period_any_state_reads_incrementally():
    found = delegation(BASE.replace("    api_retention_period: P30D\n", ""))
    assert found.choose({"updated_at": "2000-01-01T00:00:00Z"}, NOW)[0] is found.incremental
    assert found.for_start({"x": 1}) is found.incremental and found.for_start(None) is found.full_refresh


def test_definitions_named_otherwise_are_refused():
    text = BASE.replace("    incremental_stream:\n      type: DeclarativeStream\n      name: events",
                        "    incremental_stream:\n      type: DeclarativeStream\n      name: other")
    checked = check_manifest_text(text)
    [problem] = checked.errors
    assert problem.code == "delegate-name" and "`other`" in problem.message


@pytest.mark.parametrize(("config", "names"), [({"beta": True}, ["events", "beta"]), ({}, ["events"]),
                                               ({"beta": False}, ["events"])])
def test_conditional_streams_exist_when_their_condition_holds(config, names):
    source = check_manifest_text(BASE).source
    assert [model.name for _path, model in listed_streams(source, BuildContext(config=config))] == names


def test_a_condition_that_fails_to_render_names_its_place():
    source = check_manifest_text(BASE.replace("config.get('beta')", "config['beta'] + 1")).source
    with pytest.raises(ConfigError, match="ConditionalStreams"):
        list(listed_streams(source, BuildContext(config={})))


def test_the_incremental_definition_is_the_listed_stream():
    from framework.engine.connector import open_connector_text

    connector = open_connector_text(BASE, {"beta": True})
    assert set(connector.streams) == {"events", "beta"}
    assert isinstance(connector.streams["events"], Stream)
    assert connector.streams["events"] is connector.delegations["events"].incremental
