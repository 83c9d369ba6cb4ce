"""What framework.sync's on_progress gets, from the pipeline's events, without Spark."""

from __future__ import annotations

from framework.api.sync import _ApiReporter
from framework.spark.pipeline import StreamResult


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_events_become_progress_values_with_the_rate_and_the_time_left():
    seen, notes, clock = [], [], Clock()
    reporter = _ApiReporter(seen.append, notes, clock=clock)
    result = StreamResult("events", units=4, work=400.0, planned_all=True)
    reporter.progress("planned", result)
    clock.now += 10.0
    result.records, result.pages, result.units_done, result.work_done = 500, 5, 1, 100.0
    reporter.progress("tick", result)
    reporter.progress("spark_ready", result)  # not a stream event of the API
    result.seconds, result.units_done, result.work_done, result.records = 20.0, 4, 400.0, 2000
    reporter.progress("done", result)
    assert [(p.event, p.records, p.partitions_done, p.fraction_done, p.time_left_s) for p in seen] == [
        ("planned", 0, 0, 0.0, None), ("progress", 500, 1, 0.25, 30.0), ("done", 2000, 4, 1.0, 0.0)]
    assert seen[1].records_per_second == 50.0 and seen[2].records_per_second == 100.0 and notes == []


def test_a_callback_that_raises_is_noted_once_and_not_called_again():
    calls, notes = [], []

    def broken(progress):
        calls.append(progress)
        raise ValueError("bad dashboard")

    reporter = _ApiReporter(broken, notes, clock=Clock())
    result = StreamResult("events", units=1, work=1.0, planned_all=True)
    reporter.progress("planned", result)
    reporter.progress("tick", result)
    assert len(calls) == 1 and notes == ["on_progress raised ValueError: bad dashboard; it is not called again in "
                                         "this sync (the sync went on)"]
