"""The warm-up policy of a sync whose local session starts in the background: when Spark is wanted at all, and
when its Python workers are warmed up.

While a local session starts, the driver reads the stream's groups itself
(:mod:`framework.spark.scheduling`). Two decisions follow the driver's pace
on the stream it reads (:class:`Reading`), asked again after each group:

* whether Spark is wanted at all (:func:`spark_wanted`): while the driver's
  reading left, in CPU seconds, is below what Spark's start costs
  (:data:`SPARK_WORTH_CPU_S`), the session's start is paused
  (:mod:`framework.spark.pause`), and goes on once it is wanted again;
* whether Spark's warm-up (one job that starts a Python worker per core,
  :class:`WarmUp`) is worth starting: only with more than
  :data:`WARM_UP_WORTH_S` of reading left by the wall clock. Groups go to
  Spark only once it is warm (:attr:`WarmUp.ready`), so none waits for a
  worker still starting while the driver sits idle.

Whatever cannot be told (no unit done yet, a plan still streaming, more
streams after this one) counts as worth it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Protocol

from msgspec import Struct

from framework.engine.worker import ConnectorSource
from framework.spark import connect
from framework.spark.session import SessionStart
from framework.spark.tasks import warm_function

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


#: Spark's warm-up (its first job: the worker daemon, a worker per core, their imports, the JVM's own first-job
#: costs) takes 2 to 3 s and both cores on a 2-core machine, while the driver goes on reading. It is started only
#: when the driver has more than this many seconds of reading left by its pace so far: below that the driver is
#: done sooner alone, and the warm-up would only take its CPU (bench/README.md, "the warm-up only when worth it").
WARM_UP_WORTH_S = 4.0

#: Spark's start and warm-up take about this much CPU (the JVM's start, its first job, a Python worker per core)
#: before Spark reads anything; while the driver's reading left, in CPU seconds by its own CPU per unit so far,
#: is below it the driver finishes first, so the session's start is paused (:func:`spark_wanted`). CPU, not
#: wall time: on a busy machine the driver reads slower by the wall clock, yet Spark's start would only take
#: from it the CPU it lacks (bench/README.md, "a JVM held while not wanted").
SPARK_WORTH_CPU_S = 4.0


class StreamCounts(Protocol):
    """What the policy reads of the stream being synced: its name, units planned and units done so far."""

    name: str
    units: int
    units_done: int


class Reading(Struct):
    """The stream the driver reads: when it began, its units planned and done, and whether its plan is whole."""

    result: StreamCounts  # the stream's result (framework.spark.pipeline.StreamResult), counted as it goes
    began: float  # time.monotonic()
    more_streams: bool  # streams after this one: more work than this estimate sees
    planned_all: bool = False
    cpu: float = 0.0  # CPU seconds of the groups the driver read (their threads' own)
    spark_after: bool = False  # the stream needs Spark once read (a change-data apply): it is always wanted

    def worth_warming(self) -> bool:
        """Whether the driver's reading left (estimated by its pace so far) is long enough for Spark's warm-up
        to pay; True whenever it cannot be told (no unit done yet, a plan still streaming, more streams)."""
        left = self._left(time.monotonic() - self.began)
        return left is None or left > WARM_UP_WORTH_S

    def worth_spark(self) -> bool:
        """Whether the driver's reading left in CPU seconds (by its CPU per unit so far) is more than Spark's
        start costs (:data:`SPARK_WORTH_CPU_S`); True whenever it cannot be told."""
        left = self._left(self.cpu)
        return self.spark_after or left is None or left > SPARK_WORTH_CPU_S

    def _left(self, spent: float) -> float | None:
        """What the units not done yet cost at ``spent`` for those done; None when it cannot be told."""
        done, planned = self.result.units_done, self.result.units
        if self.more_streams or not self.planned_all or done <= 0:
            return None
        return (planned - done) * spent / done


def warmed(session: Future[SparkSession], source: ConnectorSource, cores: int, tag: str,
           over: threading.Event | None = None) -> Future[SparkSession]:
    """The session once it is up *and* its Python workers are ready (:class:`WarmUp`, always worth it)."""
    return WarmUp(session, source, cores, tag, over).ready


class WarmUp:
    """Spark's warm-up: once the session is up, one job of ``cores`` one-row tasks
    (:func:`framework.spark.tasks.warm_function`) starts the worker daemon, forks a worker per core, builds
    the connector in each and pays Spark's own first-job costs (about 3 s on 2 cores), while the driver
    reads. ``ready`` is the session once that is done: the pipeline hands groups to Spark only then, so no
    group waits for a worker that is still starting while the driver sits idle.

    The warm-up starts when the session is up and ``worth()`` says so, else at a later :meth:`consider`
    (the pipeline asks after each group the driver reads) that finds it worth it: a driver about to finish
    alone is not slowed by it (:data:`WARM_UP_WORTH_S`). A warm-up that fails (or is cancelled, tagged
    ``tag``) still answers the session: the groups' own jobs then show what is wrong. Once ``over`` is set
    (the run ended) none starts, and ``ready`` answers the session as it is at the next :meth:`consider`
    (or when it comes up). A session that failed to start answers its error."""

    def __init__(self, session: Future[SparkSession], source: ConnectorSource, cores: int, tag: str,
                 over: threading.Event | None = None, worth: Callable[[], bool] | None = None):
        self.ready: Future[SparkSession] = Future()
        self.ready.set_running_or_notify_cancel()
        self._source, self._cores, self._tag, self._over, self._worth = source, cores, tag, over, worth
        self._lock = threading.Lock()
        self._session: SparkSession | None = None
        self._decided = False  # the warm-up started, or ready was answered without one
        session.add_done_callback(self._up)

    @property
    def decided(self) -> bool:
        """The warm-up started, or ``ready`` was answered without one: ``worth`` is not asked again."""
        return self._decided

    def _up(self, future: Future[SparkSession]) -> None:
        error = future.exception()
        if error is not None:
            with self._lock:
                self._decided = True
            self.ready.set_exception(error)
            return
        with self._lock:
            self._session = future.result()
        self.consider()

    def consider(self) -> None:
        """Start the warm-up if the session is up and it is worth it now (answer ``ready`` if the run is over)."""
        with self._lock:
            if self._decided or self._session is None:
                return
            if self._over is not None and self._over.is_set():
                self._decided = True
                self.ready.set_result(self._session)
                return
            if self._worth is not None and not self._worth():
                return
            self._decided = True
            spark = self._session
        threading.Thread(target=self._warm, args=(spark,), name="spark-warm-up", daemon=True).start()

    def _warm(self, spark: SparkSession) -> None:
        try:
            if self._over is not None and self._over.is_set():
                return
            import pyarrow as pa

            connect.tag_jobs(spark, self._tag, "warm-up of the sync's Python workers")
            frame = spark.createDataFrame(pa.table({"core": list(range(self._cores))}))
            frame.mapInArrow(warm_function(self._source), "warmed bigint").toArrow()
        except Exception:  # noqa: BLE001 - see the class docs: the groups' jobs say it
            pass
        finally:
            self.ready.set_result(spark)


def spark_wanted(reading: Reading | None, start: SessionStart | None) -> bool:
    """Whether Spark's warm-up is worth starting now (:meth:`Reading.worth_warming`), ``reading`` being the
    stream the driver reads (None: none, Spark is wanted). The session's ``start`` (if it is still starting) is
    paused, at no CPU cost, while Spark is not wanted at all for the rest of the sync
    (:meth:`Reading.worth_spark`), and goes on when it is: on a busy machine the JVM's start would only take
    CPU from a driver that finishes alone (bench/README.md, "a JVM held while not wanted"). Called only while
    Spark's warm-up has not started: a warm-up (or a group) never waits on a paused JVM."""
    spark = reading is None or reading.worth_spark()
    if start is not None:
        if spark:
            start.resume()
        else:
            start.pause()
    return spark and (reading is None or reading.worth_warming())


__all__ = ["SPARK_WORTH_CPU_S", "WARM_UP_WORTH_S", "Reading", "StreamCounts", "WarmUp", "spark_wanted", "warmed"]
