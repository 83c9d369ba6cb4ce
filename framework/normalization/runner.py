"""Normalization of an output, stream by stream: :func:`normalize`.

For each landed stream (from ``_airbyte_state/catalog.json``) the runner
reads its raw rows, makes the tables of its plan and publishes them to the
target in one all-or-nothing step, so a stream whose normalization fails
keeps its previous tables (and the other streams go on).

How the tables are updated follows the destination sync mode (the stream's
own, or ``NormalizationSettings.destination_sync_mode``):

* ``overwrite``: every table is rebuilt from all landed rows;
* ``append``: rows emitted after the raw table's newest ``_airbyte_emitted_at``
  are normalized and appended to every table;
* ``append_dedup``: the new rows extend the ``_scd`` history of the keys they
  touch (:mod:`framework.normalization.history`); the final table and the
  child tables are rewritten: rows of untouched keys are kept as they are,
  child rows of new active versions are added.

The tables of an ``overwrite`` or ``append`` stream come from one pass over
its landed rows (:class:`~framework.normalization.tables.StreamTables`): read
once, each level's hashids computed once, every table written from that pass
by the Parquet target (the PostgreSQL target writes them table by table).

A run is incremental when the target already has the stream's tables with
the columns and types the plan gives; otherwise (first run, changed
schema, ``full_refresh``) every table is rebuilt from all landed rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from msgspec import Struct

from framework.errors import ConfigError, FrameworkError
from framework.models.normalization import NormalizationSettings
from framework.normalization import history as h
from framework.normalization import transform as tf
from framework.normalization.files import warm_workers
from framework.normalization.plan import (
    AB_ID,
    DATA,
    EMITTED_AT,
    StreamPlan,
    TablePlan,
    plan_catalog,
)
from framework.normalization.raw import raw_frame
from framework.normalization.root import check_no_legacy_tables
from framework.normalization.tables import StreamTables
from framework.normalization.targets import Target, open_target
from framework.normalization.targets.parquet import ParquetTarget
from framework.storage import CatalogStore, Storage, storage_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.models.destination import DestinationSettings


class StreamOutcome(Struct, frozen=True):
    """What normalization did with one stream."""

    stream: str
    mode: str  # overwrite | append | append_dedup
    incremental: bool
    tables: tuple[str, ...]
    seconds: float
    error: str | None = None


class NormalizationResult(Struct, frozen=True):
    streams: tuple[StreamOutcome, ...]

    @property
    def failed(self) -> bool:
        return any(s.error for s in self.streams)


def normalize(spark: SparkSession, destination: DestinationSettings, settings: NormalizationSettings | None = None,
              *, streams: Sequence[str] | None = None, full_refresh: bool = False, target: Target | None = None,
              now: datetime | None = None, dedup: bool = False,
              progress: Callable[[StreamOutcome], None] | None = None) -> NormalizationResult:
    """Normalize the streams landed under ``destination`` (``DestinationSettings``); see the module docs.

    ``settings`` (``NormalizationSettings``) defaults to ``destination.normalization``,
    else Parquet tables; ``streams`` limits the run to those streams; ``target``
    replaces the one the settings name (tests); ``now`` is the
    ``_airbyte_normalized_at`` of the run; ``dedup`` (``--dedup``) makes incremental
    streams with a primary key ``append_dedup`` (:mod:`framework.sync_modes`).
    """
    settings = settings or destination.normalization or NormalizationSettings(target="parquet")
    storage = storage_for(destination)
    entries = CatalogStore(storage).load()
    if not entries:
        raise ConfigError(f"{storage.uri()}: nothing was landed here (no `_airbyte_state/catalog.json`); "
                          "run a sync into this output first")
    target = target if target is not None else open_target(spark, settings, destination)
    if isinstance(target, ParquetTarget):  # tables an earlier version wrote under the raw files: the fix
        check_no_legacy_tables(storage, target.storage, full_refresh)
    plans = plan_catalog(entries, target.dialect, settings.destination_sync_mode, dedup=dedup)
    if streams:
        known = {p.stream for p in plans}
        unknown = [s for s in streams if s not in known]
        if unknown:
            raise ConfigError(f"stream(s) {', '.join(unknown)} were not landed here; landed streams: "
                              f"{', '.join(sorted(known))}")
        plans = [p for p in plans if p.stream in set(streams)]
    when = now or datetime.now(timezone.utc)
    # The Parquet target sends one-pass streams through the executors' Python: start those workers while the
    # driver plans the first stream (the other paths are Spark's own code and need none).
    warm = (warm_workers(spark, target.destination_json)
            if isinstance(target, ParquetTarget) and any(not p.dedup for p in plans) else None)
    try:
        return NormalizationResult(tuple(_each_stream(spark, destination, storage, target, plans, when,
                                                      full_refresh, progress)))
    finally:
        if warm is not None:
            warm.join()  # its py4j call ends before the session may stop


def _each_stream(spark: SparkSession, destination: DestinationSettings, storage: Storage, target: Target,
                 plans: Sequence[StreamPlan], when: datetime, full_refresh: bool,
                 progress: Callable[[StreamOutcome], None] | None) -> list[StreamOutcome]:
    outcomes = []
    for plan in plans:
        started = time.perf_counter()
        tables = (plan.raw_table, *(([plan.scd_table]) if plan.dedup else ()), *(t.name for t in plan.tables()))
        incremental = False
        try:
            incremental = _normalize_stream(spark, destination, storage, target, plan, when, full_refresh)
            error = None
        except FrameworkError as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a Spark failure ends this stream only
            error = f"normalization failed: {_gist(exc)}"
        outcome = StreamOutcome(plan.stream, plan.destination_sync_mode, incremental, tuple(tables),
                                time.perf_counter() - started, error)
        outcomes.append(outcome)
        if progress:
            progress(outcome)
    return outcomes


def _normalize_stream(spark: SparkSession, destination: DestinationSettings, storage: Storage, target: Target,
                      plan: StreamPlan, when: datetime, full_refresh: bool) -> bool:
    """Normalize one stream and publish its tables; True when the run was incremental."""
    watermark = None
    if not full_refresh and plan.destination_sync_mode != "overwrite":
        watermark = target.max_emitted_at(plan.raw_table)
        if watermark is not None and not _same_shapes(spark, target, plan, when):
            watermark = None
    landed = raw_frame(spark, destination, storage, plan, after=watermark)
    try:
        raw = landed.frame
        if not plan.dedup:
            # One pass: the landed rows are read once and every level's hashids computed once, and a target
            # that can (Parquet) writes all tables from that pass (framework/normalization/tables.py).
            tables = StreamTables(raw, plan, when)
            if watermark is None:
                target.publish(replace=tables, append={})
            else:
                target.publish(replace={}, append=tables)
            return watermark is not None
        # Deduplicated streams: each table reads the landed files again (Spark's vectorized reader) and
        # recomputes its parents' hashids; their history is cached.
        nodes = tf.root_nodes(raw, plan, when, keep_data=True)
        raw_rows = raw.select(AB_ID, EMITTED_AT, DATA)
        replace = _deduped(target, plan, nodes, when, incremental=watermark is not None)
        try:
            if watermark is None:
                target.publish(replace={**replace, plan.raw_table: raw_rows}, append={})
            else:
                target.publish(replace=replace, append={plan.raw_table: raw_rows})
        finally:
            replace[plan.scd_table].unpersist()
        return watermark is not None
    finally:
        landed.release()


def _deduped(target: Target, plan: StreamPlan, nodes: DataFrame, when: datetime,
             incremental: bool) -> dict[str, DataFrame]:
    """New contents of the SCD table, the final table and the child tables of a deduped stream."""
    from pyspark.sql import functions as F

    root = plan.root
    old_scd = target.read_table(plan.scd_table) if incremental else None
    scd = h.history(tf.table_rows(nodes, root), plan, old_scd, when).persist()
    final = h.active_rows(scd, plan)
    replace = {plan.scd_table: scd, root.name: final}
    # Children of the new active versions come from the new rows; those of versions already active are kept.
    parents = nodes.join(final.select(F.col(f"`{root.ab_id}`")), root.ab_id, "left_semi")
    old_final = target.read_table(root.name) if incremental else None
    if old_final is not None:
        parents = parents.join(old_final.select(F.col(f"`{root.hashid}`")), root.hashid, "left_anti")
    kept_ids = final.select(F.col(f"`{root.hashid}`")) if old_final is not None else None

    def visit(frame: DataFrame, table: TablePlan, kept: DataFrame | None) -> None:
        for child in table.children:
            nodes_of_child = tf.child_nodes(frame, table, child, plan)
            rows = tf.table_rows(nodes_of_child, child)
            old = target.read_table(child.name) if kept is not None else None
            child_kept = None
            if old is not None and kept is not None:
                assert child.foreign is not None  # a child table has a foreign key
                ids = kept.withColumnRenamed(table.hashid, child.foreign)
                old_kept = old.join(ids, child.foreign, "left_semi").select(*rows.columns)
                rows = old_kept.unionByName(rows)
                child_kept = old_kept.select(F.col(f"`{child.hashid}`"))
            replace[child.name] = rows
            visit(nodes_of_child, child, child_kept)

    visit(parents, root, kept_ids)
    return replace


def _same_shapes(spark: SparkSession, target: Target, plan: StreamPlan, when: datetime) -> bool:
    """True when every table of the stream exists in the target with the columns and types of the plan."""
    empty = spark.createDataFrame([], f"{AB_ID} string, {EMITTED_AT} timestamp, {DATA} string")
    nodes = tf.root_nodes(empty, plan, when, keep_data=True)
    expected = tf.all_tables(nodes, plan)
    expected[plan.raw_table] = nodes.select(AB_ID, EMITTED_AT, DATA)
    if plan.dedup:
        scd = h.history(tf.table_rows(nodes, plan.root), plan, None, when)
        expected[plan.scd_table] = scd
        expected[plan.root.name] = h.active_rows(scd, plan)
    for table, frame in expected.items():
        current = target.read_table(table)
        if current is None or _shape(current) != _shape(frame):
            return False
    return True


def _shape(frame: DataFrame) -> list[tuple[str, str]]:
    return [(name.lower(), kind) for name, kind in frame.dtypes]


def _gist(exc: BaseException) -> str:
    # a Py4J error reads "An error occurred while calling o1.parquet.\n: org.apache...Exception: why": the
    # Java exception's line (its leading ": " dropped) says what went wrong
    lines = [line.strip().removeprefix(": ").removeprefix("Caused by: ") for line in str(exc).strip().splitlines()
             if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and not line.startswith(("at ", "File ")):
            return line[:500]
    return (lines[0] if lines else type(exc).__name__)[:500]


__all__ = ["NormalizationResult", "StreamOutcome", "normalize"]
