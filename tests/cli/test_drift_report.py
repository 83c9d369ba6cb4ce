"""What the summary says of schema drift: one line per stream that had undeclared fields, by policy."""

from __future__ import annotations

import io
import json

from framework.cli.drift_report import MOST_NAMED, drift_fields, drift_line
from framework.cli.progress import JsonReporter, QuietReporter
from framework.spark.pipeline import PipelineResult, StreamResult


def drifted(policy: str, **more) -> StreamResult:
    return StreamResult("events", records=241, drift_policy=policy, drifted=241,
                        undeclared={"priority": 241, "address.zip": 3}, **more)


def test_no_line_without_undeclared_fields():
    assert drift_line(StreamResult("events", records=5)) is None
    assert drift_fields(StreamResult("events")) == {"policy": "drop", "records": 0, "fields": {}, "evolved": {}}


def test_drop_names_the_fields_by_count_and_the_flag_that_keeps_them():
    assert drift_line(drifted("drop")) == (
        "events: 241 records had fields the schema does not declare: priority (241), address.zip (3) - dropped; "
        "--schema-drift keep|evolve (or events=keep|evolve) keeps them")


def test_keep_and_evolve_say_where_the_fields_went():
    assert drift_line(drifted("keep")).endswith("- kept as JSON text in _airbyte_additional_properties")
    line = drift_line(drifted("evolve", evolved=(("priority", "integer"),)))
    assert line.endswith("- added as columns: priority (integer); dropped (nested or reserved names): "
                         "address.zip (3); --schema-drift keep keeps them")
    assert drift_fields(drifted("evolve", evolved=(("priority", "integer"),))) == {
        "policy": "evolve", "records": 241, "fields": {"priority": 241, "address.zip": 3},
        "evolved": {"priority": "integer"}}


def test_a_long_list_of_fields_is_cut_and_counted():
    many = StreamResult("events", drifted=1, undeclared={f"f{i:02d}": 1 for i in range(MOST_NAMED + 3)})
    assert "f09 (1) and 3 more - dropped" in drift_line(many)


def test_quiet_warns_of_dropped_fields_only_and_json_carries_them_in_the_summary():
    err = io.StringIO()
    QuietReporter(err).summary(PipelineResult(1, [drifted("drop"), drifted("keep")]), "out", 1.0)
    assert err.getvalue() == f"run-manifest: warning: {drift_line(drifted('drop'))}\n"
    err = io.StringIO()
    JsonReporter(err).summary(PipelineResult(1, [drifted("keep")]), "out", 1.0)
    assert json.loads(err.getvalue())["streams"][0]["schema_drift"] == drift_fields(drifted("keep"))
