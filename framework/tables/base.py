"""What a table format does for a sync: commit written Parquet files together with the stream's state.

Executors write a stream's records as Parquet data files inside the table's location (typed exactly as
for `--format parquet`); no reader sees them until the driver commits them. The driver then makes one
commit per stream (`TableCommit`): the files, the Arrow schema they were written with, append or
overwrite, and the stream's state, which the commit carries (Delta: the commit's metadata and an app
transaction `app_id`/`version`; Iceberg: the snapshot summary). The next sync reads its state back from
the table's last commit (`Table.last_state`), so data and state never disagree: a crash before the
commit leaves neither, after it both. A commit whose `app_id` already has `version` is not made again
(`CommitResult.committed` is false), so a retried commit cannot land the same files twice.

Files in the table's location that no commit names (a driver killed between writing and committing)
are orphans: `Table.orphans` lists them and `Table.remove_orphans` deletes those older than a grace period.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from msgspec import Struct, field

if TYPE_CHECKING:
    import pyarrow as pa

CommitMode = Literal["append", "overwrite"]


class DataFile(Struct, frozen=True):
    """One Parquet file already written inside the table's location (a local path or an `s3://` URI)."""

    path: str
    size_bytes: int
    record_count: int


class TableCommit(Struct, frozen=True):
    """One stream's commit: its new files and the state that says how far they reach."""

    files: tuple[DataFile, ...]
    schema: pa.Schema
    mode: CommitMode
    state: Mapping[str, Any]
    app_id: str
    version: int
    properties: Mapping[str, str] = field(default_factory=dict)


class SchemaChange(Struct, frozen=True):
    """How a commit changed the table's columns: nullable columns added, types widened."""

    added: tuple[str, ...] = ()
    widened: tuple[tuple[str, str, str], ...] = ()  # (column, old type, new type)


class CommitResult(Struct, frozen=True):
    """The commit made (its table version or snapshot id), or none when `app_id`/`version` was already there."""

    committed: bool
    table_version: str
    schema_change: SchemaChange = field(default_factory=SchemaChange)


class CommittedState(Struct, frozen=True):
    """The state the table's newest commit carries, with the `version` that commit was made for."""

    state: Mapping[str, Any]
    version: int
    table_version: str


class CompactResult(Struct, frozen=True):
    files_before: int
    files_after: int


class Table(Protocol):
    """One stream's table in one format; a value the driver makes per stream and per sync."""

    @property
    def location(self) -> str:
        """Where the table's files live: a local folder or an `s3://bucket/prefix` URI."""
        ...

    def data_location(self) -> str:
        """Where executors write the table's new data files (a folder under `location`)."""
        ...

    def exists(self) -> bool: ...

    def arrow_schema(self) -> pa.Schema | None:
        """The table's current columns as Arrow types, or None for a table not yet created."""
        ...

    def last_state(self, app_id: str) -> CommittedState | None:
        """The state the newest commit made for `app_id` carries, or None when there is none."""
        ...

    def commit(self, commit: TableCommit) -> CommitResult:
        """Commit the files and the state at once: create the table, or evolve its schema and append/overwrite."""
        ...

    def orphans(self) -> Sequence[str]:
        """Data files in `data_location()` that no commit of the table names."""
        ...

    def remove_orphans(self, older_than_seconds: float) -> Sequence[str]:
        """Delete the orphans older than the grace period; return what was deleted."""
        ...

    def compact(self) -> CompactResult:
        """Merge the table's small files through the library's own compaction, in one commit."""
        ...
