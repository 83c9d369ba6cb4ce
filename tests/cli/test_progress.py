"""What a Spark-mode sync prints on stderr: the text and JSON reporters with made-up results, then once for real.

The reporter tests feed :mod:`framework.cli.progress` the events
``run_pipeline`` sends, with StreamResults filled by hand and a fake clock;
the last test runs ``run-manifest --log-format json`` on the shared Spark
session against the fake API.
"""

from __future__ import annotations

import io
import itertools
import json
import re
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.cli.progress import (
    Clocks,
    JsonReporter,
    QuietReporter,
    TextReporter,
    reporter_for,
    summary_table,
)
from framework.engine.signals import Signal
from framework.spark.pipeline import PipelineResult, StreamResult

EPOCH = 1_790_000_000.0  # 2026-09-21T14:13:20Z


@dataclass
class FakeClock:
    now: float = 100.0

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return EPOCH + self.now


def clocks(clock: FakeClock) -> Clocks:
    return Clocks(wall=clock.wall, monotonic=clock.monotonic)


def finished(name: str = "items", *, records: int = 2_000, error: str | None = None) -> StreamResult:
    return StreamResult(name, records=records, pages=4, units=4, units_done=3 if error else 4,
                        files=[{"key": "a", "bytes": 700}, {"key": "b", "bytes": 300}], nulled=2, seconds=2.0,
                        state_saved=True, error=error)


def drive(reporter, clock: FakeClock, result: StreamResult, steps: list[float]) -> None:
    """planned, one group per step (each ``step`` seconds after the last, 500 records more), done."""
    reporter.progress("planned", result)
    for step in steps:
        clock.now += step
        result.records += 500
        result.pages += 1
        result.units_done += 1
        reporter.progress("group", result)
    result.seconds = sum(steps)
    reporter.progress("done", result)


# -- text ----------------------------------------------------------------------------------------------------------


def test_text_off_a_terminal_prints_lines_no_closer_than_the_interval():
    err, clock = io.StringIO(), FakeClock()
    reporter = TextReporter(err, tty=False, interval=5.0, clocks=clocks(clock))
    reporter.started("local[2]", "/tmp/out", "Parquet", 4.25)
    drive(reporter, clock, StreamResult("items", units=4), [1.0, 1.0, 4.0, 2.0])

    assert err.getvalue().splitlines() == [
        "Spark ready in 4.2 s (local[2]); writing Parquet to /tmp/out",
        "  items: 4 partition(s) planned",
        "  items: 500 records, 1 page, 1/4 partitions, 500 records/s",  # the first group shows at once
        "  items: 1,500 records, 3 pages, 3/4 partitions, 250 records/s",  # 5 s after: 2nd was too soon
        "  items: 2,000 records, 0 file(s), 4/4 partitions, 250 records/s, ok",
    ]
    assert "\r" not in err.getvalue() and "\x1b" not in err.getvalue()


def test_text_says_when_spark_starts_in_the_background_while_the_driver_reads():
    err = io.StringIO()
    TextReporter(err, tty=False).started("local[*]", "/tmp/out", "Parquet", 0.01, background=True)
    assert err.getvalue() == ("Spark starting in the background (local[*]), the driver reads meanwhile; "
                              "writing Parquet to /tmp/out\n")


def test_text_on_a_terminal_redraws_one_line_and_leaves_the_closing_one():
    err, clock = io.StringIO(), FakeClock()
    reporter = TextReporter(err, tty=True, clocks=clocks(clock))
    drive(reporter, clock, StreamResult("items", units=2), [0.5, 0.5])
    reporter.failure("stream `x` failed: boom")

    text = err.getvalue()
    assert text.count("\r\x1b[2K") == 3 + 1  # drawn at plan and per group, cleared before the closing line
    assert "\r\x1b[2K  items: 1,000 records, 2 pages, 2/2 partitions, 1,000 records/s\r\x1b[2K  items: 1,000 " \
           "records, 0 file(s), 2/2 partitions, 1,000 records/s, ok\n" in text
    assert text.endswith("\nrun-manifest: stream `x` failed: boom\n")
    visible = [line.rsplit("\x1b[2K", 1)[-1] for line in text.split("\n") if line]  # what a terminal keeps
    assert visible == ["  items: 2 partition(s) planned",
                       "  items: 1,000 records, 0 file(s), 2/2 partitions, 1,000 records/s, ok",
                       "run-manifest: stream `x` failed: boom"]


def timed(name: str = "events") -> StreamResult:
    """Four daily windows planned (their work in seconds), none done yet."""
    return StreamResult(name, units=4, work=4 * 86_400.0, planned_all=True)


def test_ticks_between_groups_show_the_running_counts_the_share_done_and_the_time_left():
    err, clock = io.StringIO(), FakeClock()
    reporter = TextReporter(err, tty=False, interval=2.0, clocks=clocks(clock))
    result = timed()
    reporter.progress("planned", result)
    clock.now += 2.0
    result.records, result.pages = 300, 3  # told by the running tasks: no window done yet
    reporter.progress("tick", result)
    clock.now += 1.0
    reporter.progress("tick", result)  # within the interval: held back
    clock.now += 1.0
    result.records, result.units_done, result.work_done = 600, 1, 86_400.0
    reporter.progress("tick", result)
    lines = err.getvalue().splitlines()
    assert lines == ["  events: 4 partition(s) planned",
                     "  events: 300 records, 3 pages, 0/4 partitions, 150 records/s, 0% done",
                     "  events: 600 records, 3 pages, 1/4 partitions, 150 records/s, 25% done, about 12 s left"]


def test_a_terminal_shows_a_bar_and_a_plan_still_growing_shows_no_estimate():
    err, clock = io.StringIO(), FakeClock()
    reporter = TextReporter(err, tty=True, clocks=clocks(clock))
    result = timed()
    reporter.progress("planned", result)
    clock.now += 10.0
    result.records, result.units_done, result.work_done = 100, 2, 2 * 86_400.0
    reporter.progress("tick", result)
    assert err.getvalue().endswith("\r\x1b[2K  [##########----------]  events: 100 records, 0 pages, 2/4 partitions, "
                                   "10 records/s, 50% done, about 10 s left")
    growing = StreamResult("children", units=3, work=3.0, planned_all=False)
    reporter.progress("planned", growing)
    growing.units_done, growing.work_done = 1, 1.0
    reporter.progress("tick", growing)
    assert err.getvalue().endswith("children: no records yet, 1/3 partitions, 0 records/s")


@given(st.lists(st.floats(min_value=0.0, max_value=3.0, allow_nan=False), min_size=1, max_size=60))
def test_json_ticks_come_at_least_every_interval_with_the_time_left(steps):
    err, clock = io.StringIO(), FakeClock()
    reporter = JsonReporter(err, clocks=clocks(clock), interval=2.0)
    result = timed()
    reporter.progress("planned", result)
    ticks, shown = [], []
    for step in steps:  # ticks as the pipeline's ticker sends them
        clock.now += step
        ticks.append(clock.now)
        before = err.getvalue().count("\n")
        reporter.progress("tick", result)
        if err.getvalue().count("\n") > before:
            shown.append(clock.now)
    events = events_of(err.getvalue())[1:]
    assert len(events) == len(shown)
    assert all(e["event"] == "stream_progress" and e["time_left_s"] is None and e["fraction_done"] == 0.0
               for e in events)
    assert all(b - a >= 2.0 for a, b in itertools.pairwise(shown))  # no closer than the interval
    for moment in ticks:  # and no tick that fell due was skipped
        assert any(0 <= moment - s < 2.0 for s in shown)


def test_json_progress_carries_the_time_left_once_a_window_is_done():
    err, clock = io.StringIO(), FakeClock()
    reporter = JsonReporter(err, clocks=clocks(clock))
    result = timed()
    reporter.progress("planned", result)
    clock.now += 30.0
    result.records, result.units_done, result.work_done = 900, 3, 3 * 86_400.0
    reporter.progress("group", result)
    progress = events_of(err.getvalue())[-1]
    assert (progress["fraction_done"], progress["time_left_s"], progress["records_per_second"]) == (0.75, 10.0, 30.0)


def test_text_summary_table_and_failed_stream():
    err, clock = io.StringIO(), FakeClock()
    reporter = TextReporter(err, clocks=clocks(clock))
    bad = finished("orders", records=10, error="stream `orders`: 401 Unauthorized")
    reporter.progress("done", bad)
    reporter.summary(PipelineResult(7, [finished(), bad]), "s3://bucket/out", 9.0)

    lines = err.getvalue().splitlines()
    assert lines[0] == ("  orders: 10 records, 2 file(s), 3/4 partitions, 5 records/s, "
                        "FAILED: stream `orders`: 401 Unauthorized")
    assert [line.split() for line in lines[1:]] == [
        ["stream", "records", "files", "bytes", "nulled", "state", "seconds"],
        ["------", "-------", "-----", "-----", "------", "-------", "-------"],
        ["items", "2000", "2", "1000", "2", "saved", "2.0"],
        ["orders", "10", "2", "1000", "2", "partial", "2.0"],
        ["sync", "7", "->", "s3://bucket/out"],
    ]


@given(st.lists(st.floats(min_value=0.0, max_value=20.0, allow_nan=False), max_size=40),
       st.floats(min_value=0.5, max_value=10.0))
def test_text_progress_lines_are_at_least_an_interval_apart(steps, interval):
    err, clock = io.StringIO(), FakeClock()
    reporter = TextReporter(err, interval=interval, clocks=clocks(clock))
    reporter.progress("planned", StreamResult("items", units=len(steps)))
    shown, held = [], []
    for number, step in enumerate(steps, 1):
        clock.now += step
        before = err.getvalue()
        reporter.progress("group", StreamResult("items", records=number, units=len(steps), units_done=number))
        (shown if err.getvalue() != before else held).append(clock.now)
    assert all(b - a >= interval for a, b in itertools.pairwise(shown))
    if steps:
        assert shown and shown[0] == 100.0 + steps[0]  # the first update is never held back
    # nothing that fell due was skipped: every held-back update came less than an interval after a shown one
    for moment in held:
        assert any(0 <= moment - s < interval for s in shown)


# -- quiet ---------------------------------------------------------------------------------------------------------


def test_quiet_prints_failures_only():
    err, clock = io.StringIO(), FakeClock()
    reporter = reporter_for(err, "text", quiet=True)
    assert isinstance(reporter, QuietReporter)
    reporter.started("local[2]", "/tmp/out", "Parquet", 1.0)
    drive(reporter, clock, StreamResult("items", units=2), [1.0, 1.0])
    assert err.getvalue() == ""
    reporter.summary(PipelineResult(1, [finished(), finished("orders", error="stream `orders`: boom")]), "o", 1.0)
    assert err.getvalue() == "run-manifest: stream `orders` failed: stream `orders`: boom\n"


def test_reporter_for_picks_text_by_terminal_and_json_by_format():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert reporter_for(Terminal()).tty is True
    assert reporter_for(io.StringIO()).tty is False
    assert isinstance(reporter_for(io.StringIO(), "json"), JsonReporter)
    assert reporter_for(io.StringIO(), "json", quiet=True).quiet is True


# -- JSON lines ----------------------------------------------------------------------------------------------------

STREAM_DONE_KEYS = {"event", "time", "stream", "records", "pages", "empty_pages", "partitions_done", "partitions",
                    "records_per_second", "files", "bytes", "nulled", "state_saved", "seconds", "error", "folder",
                    "schema_drift", "table"}
KEYS = {
    "started": {"event", "time", "master", "output", "format", "spark_seconds", "background"},
    "spark_ready": {"event", "time", "stream", "ready_at", "records"},
    "stream_planned": {"event", "time", "stream", "partitions"},
    "stream_progress": {"event", "time", "stream", "records", "pages", "empty_pages", "partitions_done", "partitions",
                        "records_per_second", "fraction_done", "time_left_s"},
    "stream_done": STREAM_DONE_KEYS,
    "failure": {"event", "time", "stream", "error"},
    "summary": {"event", "time", "sync_id", "output", "ok", "records", "seconds", "streams", "in_flight"},
    "stream_normalized": {"event", "time", "stream", "mode", "incremental", "tables", "seconds", "error"},
}
IN_FLIGHT_KEYS = {"concurrency", "concurrency_level", "concurrency_ceiling", "requests", "rate_limited",
                  "most_in_flight", "level", "lowest_level", "highest_level"}
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def events_of(text: str) -> list[dict]:
    """Every line of ``text`` as JSON, checked against the documented keys."""
    assert text.endswith("\n")
    events = [json.loads(line) for line in text.splitlines()]
    for event in events:
        assert set(event) == KEYS[event["event"]], event
        assert TIME.fullmatch(event["time"]), event
    for summary in (e for e in events if e["event"] == "summary"):
        assert all(set(s) == STREAM_DONE_KEYS - {"event", "time"} for s in summary["streams"])
        assert summary["in_flight"] is None or set(summary["in_flight"]) == IN_FLIGHT_KEYS
    return events


def test_json_lines_carry_every_event_with_the_documented_keys():
    err, clock = io.StringIO(), FakeClock()
    reporter = JsonReporter(err, clocks=clocks(clock))
    reporter.started("local[2]", "/tmp/out", "Parquet", 4.25)
    items = StreamResult("items", units=2)
    drive(reporter, clock, items, [1.0, 3.0])
    items.files, items.state_saved = [{"bytes": 10}], True
    bad = finished("orders", records=10, error="stream `orders`: 401 Unauthorized")
    reporter.progress("done", bad)
    reporter.summary(PipelineResult(3, [items, bad]), "/tmp/out", 12.5)

    events = events_of(err.getvalue())
    assert [e["event"] for e in events] == ["started", "stream_planned", "stream_progress", "stream_progress",
                                            "stream_done", "stream_done", "failure", "summary"]
    assert events[0]["time"] == "2026-09-21T14:15:00.000Z"  # EPOCH + 100 s
    assert events[0] | {"time": None} == {"event": "started", "time": None, "master": "local[2]",
                                          "output": "/tmp/out", "format": "Parquet", "spark_seconds": 4.25,
                                          "background": False}
    assert events[3]["records"] == 1000 and events[3]["partitions_done"] == 2
    assert events[3]["records_per_second"] == 250.0  # 1,000 records 4 s after planning
    assert events[6] | {"time": None} == {"event": "failure", "time": None, "stream": "orders",
                                          "error": "stream `orders`: 401 Unauthorized"}
    summary = events[-1]
    assert (summary["sync_id"], summary["ok"], summary["records"], summary["seconds"]) == (3, False, 1010, 12.5)
    assert summary["streams"][1] == {k: v for k, v in events[5].items() if k not in ("event", "time")}
    assert summary["streams"][1]["bytes"] == 1000 and summary["streams"][1]["state_saved"] is True


def test_json_says_when_spark_was_ready_for_groups_and_text_says_nothing_of_it():
    err, clock = io.StringIO(), FakeClock()
    items = StreamResult("items", units=8, records=500_000)
    items.spark_ready_at, items.records_before_spark = clock.wall() - 0.25, 250_000
    JsonReporter(err, clocks=clocks(clock)).progress("spark_ready", items)
    assert events_of(err.getvalue()) == [{"event": "spark_ready", "time": "2026-09-21T14:15:00.000Z",
                                          "stream": "items", "ready_at": "2026-09-21T14:14:59.750Z",
                                          "records": 250_000}]
    text = io.StringIO()
    TextReporter(text, clocks=clocks(clock)).progress("spark_ready", items)
    assert text.getvalue() == ""


def test_json_quiet_keeps_only_failures():
    err, clock = io.StringIO(), FakeClock()
    reporter = JsonReporter(err, quiet=True, clocks=clocks(clock))
    reporter.started("local[2]", "/tmp/out", "Parquet", 1.0)
    drive(reporter, clock, StreamResult("items", units=1), [1.0])
    reporter.progress("done", finished("orders", error="boom"))
    reporter.summary(PipelineResult(1, []), "o", 1.0)
    reporter.failure("--output: bad")
    assert [(e["event"], e["stream"], e["error"]) for e in events_of(err.getvalue())] == [
        ("failure", "orders", "boom"), ("failure", None, "--output: bad")]


def test_summary_table_marks_state():
    unsaved = StreamResult("a", state_saved=False)
    table = summary_table(PipelineResult(2, [unsaved]), "out").splitlines()
    assert table[2].split() == ["a", "0", "0", "0", "0", "not", "saved", "0.0"]
    assert table[-1] == "sync 2 -> out"


# -- data that looks wrong, and pages that held no record ---------------------------------------------------------

EMPTY = Signal("items", "extractor-empty", "field_path: ['data'] found no records, but the response has a list of "
               "10 objects at `tickets`", "set the record selector's extractor to field_path: ['tickets']")
REPEAT = Signal("items", "repeated-page", "pages 1 and 2 have the same 10 records", "set start_from_page: 1")


def warned_run(reporter) -> None:
    """A stream whose first group brings a warning and whose second brings it again plus another."""
    result = StreamResult("items", units=2)
    reporter.progress("planned", result)
    result.units_done, result.empty_pages = 1, 1
    result.warnings.append(EMPTY)
    reporter.progress("group", result)
    result.units_done, result.empty_pages = 2, 2
    result.warnings.append(REPEAT)
    reporter.progress("group", result)
    reporter.progress("done", result)


def test_text_says_each_warning_once_and_names_empty_pages():
    err = io.StringIO()
    warned_run(TextReporter(err, tty=False, interval=0.0, clocks=clocks(FakeClock())))
    lines = err.getvalue().splitlines()
    assert lines.count(f"run-manifest: warning: {EMPTY.line()}") == 1
    assert lines.count(f"run-manifest: warning: {REPEAT.line()}") == 1
    assert "  items: no records (1 empty page), 1/2 partitions, 0 records/s" in lines
    assert any(line.startswith("  items: no records (2 empty pages), 0 file(s), 2/2 partitions") for line in lines)
    assert not any("0 pages" in line for line in lines)


def test_quiet_and_json_say_each_warning_once_too():
    quiet = io.StringIO()
    warned_run(QuietReporter(quiet))
    assert quiet.getvalue() == f"run-manifest: warning: {EMPTY.line()}\nrun-manifest: warning: {REPEAT.line()}\n"
    for is_quiet in (False, True):
        err = io.StringIO()
        warned_run(JsonReporter(err, quiet=is_quiet, clocks=clocks(FakeClock())))
        warnings = [json.loads(line) for line in err.getvalue().splitlines()
                    if json.loads(line)["event"] == "warning"]
        assert [(w["stream"], w["kind"], w["message"]) for w in warnings] == [
            ("items", "extractor-empty", EMPTY.line()), ("items", "repeated-page", REPEAT.line())]


def test_a_running_stream_without_records_says_so():
    err = io.StringIO()
    reporter = TextReporter(err, tty=False, interval=0.0, clocks=clocks(FakeClock()))
    reporter.progress("group", StreamResult("items", units=9))
    assert err.getvalue() == "  items: no records yet, 0/9 partitions, 0 records/s\n"


# -- for real ------------------------------------------------------------------------------------------------------


@pytest.mark.spark
def test_run_manifest_log_format_json_prints_only_json_lines(spark, fake_api, tmp_path, capsys):
    from spark.test_pipeline import MANIFEST, SECRET, config_for, serve

    from framework.cli.run import main

    shop = serve(fake_api)
    shop.refuse_since = {"2024-01-04T00:00:00Z"}  # items' last window fails; notes land
    manifest, config, out = tmp_path / "manifest.yaml", tmp_path / "config.json", tmp_path / "out"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(config_for(shop)))
    capsys.readouterr()
    stdout = io.BytesIO()
    code = main([str(manifest), "--config", str(config), "--output", str(out), "--streams", "items,notes",
                 "--log-format", "json"], out=stdout)
    stderr = capsys.readouterr().err

    assert code == 1 and stdout.getvalue() == b""
    assert SECRET not in stderr
    events = events_of(stderr)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "started" and kinds[-1] == "summary"
    assert events[0]["output"] == str(out) and events[0]["format"] == "Parquet" and events[0]["master"]
    assert [(e["stream"], e["partitions"]) for e in events if e["event"] == "stream_planned"] == [
        ("items", 4), ("notes", 1)]
    assert any(e["event"] == "stream_progress" and e["stream"] == "notes" for e in events)
    done = {e["stream"]: e for e in events if e["event"] == "stream_done"}
    assert done["notes"]["records"] == 5 and done["notes"]["error"] is None and done["notes"]["files"] >= 1
    assert done["items"]["records"] == 6 and "401" in done["items"]["error"]
    failure = next(e for e in events if e["event"] == "failure")
    assert failure["stream"] == "items" and failure["error"] == done["items"]["error"]
    summary = events[-1]
    assert summary["ok"] is False and summary["sync_id"] == 1 and summary["records"] == 11
    assert [s["stream"] for s in summary["streams"]] == ["items", "notes"]


def test_run_manifest_log_format_json_reports_a_bad_output_as_json(fake_api, tmp_path, capsys):
    from spark.test_pipeline import MANIFEST, config_for, serve

    from framework.cli.run import main

    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps(config_for(serve(fake_api))))
    capsys.readouterr()
    code = main([str(manifest), "--config", str(config), "--output", "ftp://example.com/out",
                 "--log-format", "json"], out=io.BytesIO())
    events = events_of(capsys.readouterr().err)
    assert code == 2
    assert [e["event"] for e in events] == ["failure"] and events[0]["stream"] is None
    assert "must be a local folder or an `s3://` address" in events[0]["error"]


def test_run_manifest_log_format_json_reports_a_bad_config_file_as_json(tmp_path, capsys):
    from spark.test_pipeline import MANIFEST

    from framework.cli.run import main

    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text("{not json")
    code = main([str(manifest), "--config", str(config), "--log-format", "json"], out=io.BytesIO())
    events = events_of(capsys.readouterr().err)
    assert code == 2
    assert [e["event"] for e in events] == ["failure"] and "config.json:1:2: not valid JSON" in events[0]["error"]


@dataclass(frozen=True)
class Outcome:
    stream: str
    mode: str = "append_dedup"
    incremental: bool = True
    tables: tuple = ("orders", "orders_scd")
    seconds: float = 1.25
    error: str | None = None


def test_normalization_outcomes_as_text_json_and_quiet():
    text, quiet, out = io.StringIO(), io.StringIO(), io.StringIO()
    for reporter in (TextReporter(text), QuietReporter(quiet), JsonReporter(out, clocks=clocks(FakeClock()))):
        reporter.normalized(Outcome("orders"))
        reporter.normalized(Outcome("items", mode="overwrite", incremental=False, tables=(), error="disk full"))
    assert text.getvalue().splitlines() == [
        "  normalized orders: append_dedup, incremental, 2 table(s) in 1.2 s, ok",
        "  normalized items: overwrite, full, 0 table(s) in 1.2 s, FAILED: disk full",
    ]
    assert quiet.getvalue() == "run-manifest: normalization of stream `items` failed: disk full\n"
    events = events_of(out.getvalue())
    assert [e["event"] for e in events] == ["stream_normalized", "stream_normalized", "failure"]
    assert {k: v for k, v in events[0].items() if k != "time"} == {
        "event": "stream_normalized", "stream": "orders", "mode": "append_dedup", "incremental": True,
        "tables": ["orders", "orders_scd"], "seconds": 1.25, "error": None}
    assert events[2]["stream"] == "items" and "disk full" in events[2]["error"]
