"""The driver's side of a stream landed as a table (`--format delta|iceberg`): its state, and its commits.

The tasks write the stream's Parquet files straight into the table's data folder (no staging: a file no commit
names is read by no table reader). The driver commits them with the stream's state, in one commit:

* **append** (incremental, or `--sync-mode append`): a commit at each checkpoint of the pipeline (the first
  groups as they come back, then at most one each `STATE_SAVE_SECONDS`), so a killed sync loses at most the work
  since its last commit, and a long sync's records appear as it goes;
* **overwrite** (full refresh): one commit at the end that replaces the table's files (the older ones stay
  reachable by time travel until vacuumed or expired); a failed overwrite commits nothing.

The state the next sync starts from is the state of the table's newest commit for the stream's app id
(:meth:`Table.last_state`); the state file beside the output is saved after each commit, so it never says more
than the table, and where the two differ (a driver killed between the commit and the save) the table wins. Each
commit carries a version one past the table's last for the app id: a commit made already is not made again, and
a second output pointing at the same table, which would start from the same version, fails with a message rather
than land the same window twice.

Orphans (files of a killed driver or of a failed overwrite) are removed at the start of the stream's next sync,
once older than :data:`ORPHAN_GRACE_SECONDS` (a writer of another output may still be about to commit younger
ones); until then no reader sees them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from framework.errors import StorageError
from framework.formats.rewrite import footer_schema
from framework.models.destination import DestinationSettings
from framework.storage import Storage
from framework.tables.base import CommitResult, CompactResult, DataFile, Table, TableCommit
from framework.tables.columns import stored_schema, table_types
from framework.tables.factory import app_id, open_table, table_key

if TYPE_CHECKING:
    import pyarrow as pa

#: How old an orphan must be before a sync removes it (seconds): longer than any sync's wait between its files
#: and their commit, so a concurrent writer's files about to be committed are never taken.
ORPHAN_GRACE_SECONDS = 6 * 3600.0


class StreamTable:
    """One stream's table during one sync (see the module docs)."""

    def __init__(self, table: Table, storage: Storage, *, app: str, data_key: str, declared: pa.Schema,
                 overwrite: bool, first_version: int, properties: Mapping[str, str], read_footers: bool):
        self.table = table
        self.storage = storage
        self.app = app
        self.data_key = data_key
        self.declared = declared
        self.overwrite = overwrite
        self.version = first_version
        self.properties = dict(properties)
        self.read_footers = read_footers
        self.pending: list[Mapping[str, Any]] = []
        self.commits: list[CommitResult] = []
        self.removed: Sequence[str] = ()
        self.added: list[str] = []  # the columns the sync's commits added
        self.existed = True  # whether the table was there before this sync
        #: the columns the table holds in another kind than the stream's schema: written in the table's types
        self.types: dict[str, pa.DataType] = {}

    @classmethod
    def open(cls, settings: DestinationSettings, storage: Storage, stream: str, namespace: str, *,
             declared: pa.Schema, overwrite: bool, sync_id: int, generation: int,
             read_footers: bool = False) -> tuple[StreamTable, Mapping[str, Any] | None]:
        """The stream's table and the state its newest commit carries (None: no commit yet); orphans older than
        the grace period are removed first."""
        table = open_table(settings, stream, namespace)
        app = app_id(stream, namespace)
        removed = table.remove_orphans(ORPHAN_GRACE_SECONDS)
        committed = table.last_state(app)
        opened = cls(table, storage, app=app, data_key=f"{table_key(stream, namespace)}/data",
                     declared=stored_schema(declared, settings.format.format_type), overwrite=overwrite,
                     first_version=(committed.version if committed is not None else 0) + 1,
                     properties={"airbyte.sync_id": str(sync_id), "airbyte.generation": str(generation)},
                     read_footers=read_footers)
        opened.removed = removed
        opened.existed = table.exists()
        opened.types = table_types(table.arrow_schema() if opened.existed else None, opened.declared)
        return opened, (committed.state if committed is not None else None)

    def commit(self, files: Sequence[Mapping[str, Any]], state: Mapping[str, Any] | None, *,
               final: bool) -> CommitResult | None:
        """Commit ``files`` (the tasks' written files, as dicts) with ``state``; an overwrite keeps them until its
        ``final`` commit. None when nothing was committed now."""
        self.pending.extend(files)
        if self.overwrite and not final:
            return None
        files, self.pending = self.pending, []
        data = tuple(self._data_file(f) for f in files)
        commit = TableCommit(data, self._schema(files), "overwrite" if self.overwrite else "append",
                             dict(state or {}), self.app, self.version, self.properties)
        result = self.table.commit(commit)
        if not result.committed:
            raise StorageError(
                f"the table at {self.table.location} already has a commit {self.version} of {self.app}: another "
                "sync (an output pointing at the same table) committed this stream's window first; this sync's "
                "files are left as orphans (removed later) and its state is not saved. Run one sync per table")
        self.version += 1
        self.commits.append(result)
        if self.existed or len(self.commits) > 1:  # a table's creation adds every column: not a change
            self.added.extend(name for name in result.schema_change.added if name not in self.added)
        return result

    def types_for_tasks(self) -> bytes:
        """:attr:`types` as the tasks get them (``TaskJob.table_types``): an Arrow schema, serialized."""
        import pyarrow as pa

        if not self.types:
            return b""
        return bytes(pa.schema(list(self.types.items())).serialize().to_pybytes())

    def compact(self) -> CompactResult:
        return self.table.compact()

    def _data_file(self, item: Mapping[str, Any]) -> DataFile:
        key = str(item["key"])
        if not key.startswith(self.data_key + "/"):
            raise StorageError(f"{self.storage.uri(key)} was written outside the table's data folder "
                               f"{self.table.data_location()}; it cannot be committed to the table")
        return DataFile(f"{self.table.data_location()}/{key[len(self.data_key) + 1:]}", int(item["bytes"]),
                        int(item["records"]))

    def _schema(self, files: Sequence[Mapping[str, Any]]) -> pa.Schema:
        """The columns of the commit: the declared ones, and where the ``evolve`` policy added some, the files'."""
        if not self.read_footers or not files:
            return self.declared
        import pyarrow as pa

        schemas = {footer_schema(self.storage, str(f["key"])).remove_metadata() for f in files}
        return pa.unify_schemas([self.declared, *schemas], promote_options="permissive")


__all__ = ["ORPHAN_GRACE_SECONDS", "StreamTable"]
