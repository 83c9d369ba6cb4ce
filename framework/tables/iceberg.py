"""A stream's Apache Iceberg table through pyiceberg: written Parquet files and the state in one snapshot.

The table's root is `location`; executors write data files into `<location>/data/` and Iceberg's metadata
lives in `<location>/metadata/`. A commit registers the written files as they are (pyiceberg's data files
made from each file's footer, no rewrite) in one snapshot whose summary carries the stream's state
(``airbyte.state``, JSON), ``airbyte.app-id`` and ``airbyte.version``: the catalog's pointer moves to the new
metadata in one step, so a crash leaves the files and the state together or neither. A commit for an
``app-id`` that already has that version (or a later one) is not made again. Append is a fast append;
overwrite is one snapshot deleting the table's current files and adding the new ones (the old files stay
reachable by time travel until their snapshots are expired). The schema evolves in the same commit
(`iceberg_schema.py`). Two writers: the catalog refuses a commit made on a stale snapshot; the commit is
tried again on the fresh one after checking the `app-id`'s version again, so a window never lands twice.

Column types are those of `--format parquet`. Parquet ``TIME(MICROS, isAdjustedToUTC=false)`` is Iceberg's
``time`` exactly; ``_airbyte_extracted_at`` is written in milliseconds and is a ``timestamptz`` column
(Iceberg readers read millisecond Parquet timestamps as microseconds).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from framework.errors import ConfigError, StorageError
from framework.masking import Masker
from framework.tables.base import (
    CommitResult,
    CommittedState,
    CompactResult,
    DataFile,
    SchemaChange,
    TableCommit,
)
from framework.tables.iceberg_catalog import (
    CatalogAccess,
    IcebergCatalogSettings,
    filesystem,
    fs_path,
    masker_for,
)
from framework.tables.iceberg_schema import EvolutionPlan, plan_evolution

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table as PyIcebergTable
    from pyiceberg.table.snapshots import Snapshot

APP_ID = "airbyte.app-id"
VERSION = "airbyte.version"
STATE = "airbyte.state"
COMPACTION = "airbyte.compaction"
#: The table property naming the catalog the table was made in (`IcebergCatalogSettings.identity`).
CATALOG = "airbyte.catalog"
#: Commits tried on a fresh snapshot when another writer committed first, before giving up.
COMMIT_ATTEMPTS = 5
#: A data file smaller than this is small for `compact`; small files are merged into files of `COMPACT_TARGET`.
SMALL_FILE_BYTES = 32 * 1024 * 1024
COMPACT_TARGET = 128 * 1024 * 1024
#: The envelope column a table this destination writes always has.
RAW_ID = "_airbyte_raw_id"
_TABLE_PROPERTIES = {"format-version": "2", "commit.retry.num-retries": "0",  # retried here, after the version check
                     "write.target-file-size-bytes": str(COMPACT_TARGET)}


def open_iceberg_table(location: str, namespace: str, name: str, catalog: Mapping[str, Any] | None,
                       storage_options: Mapping[str, str], *, clock: Callable[[], float] = time.time) -> IcebergTable:
    """The Iceberg table `namespace.name` at `location` in `catalog` (see `iceberg_catalog.py`)."""
    import importlib.util

    if importlib.util.find_spec("pyiceberg") is None:
        raise ConfigError("`--format iceberg` needs pyiceberg, which is not installed: "
                          "pip install 'manifest-framework[tables]'")
    settings = IcebergCatalogSettings.of(catalog)
    mask = masker_for(settings, storage_options)
    access = CatalogAccess(settings, storage_options, mask)
    return IcebergTable(_normal(location), (namespace, name), access, storage_options, mask, clock)


def _normal(location: str) -> str:
    location = location.rstrip("/")
    if location.startswith("file://"):
        location = location[len("file://"):]
    if "://" not in location:
        location = os.path.abspath(location)
    return location


class IcebergTable:
    """One stream's Iceberg table (meets `framework.tables.base.Table`)."""

    def __init__(self, location: str, identifier: tuple[str, str], access: CatalogAccess,
                 storage_options: Mapping[str, str], mask: Masker, clock: Callable[[], float]):
        self._location = location
        self.identifier = identifier
        self._access = access
        self._storage_options = dict(storage_options)
        self._mask = mask
        self._clock = clock

    @property
    def location(self) -> str:
        return self._location

    @property
    def name(self) -> str:
        return ".".join(self.identifier)

    def data_location(self) -> str:
        return f"{self._location}/data"

    # reading the table

    def exists(self) -> bool:
        with self._access.session() as catalog:
            return self._load(catalog) is not None

    def arrow_schema(self) -> pa.Schema | None:
        with self._access.session() as catalog:
            table = self._load(catalog)
            return None if table is None else table.schema().as_arrow()

    def last_state(self, app_id: str) -> CommittedState | None:
        with self._access.session() as catalog:
            table = self._load(catalog)
            found = None if table is None else _last_commit(table, app_id)
        if found is None:
            return None
        snapshot, props = found
        try:
            state = json.loads(props.get(STATE) or "{}")
        except ValueError:
            raise StorageError(f"the Iceberg table {self.name} at {self._location}: snapshot {snapshot.snapshot_id}"
                               f"'s `{STATE}` is not JSON; roll the table back to an earlier snapshot") from None
        return CommittedState(state=state, version=int(props[VERSION]), table_version=str(snapshot.snapshot_id))

    def plan_schema(self, schema: pa.Schema) -> EvolutionPlan:
        """How a commit of files written with `schema` would change the table (nothing for a new table):
        columns it lists as incompatible must be written as nulls of the table's type."""
        with self._access.session() as catalog:
            table = self._load(catalog)
            return EvolutionPlan() if table is None else self._plan(table, schema)

    def history(self) -> list[dict[str, Any]]:
        """The current snapshot's ancestry, newest first: snapshot id, time, operation, app-id, version, state."""
        from pyiceberg.table.snapshots import ancestors_of

        with self._access.session() as catalog:
            table = self._load(catalog)
            if table is None:
                return []
            rows = []
            for snapshot in ancestors_of(table.current_snapshot(), table.metadata):
                props = _props(snapshot)
                rows.append({"snapshot_id": snapshot.snapshot_id, "timestamp_ms": snapshot.timestamp_ms,
                             "operation": str(snapshot.summary.operation.value) if snapshot.summary else "",
                             "app_id": props.get(APP_ID), "version": props.get(VERSION),
                             "state": json.loads(props[STATE]) if STATE in props else None})
            return rows

    # committing

    def commit(self, commit: TableCommit) -> CommitResult:
        from pyiceberg.exceptions import CommitFailedException

        for _ in range(COMMIT_ATTEMPTS):
            try:
                with self._access.session(write=True) as catalog:
                    return self._commit_once(catalog, commit)
            except CommitFailedException:
                continue  # another writer committed first: check the version again on the fresh snapshot
        raise StorageError(f"the Iceberg table {self.name} at {self._location}: other writers committed first "
                           f"{COMMIT_ATTEMPTS} times; nothing of this sync's stream is committed, and the next sync "
                           "reads it again (run one sync per table at a time)")

    def _commit_once(self, catalog: Catalog, commit: TableCommit) -> CommitResult:
        from pyiceberg.table import TableProperties

        table = self._load(catalog)
        if table is None:
            table = self._create(catalog, commit.schema)
        done = _last_commit(table, commit.app_id)
        if done is not None and int(done[1][VERSION]) >= commit.version:
            return CommitResult(committed=False, table_version=str(done[0].snapshot_id))
        plan = self._plan(table, commit.schema)
        if plan.incompatible:
            columns = ", ".join(f"`{name}` ({old} in the table, {new} in the stream)"
                                for name, old, new in plan.incompatible)
            raise ConfigError(f"the Iceberg table {self.name} at {self._location} cannot take the stream's type of "
                              f"{columns}: Iceberg widens only int to long, float to double and a decimal's "
                              "precision; write those columns as nulls of the table's type, or run a full refresh "
                              "into a new table")
        properties = {**commit.properties, APP_ID: commit.app_id, VERSION: str(commit.version),
                      STATE: json.dumps(commit.state, sort_keys=True, separators=(",", ":"), default=str)}
        tx = table.transaction()
        if tx.table_metadata.name_mapping() is None:  # our files carry no field ids: columns are found by name
            mapping: dict[str, Any] = {
                TableProperties.DEFAULT_NAME_MAPPING: tx.table_metadata.schema().name_mapping.model_dump_json()}
            tx.set_properties(mapping)
        if plan.steps:
            with tx.update_schema() as update:
                plan.apply(update)
        data_files = self._data_files(tx.table_metadata, table.io, commit.files)
        snapshot = tx.update_snapshot(snapshot_properties=properties)
        if commit.mode == "overwrite":
            with snapshot.overwrite() as overwrite:
                for task in table.scan().plan_files():
                    overwrite.delete_data_file(task.file)
                for data_file in data_files:
                    overwrite.append_data_file(data_file)
        else:
            with snapshot.fast_append() as append:
                for data_file in data_files:
                    append.append_data_file(data_file)
        committed = self._commit_tx(tx)
        current = committed.current_snapshot()
        return CommitResult(committed=True, table_version=str(current.snapshot_id if current else ""),
                            schema_change=SchemaChange(added=plan.added, widened=plan.widened))

    def _commit_tx(self, tx: Any) -> PyIcebergTable:
        from pyiceberg.exceptions import CommitFailedException

        try:
            return tx.commit_transaction()
        except CommitFailedException:
            raise
        except OSError as exc:
            raise StorageError(self._mask(f"the Iceberg table {self.name} at {self._location}: its metadata could "
                                          f"not be written ({exc}); nothing is committed")) from None

    def _data_files(self, metadata: Any, io: Any, files: Sequence[DataFile]) -> list[Any]:
        """Iceberg's data files for the written Parquet files, each file's footer read for its statistics.

        What pyiceberg's `add_files` does per file, with the work that depends only on the schema (the
        compatibility check, the statistics plan, the column ids) done once per commit and per file schema:
        a 1,000-file commit then takes a second instead of several."""
        from concurrent.futures import ThreadPoolExecutor

        import pyarrow.parquet as pq
        from pyiceberg.io.pyarrow import (
            _check_pyarrow_schema_compatible,
            compute_statistics_plan,
            data_file_statistics_from_parquet_metadata,
            parquet_path_to_id_mapping,
        )
        from pyiceberg.manifest import DataFile as IcebergDataFile
        from pyiceberg.manifest import DataFileContent, FileFormat

        schema = metadata.schema()
        spec = metadata.spec()
        stats_columns = compute_statistics_plan(schema, metadata.properties)
        column_ids = parquet_path_to_id_mapping(schema)
        checked: set[str] = set()

        def one(file: DataFile) -> Any:
            try:
                input_file = io.new_input(file.path)
                with input_file.open() as stream:
                    footer = pq.read_metadata(stream)
                size = len(input_file)
                arrow = footer.schema.to_arrow_schema()
                key = arrow.to_string(show_field_metadata=False)
                if key not in checked:
                    _check_pyarrow_schema_compatible(schema, arrow, format_version=metadata.format_version)
                    checked.add(key)
            except (OSError, ValueError) as exc:
                raise StorageError(self._mask(
                    f"the Iceberg table {self.name}: the data file {file.path} cannot be committed ({exc}); "
                    "nothing is committed, and the next sync reads its records again")) from None
            statistics = data_file_statistics_from_parquet_metadata(
                parquet_metadata=footer, stats_columns=stats_columns, parquet_column_mapping=column_ids)
            return IcebergDataFile.from_args(
                content=DataFileContent.DATA, file_path=file.path, file_format=FileFormat.PARQUET,
                partition=statistics.partition(spec, schema), file_size_in_bytes=size, sort_order_id=None,
                spec_id=metadata.default_spec_id, equality_ids=None, key_metadata=None,
                **statistics.to_serialized_dict())

        if len(files) < 8 or "://" not in self._location:  # local footers: the GIL, not the disk, bounds them
            return [one(file) for file in files]
        with ThreadPoolExecutor(max_workers=16) as pool:  # on S3 each footer is a request: overlap them
            return list(pool.map(one, files))

    # loading and creating, with the layout checked

    def _load(self, catalog: Catalog) -> PyIcebergTable | None:
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        try:
            table = catalog.load_table(self.identifier)
        except (NoSuchTableError, NoSuchNamespaceError):
            return self._recover(catalog)
        except OSError as exc:
            raise ConfigError(self._mask(f"destination setting `format.catalog`: {self._access.settings.describe()}"
                                         f" cannot load {self.name} ({exc}); check that it is reachable")) from None
        if _normal(table.location()) != self._location:
            raise ConfigError(f"the Iceberg table {self.name} in {self._access.settings.describe()} lives at "
                              f"{table.location()}, not at {self._location}: another output uses that name; give "
                              "this output its own catalog (`format.catalog.path`) or another namespace")
        return table

    def _recover(self, catalog: Catalog) -> PyIcebergTable | None:
        """The table's catalog entry is missing: refuse another format's table at the location, and register
        an Iceberg table found there (its newest metadata file) so neither its data nor its state is lost."""
        fs = self._fs()
        self._check_bucket(fs)
        entries = self._list(fs, self._location, recursive=False)
        names = {os.path.basename(path) for path in entries}
        if "_delta_log" in names:
            raise ConfigError(f"{self._location} holds a Delta table, not an Iceberg one: choose `--format delta` "
                              "for this output, or another output for Iceberg")
        metadata = sorted(path for path in self._list(fs, f"{self._location}/metadata", recursive=False)
                          if path.endswith(".metadata.json"))
        if not metadata:
            return None
        newest = self._uri(max(metadata, key=_metadata_version))
        from pyiceberg.table import StaticTable

        recorded = StaticTable.from_metadata(newest, self._access.io_properties).properties.get(CATALOG)
        ours = self._access.settings.identity()
        if recorded != ours:  # another output's table: registering it here would fork its history
            where = f"in the catalog {recorded}" if recorded else "by another writer"
            raise ConfigError(f"the Iceberg table at {self._location} was made {where}, not in {ours}: two outputs "
                              "must not share a table location; give this output its own location, or use that "
                              "table's catalog (`format.catalog`)")
        catalog.create_namespace_if_not_exists(self.identifier[0])
        return catalog.register_table(self.identifier, newest)

    def _create(self, catalog: Catalog, schema: pa.Schema) -> PyIcebergTable:
        from pyiceberg.exceptions import TableAlreadyExistsError

        try:
            catalog.create_namespace_if_not_exists(self.identifier[0])
            return catalog.create_table(self.identifier, schema=schema, location=self._location,
                                        properties={**_TABLE_PROPERTIES, CATALOG: self._access.settings.identity()})
        except TableAlreadyExistsError:
            return catalog.load_table(self.identifier)
        except OSError as exc:
            raise ConfigError(self._mask(f"the Iceberg table {self.name} cannot be created at {self._location} "
                                         f"({exc}); give a writable output location")) from None

    def _plan(self, table: PyIcebergTable, schema: pa.Schema) -> EvolutionPlan:
        columns = {field.name for field in table.schema().fields}
        if RAW_ID in schema.names and RAW_ID not in columns:
            raise ConfigError(f"the Iceberg table {self.name} at {self._location} was not written by this "
                              f"destination (it has no `{RAW_ID}` column; its columns: {', '.join(sorted(columns))})"
                              ": choose another output or namespace")
        return plan_evolution(table.schema(), schema)

    # files no snapshot names

    def orphans(self) -> Sequence[str]:
        return [path for path, _ in self._orphans()]

    def remove_orphans(self, older_than_seconds: float) -> Sequence[str]:
        cutoff = self._clock() - older_than_seconds
        old = [path for path, mtime in self._orphans() if mtime < cutoff]
        fs = self._fs()
        for path in old:
            try:
                fs.delete_file(fs_path(path))
            except FileNotFoundError:
                pass
        return old

    def _orphans(self) -> list[tuple[str, float]]:
        import pyarrow.fs as pafs

        with self._access.session() as catalog:
            table = self._load(catalog)
            referenced = set() if table is None else {fs_path(path) for path in _all_data_files(table)}
        fs = self._fs()
        try:
            infos = fs.get_file_info(pafs.FileSelector(fs_path(self.data_location()), recursive=True,
                                                       allow_not_found=True))
        except OSError as exc:
            raise StorageError(self._mask(f"cannot list {self.data_location()} ({exc})")) from None
        found = []
        for info in infos:
            if info.type != pafs.FileType.File or info.path in referenced:
                continue
            mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
            found.append((self._uri(info.path), mtime))
        return sorted(found)

    # compaction

    def compact(self) -> CompactResult:
        """Merge small data files (under `SMALL_FILE_BYTES`) into files of up to `COMPACT_TARGET` bytes in one
        snapshot. pyiceberg 0.12 has no compaction of its own: the files are read through pyiceberg's scan (in
        the table's current schema) and written by its writer; the snapshot carries the newest state again."""
        from pyiceberg.exceptions import CommitFailedException

        for _ in range(COMMIT_ATTEMPTS):
            try:
                with self._access.session(write=True) as catalog:
                    return self._compact_once(catalog)
            except CommitFailedException:
                continue
        raise StorageError(f"the Iceberg table {self.name}: other writers committed during compaction "
                           f"{COMMIT_ATTEMPTS} times; the table is left as it was")

    def _compact_once(self, catalog: Catalog) -> CompactResult:
        from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files

        table = self._load(catalog)
        if table is None:
            return CompactResult(0, 0)
        tasks = list(table.scan().plan_files())
        bins = _bins([task for task in tasks
                      if task.file.file_size_in_bytes < SMALL_FILE_BYTES and not task.delete_files])
        if not bins:
            return CompactResult(len(tasks), len(tasks))
        properties = {COMPACTION: "true"}
        newest = _newest_commit(table)
        if newest:  # the state goes on, so it survives when older snapshots are expired
            properties.update({key: newest[key] for key in (APP_ID, VERSION, STATE) if key in newest})
        tx = table.transaction()
        removed = added = 0
        with tx.update_snapshot(snapshot_properties=properties).overwrite() as rewrite:
            for group in bins:
                data = _stream(ArrowScan(table.metadata, table.io, table.schema(), _always_true())
                               .to_record_batches(group))
                if data is None:
                    continue
                for data_file in _dataframe_to_data_files(table_metadata=tx.table_metadata, df=data, io=table.io,
                                                          write_uuid=rewrite.commit_uuid):
                    rewrite.append_data_file(data_file)
                    added += 1
                for task in group:
                    rewrite.delete_data_file(task.file)
                    removed += 1
        self._commit_tx(tx)
        return CompactResult(files_before=len(tasks), files_after=len(tasks) - removed + added)

    # helpers

    def _fs(self) -> pafs.FileSystem:
        return filesystem(self._location, self._storage_options)

    def _check_bucket(self, fs: pafs.FileSystem) -> None:
        import pyarrow.fs as pafs

        if "://" not in self._location:
            return
        bucket = fs_path(self._location).split("/", 1)[0]
        try:
            missing = fs.get_file_info(bucket).type == pafs.FileType.NotFound
        except OSError as exc:
            raise ConfigError(self._mask(f"cannot reach the bucket of {self._location} ({exc}): check the output "
                                         "location, the endpoint and the credentials")) from None
        if missing:
            raise ConfigError(f"the bucket of {self._location} does not exist: check the output location "
                              "(`s3_bucket_name`) or create the bucket")

    def _list(self, fs: pafs.FileSystem, location: str, recursive: bool) -> list[str]:
        import pyarrow.fs as pafs

        try:
            infos = fs.get_file_info(pafs.FileSelector(fs_path(location), recursive=recursive, allow_not_found=True))
        except OSError as exc:
            raise ConfigError(self._mask(f"cannot list {location} ({exc}): check the output location and its "
                                         "credentials")) from None
        return [info.path for info in infos]

    def _uri(self, fs_path_: str) -> str:
        scheme = self._location.split("://", 1)[0] + "://" if "://" in self._location else ""
        return scheme + fs_path_


def _props(snapshot: Snapshot) -> dict[str, str]:
    return dict(snapshot.summary.additional_properties) if snapshot.summary else {}


def _last_commit(table: PyIcebergTable, app_id: str) -> tuple[Snapshot, dict[str, str]] | None:
    """The newest snapshot of the current ancestry that `app_id` made, with its summary's properties."""
    from pyiceberg.table.snapshots import ancestors_of

    for snapshot in ancestors_of(table.current_snapshot(), table.metadata):
        props = _props(snapshot)
        if props.get(APP_ID) == app_id and VERSION in props:
            return snapshot, props
    return None


def _newest_commit(table: PyIcebergTable) -> dict[str, str] | None:
    """The summary properties of the newest snapshot that carries a state (so compaction can carry it on)."""
    from pyiceberg.table.snapshots import ancestors_of

    for snapshot in ancestors_of(table.current_snapshot(), table.metadata):
        props = _props(snapshot)
        if APP_ID in props:
            return props
    return None


def _all_data_files(table: PyIcebergTable) -> set[str]:
    """Every data file a retained snapshot reads (time travel reads them): a manifest's live entries; an entry
    that says a snapshot deleted the file does not keep it (the snapshot before, while retained, does)."""
    from pyiceberg.manifest import ManifestContent

    paths: set[str] = set()
    seen: set[str] = set()
    for snapshot in table.metadata.snapshots:
        for manifest in snapshot.manifests(table.io):
            if manifest.manifest_path in seen or manifest.content != ManifestContent.DATA:
                continue
            seen.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                paths.add(entry.data_file.file_path)
    return paths


def _bins(tasks: list[Any]) -> list[list[Any]]:
    """Small files packed into groups of up to `COMPACT_TARGET` bytes; a group of one is left alone."""
    groups: list[list[Any]] = []
    current: list[Any] = []
    size = 0
    for task in sorted(tasks, key=lambda task: task.file.file_path):
        if current and size + task.file.file_size_in_bytes > COMPACT_TARGET:
            groups.append(current)
            current, size = [], 0
        current.append(task)
        size += task.file.file_size_in_bytes
    if current:
        groups.append(current)
    return [group for group in groups if len(group) > 1]


def _stream(batches: Iterator[pa.RecordBatch]) -> pa.RecordBatchReader | None:
    """The batches as a reader (pyiceberg's writer streams it: a group is never in memory whole), each in the
    first one's types (files of older schemas read as `string` where newer ones read as `large_string`)."""
    import pyarrow as pa

    first = next(batches, None)
    if first is None:
        return None
    schema = first.schema
    same = (batch if batch.schema.equals(schema) else batch.cast(schema) for batch in batches)
    return pa.RecordBatchReader.from_batches(schema, itertools.chain([first], same))


def _always_true() -> Any:
    from pyiceberg.expressions import AlwaysTrue

    return AlwaysTrue()


def _metadata_version(path: str) -> int:
    head = os.path.basename(path).split("-", 1)[0]
    return int(head) if head.isdigit() else -1


if TYPE_CHECKING:
    from framework.tables.base import Table

    def _meets_the_contract(table: IcebergTable) -> Table:  # mypy checks IcebergTable against the protocol
        return table
