"""Spark's warm-up while the driver reads (framework/spark/warmup.py, ``WarmUp`` and ``Reading``): started
only when the driver has enough reading left for it to pay; no Spark here (the session is a stand-in)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

from framework.spark.pipeline import StreamResult
from framework.spark.warmup import SPARK_WORTH_CPU_S, WARM_UP_WORTH_S, Reading, WarmUp, spark_wanted


class _Context:
    def setJobGroup(self, *args, **kwargs):  # noqa: N802 - PySpark's name
        pass


class _Session:
    """Stands in for a SparkSession: the warm-up job's frame is asked for, and fails (as a broken one would)."""

    def __init__(self):
        self.sparkContext = _Context()
        self.jobs = 0
        self.asked = threading.Event()

    def createDataFrame(self, table):  # noqa: N802 - PySpark's name
        self.jobs += 1
        self.asked.set()
        raise RuntimeError("no Spark here")


def _warm_up(worth: list[bool], over: threading.Event | None = None) -> tuple[WarmUp, Future, _Session]:
    session: Future = Future()
    source: Any = None  # the failing frame comes first: the connector is never built
    warm = WarmUp(session, source, 2, "tag", over or threading.Event(), worth=lambda: worth[0])
    return warm, session, _Session()


def test_not_started_while_not_worth_it_then_started_when_it_is():
    worth = [False]
    warm, session, spark = _warm_up(worth)
    session.set_result(spark)  # up: not worth it yet
    assert not spark.asked.wait(0.2) and not warm.ready.done()
    warm.consider()  # after a group: still not
    assert not spark.asked.wait(0.2)
    worth[0] = True
    warm.consider()
    assert warm.ready.result(timeout=10) is spark  # a failed warm-up still answers the session
    assert spark.jobs == 1
    warm.consider()  # once only
    assert spark.jobs == 1


def test_worth_it_when_up_starts_at_once():
    warm, session, spark = _warm_up([True])
    session.set_result(spark)
    assert warm.ready.result(timeout=10) is spark and spark.jobs == 1


def test_a_run_over_answers_the_session_without_a_warm_up():
    over = threading.Event()
    warm, session, spark = _warm_up([False], over)
    session.set_result(spark)
    over.set()
    warm.consider()  # the pipeline's end
    assert warm.ready.result(timeout=1) is spark and spark.jobs == 0
    # the session coming up only after the run ended: answered at once, no job
    later, late_session, late_spark = _warm_up([True], over)
    late_session.set_result(late_spark)
    assert later.ready.result(timeout=1) is late_spark and late_spark.jobs == 0


def test_a_session_that_failed_answers_its_error():
    warm, session, _ = _warm_up([True])
    session.set_exception(RuntimeError("no java"))
    assert isinstance(warm.ready.exception(timeout=1), RuntimeError)
    warm.consider()  # nothing more to do


def test_the_driver_pace_decides():
    result = StreamResult("items")
    reading = Reading(result, time.monotonic() - 1.0, more_streams=False)
    result.units = 16
    assert reading.worth_warming()  # the plan may still be streaming
    reading.planned_all = True
    assert reading.worth_warming()  # no unit done: the pace is not known
    result.units_done = 8  # 8 units a second: 1 s left
    assert not reading.worth_warming()
    result.units_done = 2  # 2 units a second: 7 s left
    assert reading.worth_warming()
    result.units_done = 16
    assert not reading.worth_warming()
    slow = Reading(result, time.monotonic() - 2 * WARM_UP_WORTH_S, more_streams=False, planned_all=True)
    result.units_done = 8  # half done in twice the threshold: as long again left
    assert slow.worth_warming()
    assert Reading(result, time.monotonic(), more_streams=True, planned_all=True).worth_warming()


def test_the_driver_cpu_decides_whether_spark_is_wanted_at_all():
    result = StreamResult("items")
    reading = Reading(result, time.monotonic() - 60.0, more_streams=False)  # slow by the clock: a busy machine
    result.units = 16
    assert reading.worth_spark()  # the plan may still be streaming
    reading.planned_all = True
    assert reading.worth_spark()  # no unit done: the cost per unit is not known
    result.units_done, reading.cpu = 8, 1.0  # 8 more units at 1/8 CPU-s each: 1 CPU-s left
    assert not reading.worth_spark()
    assert reading.worth_warming()  # by the wall clock it has 60 s left: the warm-up alone would be worth it
    reading.cpu = 2 * SPARK_WORTH_CPU_S  # as much CPU left again as Spark's start costs twice over
    assert reading.worth_spark()
    assert Reading(result, time.monotonic(), more_streams=True, planned_all=True).worth_spark()
    reading.cpu = 0.0
    assert not reading.worth_spark()
    reading.spark_after = True  # a change-data apply runs on Spark once the stream is read
    assert reading.worth_spark()


class _Start:
    """Records what the pipeline asks of a session's start."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def pause(self) -> None:
        self.asked.append("pause")

    def resume(self) -> None:
        self.asked.append("resume")


def _run_reading(cpu: float, warmed: bool = False) -> tuple[Any, bool]:
    result = StreamResult("items")
    result.units, result.units_done = 16, 8
    reading = Reading(result, time.monotonic() - 60.0, more_streams=False, planned_all=True, cpu=cpu)
    start: Any = _Start()
    return start, spark_wanted(reading, start)


def test_a_start_not_wanted_is_paused_and_goes_on_when_wanted_again():
    start, wanted = _run_reading(cpu=0.5)
    assert (start.asked, wanted) == (["pause"], False)
    start, wanted = _run_reading(cpu=2 * SPARK_WORTH_CPU_S)
    assert (start.asked, wanted) == (["resume"], True)
