"""IncrementingCountCursor at run time: the start value, the one slice, values, state, the request."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.context import BuildContext
from framework.components.http.request import RequestParts
from framework.components.incremental.count_cursor import CountCursor, as_count
from framework.errors import ConfigError, StateError
from framework.interpolation import TemplateEngine
from framework.models import IncrementingCountCursor
from framework.temporal.clock import SystemClock


def build(spec: dict, config: dict | None = None) -> CountCursor:
    clock = SystemClock()
    ctx = BuildContext(config=config or {}, clock=clock, engine=TemplateEngine(clock), transport=object(),
                       locate=lambda path: "manifest.yaml:9:5")
    model = IncrementingCountCursor.model_validate({"type": "IncrementingCountCursor", "cursor_field": "id", **spec})
    return ctx.build(model, ("streams", 0, "incremental_sync"))


def test_start_value_is_an_integer_a_numeric_text_or_a_template():
    assert build({}).start_value == 0
    assert build({"start_value": 7}).start_value == 7
    assert build({"start_value": "7"}).start_value == 7
    assert build({"start_value": "{{ config['first'] }}"}, {"first": 42}).start_value == 42


def test_a_start_value_that_renders_no_integer_names_the_place():
    with pytest.raises(ConfigError, match=r"not an integer.*manifest.yaml:9:5"):
        build({"start_value": "{{ config['first'] }}"}, {"first": "soon"})


def test_a_literal_start_value_that_is_no_integer_is_a_model_error():
    with pytest.raises(ValueError, match="start_value"):
        IncrementingCountCursor.model_validate({"type": "IncrementingCountCursor", "cursor_field": "id",
                                                "start_value": "ten"})


def test_one_slice_from_the_state_when_it_is_at_or_above_the_start():
    cursor = build({"start_value": 10})
    assert cursor.windows(None) == [{"start": 10}]
    assert cursor.windows(25) == [{"start": 25}]
    assert cursor.windows(3) == [{"start": 10}]  # a state below the start is not a place to start from
    assert cursor.window_bounds({"start": 25}) == (25, None)
    assert cursor.keep_range(25) == (None, None)


def test_state_is_a_number_and_reads_back_text_too():
    cursor = build({})
    assert cursor.state_of(12) == {"id": 12}
    assert cursor.state_value({"id": 12}) == 12
    assert cursor.state_value({"id": "12"}) == 12
    assert cursor.state_value({}) is None
    assert cursor.state_value({"id": 0}) is None  # Airbyte reads a zero state as none
    with pytest.raises(StateError, match="not an integer"):
        cursor.state_value({"id": "twelve"})


def test_record_values_that_are_not_integers_are_ignored():
    cursor = build({})
    assert cursor.record_value({"id": 5}) == 5
    assert cursor.record_value({"id": "5"}) == 5
    assert cursor.record_value({"id": 5.0}) == 5
    for bad in ({"id": 5.5}, {"id": "x"}, {"id": True}, {}, {"id": None}):
        assert cursor.record_value(bad) is None


def test_the_start_goes_where_start_value_option_says():
    cursor = build({"start_value_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                           "field_name": "since_id"}})
    parts = RequestParts()
    cursor.apply(parts, {"start": 31})
    assert parts.params == {"since_id": 31}
    plain = RequestParts()
    build({}).apply(plain, {"start": 31})
    assert plain.params == {}


@given(st.integers(min_value=-(10**18), max_value=10**18))
def test_integers_and_their_text_read_the_same(value):
    assert as_count(value) == as_count(str(value)) == as_count(f" {value} ") == value



def test_validate_warns_that_airbyte_refuses_a_count_cursor_under_a_router():
    from framework.manifest import check_manifest_text

    text = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [a]}
streams:
  - type: DeclarativeStream
    name: a
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    incremental_sync: {type: IncrementingCountCursor, cursor_field: id}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "http://x", path: /a}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
      partition_router: {type: ListPartitionRouter, values: [a], cursor_field: k}
"""
    checked = check_manifest_text(text, "m.yaml")
    assert checked.ok
    [found] = [d for d in checked.diagnostics if d.code == "not-portable"]
    assert found.severity == "warning" and (found.line, found.column) == (9, 30)
    assert "airbyte-cdk refuses" in found.message
    alone = check_manifest_text(text.replace("      partition_router: {type: ListPartitionRouter, values: [a], "
                                             "cursor_field: k}\n", ""), "m.yaml")
    assert not [d for d in alone.diagnostics if d.code == "not-portable"]
