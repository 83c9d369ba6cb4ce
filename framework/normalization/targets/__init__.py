"""Where normalized tables go: the :class:`Target` protocol and :func:`open_target`.

A target holds named tables. Normalization reads a table's current content
(to extend its history, or to keep rows of untouched keys), asks for the
newest ``_airbyte_emitted_at`` it holds (the watermark of an incremental run),
and hands over the new content of a stream's tables in one :meth:`Target.publish`
call, which either takes effect for every table or for none.

Two targets: ``parquet`` (:class:`~framework.normalization.targets.parquet.ParquetTarget`,
tables as Parquet folders in a root beside the output, ``<output>_normalized/``) and ``postgres``
(``framework.normalization.targets.postgres.PostgresTarget``, tables in a
PostgreSQL schema written over JDBC).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from framework.errors import ConfigError
from framework.normalization.root import normalized_destination
from framework.normalization.targets.parquet import ParquetTarget
from framework.normalization.targets.postgres import PostgresTarget

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from framework.models.destination import DestinationSettings
    from framework.models.normalization import NormalizationSettings


class Target(Protocol):
    name: str                       # "parquet" | "postgres"
    dialect: str                    # naming dialect (IDENTIFIER_LIMITS key)

    def read_table(self, table: str) -> DataFrame | None:
        """The table's current content (lazily read), or None when there is no such table."""
        ...

    def publish(self, replace: Mapping[str, DataFrame], append: Mapping[str, DataFrame]) -> None:
        """Replace the content of the tables in ``replace`` and add rows to those in ``append``.

        All or nothing: when it fails, every table keeps its previous content.
        A table that does not exist yet is created from the DataFrame's schema.
        """
        ...

    def max_emitted_at(self, table: str) -> datetime | None:
        """The newest ``_airbyte_emitted_at`` of the table; None when the table is absent or empty."""
        ...


def open_target(spark: SparkSession, settings: NormalizationSettings, destination: DestinationSettings) -> Target:
    """The target ``settings.target`` names, for the output of ``destination``."""
    if settings.target == "parquet":  # in a root of its own, outside the raw files
        return ParquetTarget(spark, normalized_destination(destination, settings), dialect=settings.dialect or "spark")
    if settings.target == "postgres":
        return PostgresTarget(spark, settings)
    raise ConfigError(f"normalization target {settings.target!r} is not known; use `parquet` or `postgres`")


__all__ = ["Target", "open_target"]
