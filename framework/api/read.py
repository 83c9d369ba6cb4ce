"""``framework.read(...)``: a connector's streams as Spark DataFrames, read on the executors, nothing landed.

The reading is the DataFrame source's (:mod:`framework.spark.datasource`):
the driver plans each stream's units, the executors read and type the pages.
No state is kept: ``state`` reads only what is newer than it, once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from framework.api.sync import PathOrData, open_for_sync
from framework.spark import require_spark_extra

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["read"]


def read(manifest: str | os.PathLike[str], config: PathOrData, *, streams: Sequence[str] | None = None,
         spark: SparkSession | None = None, state: PathOrData | None = None, partitions: int | None = None,
         allow_custom_code: bool = False) -> dict[str, DataFrame]:
    """Each selected stream of ``manifest`` (all by default) as a DataFrame, by stream name: the envelope columns
    (``_airbyte_raw_id``, ``_airbyte_extracted_at``, ...) then the schema's fields. ``spark`` defaults to a
    local session. Bad input raises the framework's errors here, before Spark reads anything."""
    require_spark_extra()
    connector, selections, states = open_for_sync(manifest, config, state=state, streams=streams,
                                                  allow_custom_code=allow_custom_code)
    from framework.spark.datasource import stream_frames  # pyspark: only once the input is known good
    from framework.spark.session import spark_session

    session = spark if spark is not None else spark_session()
    return stream_frames(session, connector, os.fspath(manifest), [s.name for s in selections], states,
                         partitions=partitions)
