"""LegacyToPerPartitionStateMigration: a per-partition state of the older shape made current."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from framework.components.context import BuildContext
from framework.components.state_migrations import LegacyToPerPartition, build_state_migrations
from framework.manifest import check_manifest_text

MIGRATION = LegacyToPerPartition("account_id", "updated_at", parents=1)


def test_a_legacy_state_becomes_a_list_of_partitions():
    legacy = {"a1": {"updated_at": "2024-01-02"}, "a2": {"updated_at": "2024-01-05"}}
    assert MIGRATION.apply(legacy) == {"states": [
        {"partition": {"account_id": "a1"}, "cursor": {"updated_at": "2024-01-02"}},
        {"partition": {"account_id": "a2"}, "cursor": {"updated_at": "2024-01-05"}}]}


def test_states_of_another_shape_are_left_alone():
    current = {"states": [{"partition": {"account_id": "a1"}, "cursor": {"updated_at": "x"}}]}
    for state in (current, {}, {"updated_at": "2024-01-02"}, {"a1": {"updated_at": "x", "other": 1}},
                  {"a1": {"created_at": "x"}}, {"a1": "x"}):
        assert MIGRATION.apply(state) is state
    two_parents = LegacyToPerPartition("account_id", "updated_at", parents=2)
    legacy = {"a1": {"updated_at": "x"}}
    assert two_parents.apply(legacy) is legacy


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), min_size=1, max_size=6))
def test_migrating_keeps_every_partition_and_is_done_once(cursors):
    legacy = {key: {"updated_at": value} for key, value in cursors.items()}
    migrated = MIGRATION.apply(legacy)
    assert {item["partition"]["account_id"]: item["cursor"]["updated_at"] for item in migrated["states"]} == cursors
    assert MIGRATION.apply(migrated) is migrated


MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [orders]}
definitions:
  accounts:
    type: DeclarativeStream
    name: accounts
    schema_loader: {type: InlineSchemaLoader, schema: {}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://x.io", path: /accounts}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
streams:
  - type: DeclarativeStream
    name: orders
    $parameters: {key: account, cursor: modified}
    schema_loader: {type: InlineSchemaLoader, schema: {}}
    state_migrations: [{type: LegacyToPerPartitionStateMigration}]
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: "{{ parameters.cursor }}_at"
      datetime_format: "%Y-%m-%d"
      start_datetime: {type: MinMaxDatetime, datetime: "2024-01-01", datetime_format: "%Y-%m-%d"}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://x.io", path: /orders}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
      partition_router:
        type: SubstreamPartitionRouter
        parent_stream_configs:
          - {type: ParentStreamConfig, stream: {$ref: "#/definitions/accounts"}, parent_key: id,
             partition_field: "{{ parameters.key }}_id"}
"""


def test_the_fields_come_from_the_stream_rendered_with_its_parameters():
    checked = check_manifest_text(MANIFEST)
    assert checked.ok, [d.format() for d in checked.diagnostics]
    stream = checked.source.streams[0]
    [migration] = build_state_migrations(stream, BuildContext(config={}), ("streams", 0))
    assert migration == LegacyToPerPartition("account_id", "modified_at", parents=1)
