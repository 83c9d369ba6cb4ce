"""Incremental deduped history: the ``<stream>_scd`` table (type 2 slowly changing dimension) and its final table.

Every version of a record is a row of the SCD table:

* ``_airbyte_unique_key``: MD5 of the primary key values (as text, ``-`` between);
* ``_airbyte_unique_key_scd``: MD5 of the unique key, the cursor value and
  ``_airbyte_emitted_at`` (rows with equal ones are the same version, kept once);
* ``_airbyte_start_at``: the cursor value (``_airbyte_emitted_at`` when the
  stream has no cursor);
* ``_airbyte_end_at``: the start of the next version of the same key; null
  for the latest;
* ``_airbyte_active_row``: true for the latest version of a key, unless that
  version is deleted (``_ab_cdc_deleted_at`` set): then the key has no active row.

Versions are ordered by cursor (nulls oldest), ties broken by
``_airbyte_emitted_at``, then ``_airbyte_ab_id``. The final table has the
active rows, with ``_airbyte_unique_key``.

An incremental run recomputes the history of the keys its new rows touch
only: their older versions are read from the current SCD table, the other
keys' rows are kept as they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from framework.normalization.plan import (
    ACTIVE_ROW,
    END_AT,
    START_AT,
    UNIQUE_KEY,
    UNIQUE_KEY_SCD,
    StreamPlan,
)
from framework.normalization.transform import as_text, hashid

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def scd_columns(plan: StreamPlan) -> list[str]:
    root = plan.root
    return [root.ab_id, root.emitted_at, root.hashid, root.normalized_at, UNIQUE_KEY, UNIQUE_KEY_SCD, START_AT,
            END_AT, ACTIVE_ROW] + [c.name for c in root.columns]


def final_columns(plan: StreamPlan) -> list[str]:
    root = plan.root
    return [root.ab_id, root.emitted_at, root.hashid, root.normalized_at, UNIQUE_KEY] + [c.name for c in root.columns]


def _q(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col(f"`{name}`")


def versions(rows: DataFrame, plan: StreamPlan) -> DataFrame:
    """Root table rows with their unique keys and start (the columns the history is computed from)."""
    from pyspark.sql import functions as F

    root = plan.root
    key = hashid([as_text(_q(c.name), c.type) for c in plan.primary_key])
    start = _q(plan.cursor.name) if plan.cursor else _q(root.emitted_at)
    with_key = rows.withColumn(UNIQUE_KEY, key).withColumn(START_AT, start)
    start_text = as_text(_q(START_AT), plan.cursor.type if plan.cursor else "timestamp")
    return with_key.withColumn(UNIQUE_KEY_SCD, hashid([_q(UNIQUE_KEY), start_text,
                                                      F.unix_micros(_q(root.emitted_at)).cast("string")]))


def history(new_rows: DataFrame, plan: StreamPlan, old_scd: DataFrame | None, normalized_at: datetime) -> DataFrame:
    """The SCD table after adding ``new_rows`` (root table rows) to ``old_scd`` (None: no history yet)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    root = plan.root
    base = [c for c in scd_columns(plan) if c not in (END_AT, ACTIVE_ROW)]
    fresh = versions(new_rows, plan).select(*[_q(c) for c in base])
    if old_scd is not None:
        touched = fresh.select(UNIQUE_KEY).distinct()
        old = old_scd.select(*[_q(c) for c in base])
        kept = old_scd.join(touched, UNIQUE_KEY, "left_anti").select(*[_q(c) for c in scd_columns(plan)])
        fresh = old.join(touched, UNIQUE_KEY, "left_semi").select(*[_q(c) for c in base]).unionByName(fresh)
    else:
        kept = None
    once = Window.partitionBy(UNIQUE_KEY_SCD).orderBy(_q(root.ab_id))
    fresh = fresh.withColumn("__copy", F.row_number().over(once)).where(F.col("__copy") == 1).drop("__copy")
    order = Window.partitionBy(UNIQUE_KEY).orderBy(_q(START_AT).desc_nulls_last(), _q(root.emitted_at).desc(),
                                                   _q(root.ab_id).desc())
    latest = F.row_number().over(order) == 1
    alive = F.lit(True) if plan.deleted_at is None else _q(plan.deleted_at.name).isNull()
    recomputed = (fresh.withColumn(END_AT, F.lag(_q(START_AT), 1).over(order))
                  .withColumn(ACTIVE_ROW, latest & alive)
                  .withColumn(root.normalized_at, F.lit(normalized_at))
                  .select(*[_q(c) for c in scd_columns(plan)]))
    return recomputed if kept is None else kept.unionByName(recomputed)


def active_rows(scd: DataFrame, plan: StreamPlan) -> DataFrame:
    """The final (deduplicated) table: the active rows of the SCD table."""
    return scd.where(_q(ACTIVE_ROW)).select(*[_q(c) for c in final_columns(plan)])


__all__ = ["active_rows", "final_columns", "history", "scd_columns", "versions"]
