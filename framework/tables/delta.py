"""A stream's Delta Lake table through deltalake (delta-rs): Parquet files written elsewhere, committed with the state.

One commit per `TableCommit`: the add actions of the files the executors wrote under `data/` (no file is
rewritten), and in the same commit the stream's state in the commit's metadata (`airbyte.state`, with
`airbyte.app_id` and `airbyte.version`) and an app transaction (`txn`: appId, version). Delta's app transaction
is what makes a commit idempotent: a commit whose app id already reached its version is not made again, and two
writers that race on one version conflict in delta-rs's commit, so one lands and the other is told.

A new column of the stream's schema is added, nullable, by a metadata commit just before the data commit (delta-rs
adds columns only through its own `ALTER`): a crash between the two leaves a column with no values, never data
without its state. Delta has no TIME type: executors store time-of-day columns as ISO 8601 text
(:func:`framework.tables.columns.stored_schema`).

Orphans are the data files under `data/` that no commit of the log names (a driver killed between the files and
the commit): never read, since a Delta reader reads only what the log names, and removed after a grace period.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from framework.errors import ConfigError, StorageError
from framework.tables.base import CommitResult, CommittedState, CompactResult, SchemaChange, TableCommit

if TYPE_CHECKING:
    import pyarrow as pa
    from pyarrow import fs as pafs

#: The commit metadata keys this framework writes (read back by `last_state`).
STATE_KEY, APP_KEY, VERSION_KEY = "airbyte.state", "airbyte.app_id", "airbyte.version"
DATA_FOLDER = "data"
_LOG_FOLDER = "_delta_log"


class DeltaLakeTable:
    """One stream's Delta table at ``location`` (a local folder or ``s3://bucket/prefix``); see the module docs.

    ``storage_options`` are delta-rs's object store options (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...);
    ``filesystem`` lists and deletes the data files (a pyarrow file system; made from the options when None);
    ``clock`` is seconds since the epoch."""

    def __init__(self, location: str, storage_options: Mapping[str, str] | None = None, *,
                 filesystem: pafs.FileSystem | None = None, clock: Callable[[], float] = time.time):
        self._location = location.rstrip("/")
        self._options = dict(storage_options or {})
        self._fs = filesystem
        self._clock = clock

    @property
    def location(self) -> str:
        return self._location

    def data_location(self) -> str:
        return f"{self._location}/{DATA_FOLDER}"

    # ------------------------------------------------------------- reading

    def _open(self) -> Any:
        from deltalake import DeltaTable

        return DeltaTable(self._location, storage_options=self._options or None)

    def exists(self) -> bool:
        from deltalake import DeltaTable

        try:
            return bool(DeltaTable.is_deltatable(self._location, storage_options=self._options or None))
        except Exception as exc:  # noqa: BLE001 - an unreachable store: one message naming it
            raise StorageError(f"the Delta table at {self._location} cannot be read ({_gist(exc)}); check the "
                               "output's address and credentials") from None

    def arrow_schema(self) -> pa.Schema | None:
        import pyarrow as pa

        if not self.exists():
            return None
        return pa.schema(self._open().schema().to_arrow())

    def last_state(self, app_id: str) -> CommittedState | None:
        if not self.exists():
            return None
        table = self._open()
        version = table.transaction_version(app_id)
        if version is None:
            return None
        for entry in table.history():  # newest first
            if entry.get(APP_KEY) == app_id and entry.get(VERSION_KEY) == str(version):
                return CommittedState(json.loads(entry.get(STATE_KEY) or "null") or {}, int(version),
                                      str(entry.get("version", table.version())))
        # the app transaction is there but its commit left the history (log cleanup): the version alone
        return CommittedState({}, int(version), str(table.version()))

    # ------------------------------------------------------------- commits

    def commit(self, commit: TableCommit) -> CommitResult:
        import pyarrow as pa
        from deltalake import Field, Schema
        from deltalake.transaction import CommitProperties, Transaction, create_table_with_add_actions

        metadata = {**commit.properties, STATE_KEY: json.dumps(dict(commit.state), sort_keys=True, default=str),
                    APP_KEY: commit.app_id, VERSION_KEY: str(commit.version)}
        properties = CommitProperties(custom_metadata=metadata,
                                      app_transactions=[Transaction(commit.app_id, commit.version)])
        adds = [self._add_action(f) for f in commit.files]
        try:
            if not self.exists():
                create_table_with_add_actions(self._location, Schema.from_arrow(commit.schema), adds,
                                              mode="error", storage_options=self._options or None,
                                              commit_properties=properties)
                return CommitResult(True, "0", SchemaChange(added=tuple(commit.schema.names)))
            table = self._open()
            done = table.transaction_version(commit.app_id)
            if done is not None and done >= commit.version:
                return CommitResult(False, str(table.version()))
            current = pa.schema(table.schema().to_arrow())
            added = tuple(f for f in commit.schema if f.name not in current.names)
            if added:
                table.alter.add_columns([Field.from_arrow(f.with_nullable(True)) for f in added])
                table = self._open()
                current = pa.schema(table.schema().to_arrow())
            table.create_write_transaction(adds, mode=commit.mode, schema=current, commit_properties=properties)
            table = self._open()
            return CommitResult(True, str(table.version()), SchemaChange(added=tuple(f.name for f in added)))
        except Exception as exc:
            if "transaction" in str(exc).lower() and "conflict" in str(exc).lower():
                raise StorageError(
                    f"another sync committed to the Delta table at {self._location} at the same time "
                    f"({_gist(exc)}); this sync's files there were not committed and are removed as orphans. Point "
                    "one output at one table (the output's lease then keeps syncs apart)") from None
            raise

    def _add_action(self, file: Any) -> Any:
        from deltalake.transaction import AddAction

        path = file.path
        prefix = self._location + "/"
        if not path.startswith(prefix):
            raise StorageError(f"{path} is not inside the Delta table at {self._location}: a table commits only "
                               "files under its own folder")
        return AddAction(path[len(prefix):], file.size_bytes, {}, int(self._clock() * 1000), True,
                         json.dumps({"numRecords": file.record_count}))

    # -------------------------------------------------------------- orphans

    def _filesystem(self) -> tuple[pafs.FileSystem, str]:
        from pyarrow import fs as pafs

        if self._fs is not None:
            return self._fs, _path_of(self._location)
        if self._location.startswith(("s3://", "s3a://")):
            options = self._options
            s3 = pafs.S3FileSystem(
                access_key=options.get("AWS_ACCESS_KEY_ID"), secret_key=options.get("AWS_SECRET_ACCESS_KEY"),
                session_token=options.get("AWS_SESSION_TOKEN"), region=options.get("AWS_REGION") or None,
                endpoint_override=options.get("AWS_ENDPOINT_URL") or None)
            return s3, _path_of(self._location)
        return pafs.LocalFileSystem(), self._location

    def _data_files(self) -> list[Any]:
        from pyarrow import fs as pafs

        filesystem, root = self._filesystem()
        selector = pafs.FileSelector(f"{root}/{DATA_FOLDER}", recursive=True, allow_not_found=True)
        return [info for info in filesystem.get_file_info(selector)
                if info.type == pafs.FileType.File and not info.base_name.startswith((".", "_"))]

    def _named_by_log(self) -> set[str]:
        """Every data path an add or remove action of the log names (relative to the table), plus the current
        files (a checkpoint's, when older commit files were cleaned up)."""
        from pyarrow import fs as pafs

        filesystem, root = self._filesystem()
        named: set[str] = set()
        if not self.exists():
            return named
        selector = pafs.FileSelector(f"{root}/{_LOG_FOLDER}", allow_not_found=True)
        for info in filesystem.get_file_info(selector):
            if info.type != pafs.FileType.File or not info.base_name.endswith(".json"):
                continue
            with filesystem.open_input_stream(info.path) as stream:
                for line in stream.read().decode("utf-8").splitlines():
                    action = json.loads(line) if line.strip() else {}
                    for kind in ("add", "remove"):
                        if kind in action:
                            named.add(_unquote(action[kind]["path"]))
        actions = self._open().get_add_actions(flatten=True)
        named.update(_unquote(str(p)) for p in actions.column("path").to_pylist())
        return named

    def _orphan_infos(self) -> list[Any]:
        _, root = self._filesystem()
        files = self._data_files()
        if not files:
            return []
        if not self.exists():
            return files
        current = {_unquote(str(p)) for p in self._open().get_add_actions(flatten=True).column("path").to_pylist()}
        candidates = [info for info in files if info.path[len(root) + 1:] not in current]
        if not candidates:  # the usual case: every file is the table's, no need to read the whole log
            return []
        named = self._named_by_log()
        return [info for info in candidates if info.path[len(root) + 1:] not in named]

    def orphans(self) -> Sequence[str]:
        return [self._uri(info.path) for info in self._orphan_infos()]

    def remove_orphans(self, older_than_seconds: float) -> Sequence[str]:
        filesystem, _ = self._filesystem()
        cutoff = self._clock() - older_than_seconds
        removed = []
        for info in self._orphan_infos():
            if info.mtime is not None and info.mtime.timestamp() > cutoff:
                continue
            filesystem.delete_file(info.path)
            removed.append(self._uri(info.path))
        return removed

    def _uri(self, path: str) -> str:
        return f"s3://{path}" if self._location.startswith(("s3://", "s3a://")) else path

    # ----------------------------------------------------------- compaction

    def compact(self) -> CompactResult:
        from deltalake.transaction import CommitProperties

        if not self.exists():
            return CompactResult(0, 0)
        table = self._open()
        before = len(table.file_uris())
        metrics = table.optimize.compact(commit_properties=CommitProperties(
            custom_metadata={"airbyte.operation": "compact"}))
        # the files no version within the table's retention reads (7 days by default) go: time travel within it
        # keeps working, and the table's folder does not grow with every compaction and overwrite
        self._open().vacuum(dry_run=False)
        return CompactResult(before, before - int(metrics.get("numFilesRemoved", 0))
                             + int(metrics.get("numFilesAdded", 0)))


def delta_storage_options(*, endpoint: str = "", region: str = "", access_key_id: str | None = None,
                          secret_access_key: str | None = None) -> dict[str, str]:
    """delta-rs's object store options for an S3 output (an endpoint such as MinIO's or moto's, keys, region)."""
    options: dict[str, str] = {}
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        options["AWS_ALLOW_HTTP"] = "true" if endpoint.startswith("http://") else "false"
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    if region:
        options["AWS_REGION"] = region
    if access_key_id and secret_access_key:
        options["AWS_ACCESS_KEY_ID"], options["AWS_SECRET_ACCESS_KEY"] = access_key_id, secret_access_key
    # S3 has conditional puts: delta-rs commits with them, safe for concurrent writers without a lock table
    options["AWS_CONDITIONAL_PUT"] = "etag"
    return options


def _path_of(uri: str) -> str:
    for scheme in ("s3://", "s3a://"):
        if uri.startswith(scheme):
            return uri[len(scheme):].rstrip("/")
    return uri.rstrip("/")


def _unquote(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path)


def _gist(exc: BaseException) -> str:
    """The first line of a delta-rs error (its Rust backtrace left out)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def open_delta_table(location: str, storage_options: Mapping[str, str] | None = None) -> DeltaLakeTable:
    """The Delta table at ``location``; a ``ConfigError`` when deltalake is not installed."""
    try:
        import deltalake  # noqa: F401
    except ImportError:
        raise ConfigError("--format delta needs the deltalake package: pip install 'manifest-framework[tables]'") \
            from None
    return DeltaLakeTable(location, storage_options)


__all__ = ["DeltaLakeTable", "delta_storage_options", "open_delta_table"]
