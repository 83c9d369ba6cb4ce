"""Settings of normalization: turning landed raw records into typed tables.

Normalization runs after a sync. It writes either Parquet tables beside the raw
files (a root of their own, ``<output>_normalized`` unless ``output`` says) or
tables in PostgreSQL (over JDBC). Names of tables made from nested
fields are shortened to the identifier limit of a naming dialect; the dialect
follows from the target unless it is given.
"""

from typing import Literal

from pydantic import model_validator

from framework.models.base import Model, Secret, spec

Target = Literal["parquet", "postgres"]
Dialect = Literal["postgres", "bigquery", "snowflake", "redshift", "mysql", "mssql", "oracle", "clickhouse", "spark"]
SyncMode = Literal["append", "overwrite", "append_dedup"]

# Longest identifier (in characters) each dialect accepts; None: no practical limit.
# The values are those Airbyte's basic normalization truncates names to.
IDENTIFIER_LIMITS: dict[str, int | None] = {
    "postgres": 63,
    "bigquery": 1024,
    "snowflake": 255,
    "redshift": 127,
    "mysql": 64,
    "mssql": 64,
    "oracle": 128,
    "clickhouse": 63,
    "spark": None,
}

# The dialect assumed for each target when `dialect` is left out.
DEFAULT_DIALECT: dict[str, str] = {"parquet": "spark", "postgres": "postgres"}


class NormalizationSettings(Model):
    """Whether and where landed records are normalized into typed tables."""

    enabled: bool = spec("Run normalization after each sync.", True, False)
    target: Target = spec(
        "Where normalized tables go: `parquet` writes them as Parquet beside the raw files (see `output`), "
        "`postgres` writes them into a PostgreSQL database reached through `jdbc_url`.",
        "postgres",
        "parquet",
    )
    dialect: Dialect | None = spec(
        "Naming rules used to shorten table and column names to the database's identifier limit; "
        "when left out, `spark` for the `parquet` target and `postgres` for the `postgres` target.",
        "snowflake",
        None,
    )
    jdbc_url: str | None = spec(
        "JDBC address of the PostgreSQL database; required when `target` is `postgres`.",
        "jdbc:postgresql://localhost:5432/warehouse",
        None,
    )
    jdbc_user: str | None = spec(
        "User to connect to the database as; may also be given inside `jdbc_url`.", "loader", None
    )
    jdbc_password: Secret = spec(
        "Password of `jdbc_user`; may also be given inside `jdbc_url`.", "s3cr3t-pa55", None
    )
    jdbc_schema: str = spec("Database schema the normalized tables are created in.", "analytics", "public")
    output: str | None = spec(
        "Where the `parquet` target's tables go, outside the raw files: a local folder or `s3://bucket/prefix`; "
        "beside the output, as `<output>_normalized`, when left out (required when the raw files fill a "
        "whole bucket).",
        "s3://warehouse/normalized",
        None,
    )
    destination_sync_mode: SyncMode | None = spec(
        "How normalized tables are updated for every stream: `append` adds rows, `overwrite` replaces the "
        "table, `append_dedup` keeps the latest row per primary key; each stream's own sync mode when left out.",
        "append_dedup",
        None,
    )

    @model_validator(mode="after")
    def _check_target(self) -> "NormalizationSettings":
        if self.target == "postgres":
            if not self.jdbc_url:
                raise ValueError("`jdbc_url` is required when `target` is `postgres`")
            if not self.jdbc_url.startswith("jdbc:postgresql:"):
                raise ValueError(
                    f"`jdbc_url` must be a PostgreSQL JDBC address starting with `jdbc:postgresql:`, "
                    f"got {self.jdbc_url!r}"
                )
            if self.output:
                raise ValueError("`output` only applies when `target` is `parquet`; postgres tables go to "
                                 "`jdbc_schema`")
        else:
            given = [name for name in ("jdbc_url", "jdbc_user", "jdbc_password") if getattr(self, name)]
            if given:
                raise ValueError(
                    f"`{given[0]}` only applies when `target` is `postgres` (target is `{self.target}`)"
                )
        if self.dialect is None:
            # The model is frozen; fill the derived default without marking the field as set.
            object.__setattr__(self, "dialect", DEFAULT_DIALECT[self.target])
        return self

    @property
    def identifier_limit(self) -> int | None:
        """Longest table or column name the dialect accepts, in characters; None when unlimited."""
        return IDENTIFIER_LIMITS[self.dialect or DEFAULT_DIALECT[self.target]]
