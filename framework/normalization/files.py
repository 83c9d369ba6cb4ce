"""Files under the output as Spark DataFrames, read and written by the executors through the sink's storage.

Spark here has no S3 file system, so objects on S3 are never handed to
Spark's own readers and writers: a DataFrame of object keys is spread over
the executors, and each task reads its files through
:func:`framework.storage.storage_for` (a local folder or S3) into Arrow
batches (:func:`read_files`), or writes the Arrow batches of its partition into
one Parquet object (:func:`write_parquet`), or cuts them into a stream's
tables and writes one object per table (:func:`write_tables`, under a local
output too). Under a local output,
:func:`write_parquet` uses Spark's own Parquet writer (no rows pass through
Python), and readers may use Spark's own reader. The driver only sees keys,
counts, schemas and Parquet footers.

Readers:

* ``parquet``: the landed typed files (or normalized tables), conformed to the
  Arrow schema given: missing columns become nulls, extra ones are dropped;
  rows at or before ``after_ms`` (``_airbyte_extracted_at``) are skipped with
  Parquet's row group statistics.
* ``text``: landed JSONL and CSV files (gzipped or not, with or without root
  level flattening) as ``(_airbyte_raw_id, _airbyte_extracted_at, _airbyte_data)``
  with the record as JSON text.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from framework.errors import ConfigError
from framework.formats import CountingSink
from framework.models.destination import DestinationSettings
from framework.normalization.plan import AB_ID
from framework.plugin_scan import plugin_scan_off
from framework.spark.connect import default_parallelism, is_connect
from framework.storage import LocalStorage, ObjectWriter, Storage, StreamLayout, storage_for
from framework.typed.envelope import DATA, EXTRACTED_AT, RAW_ID, TEXT_ENVELOPE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.normalization.tables import StreamTables

TEXT_SCHEMA = pa.schema([(RAW_ID, pa.string()), (EXTRACTED_AT, pa.timestamp("us", tz="UTC")), (DATA, pa.string())])
WRITTEN_DDL = "key string, rows long, max_emitted_at timestamp"
EXTENSIONS = {".parquet": "parquet", ".avro": "avro", ".csv": "text", ".csv.gz": "text", ".jsonl": "text",
              ".jsonl.gz": "text"}
_BATCH_ROWS = 65536
_GROUP_ROWS = 65536  # rows of a Parquet row group written by write_tables (a task holds one per table)


def landed_files(storage: Storage, destination: DestinationSettings, stream: str,
                 namespace: str = "") -> dict[str, list[str]]:
    """The keys of a stream's landed files by reader (``parquet``, ``avro``, ``text``), from every sync."""
    layouts = {ext: StreamLayout.of(destination, stream, namespace, extension=ext) for ext in EXTENSIONS}
    prefixes = {layout.scan_prefix for layout in layouts.values()}
    found: dict[str, list[str]] = {}
    for prefix in sorted(prefixes):
        for info in storage.list(prefix, with_metadata=False):
            for ext, layout in layouts.items():
                if layout.part_number_of(info.key) is not None:
                    found.setdefault(EXTENSIONS[ext], []).append(info.key)
                    break
    return found


def _storage(destination_json: Mapping[str, Any]) -> Storage:
    """The sink's storage in a task. The settings' validator is built on first use in each Python worker;
    pydantic's scan for plugins (every installed distribution's entry points, 0.4 to 0.9 s of CPU) is off
    for it unless the user set ``PYDANTIC_DISABLE_PLUGINS`` (plugins only observe validation)."""
    with plugin_scan_off():
        return storage_for(DestinationSettings.model_validate(destination_json))


def _source(storage: Storage, key: str) -> str | BinaryIO:
    """Something pyarrow opens: the file itself for a local storage, else the object's bytes."""
    if isinstance(storage, LocalStorage):
        return storage.path(key)
    data = storage.read(key)
    if data is None:
        raise ConfigError(f"{storage.uri(key)} disappeared while it was being read; run the normalization again")
    return io.BytesIO(data)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly the columns of ``schema``: missing ones null, types cast where they differ."""
    columns = []
    for target in schema:
        index = table.schema.get_field_index(target.name)
        if index < 0:
            columns.append(pa.nulls(table.num_rows, target.type))
            continue
        column = table.column(index)
        if column.type != target.type:
            try:
                column = column.cast(target.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise ConfigError(f"column `{target.name}` of a file is {column.type}, the schema says "
                                  f"{target.type} ({exc}); run a full refresh sync to land the stream anew") from None
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def read_files(spark: SparkSession, destination_json: Mapping[str, Any], keys: Sequence[str], schema: pa.Schema,
               reader: str, *, after_ms: int | None = None, fields: Mapping[str, str] | None = None) -> DataFrame:
    """A DataFrame of the rows of the files ``keys``, read on the executors; see the module docs.

    ``fields`` (text files with root level flattening): JSON kind of each
    top-level field, so that CSV cells holding objects or arrays are parsed.
    """
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = pa.schema([pa.field(f.name, spark_arrow_type(f.type)) for f in schema])
    spark_schema = from_arrow_schema(schema)
    if not keys:
        return spark.createDataFrame([], spark_schema)
    slices = max(1, min(len(keys), default_parallelism(spark) * 2))
    if is_connect(spark):  # no SparkContext: the keys travel as a local table, spread round-robin
        listing = spark.createDataFrame([(k,) for k in keys], "key string").repartition(slices)
    else:
        listing = spark.createDataFrame(spark.sparkContext.parallelize([(k,) for k in keys], slices), "key string")
    fields = dict(fields or {})
    target = TEXT_SCHEMA if reader == "text" else schema

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        storage = _storage(destination_json)
        for batch in batches:
            for key in batch.column(0).to_pylist():
                if reader == "parquet":
                    yield from _parquet_batches(storage, key, target, after_ms)
                else:
                    yield from _text_batches(storage, key, after_ms, fields)

    return listing.mapInArrow(run, from_arrow_schema(target))


def spark_arrow_type(kind: pa.DataType) -> pa.DataType:
    """``kind`` as Spark takes it from Arrow: timestamps in microseconds (UTC), times as text."""
    if pa.types.is_timestamp(kind):
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_time(kind):
        return pa.string()
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, spark_arrow_type(f.type)) for f in kind])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(pa.field("item", spark_arrow_type(kind.value_type)))
    return kind


def _parquet_batches(storage: Storage, key: str, schema: pa.Schema,
                     after_ms: int | None) -> Iterator[pa.RecordBatch]:
    handle = pq.ParquetFile(_source(storage, key))
    present = set(handle.schema_arrow.names)
    columns = [name for name in schema.names if name in present]
    filters = None
    if after_ms is not None and EXTRACTED_AT in present:
        filters = [(EXTRACTED_AT, ">", datetime.fromtimestamp(after_ms / 1000, timezone.utc))]
    if filters is None:
        for batch in handle.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
            yield from conform(pa.Table.from_batches([batch]), schema).to_batches()
    else:
        table = pq.read_table(_source(storage, key), columns=columns, filters=filters)
        yield from conform(table, schema).to_batches(max_chunksize=_BATCH_ROWS)


def _text_batches(storage: Storage, key: str, after_ms: int | None,
                  fields: Mapping[str, str]) -> Iterator[pa.RecordBatch]:
    data = storage.read(key)
    if data is None:
        raise ConfigError(f"{storage.uri(key)} disappeared while it was being read; run the normalization again")
    if key.endswith(".gz"):
        data = gzip.decompress(data)
    rows = _csv_rows(data, fields) if ".csv" in key.rsplit("/", 1)[-1] else _jsonl_rows(data)
    ids: list = []
    ats: list = []
    texts: list = []
    for raw_id, at, text in rows:
        if after_ms is not None and at is not None and at <= after_ms:
            continue
        ids.append(raw_id)
        ats.append(at)
        texts.append(text)
        if len(ids) >= _BATCH_ROWS:
            yield _text_batch(ids, ats, texts)
            ids, ats, texts = [], [], []
    if ids:
        yield _text_batch(ids, ats, texts)


def _text_batch(ids: list, ats: list, texts: list) -> pa.RecordBatch:
    at = pa.array(ats, pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC"))
    return pa.RecordBatch.from_arrays([pa.array(ids, pa.string()), at, pa.array(texts, pa.string())],
                                      schema=TEXT_SCHEMA)


def _jsonl_rows(data: bytes) -> Iterator[tuple[Any, Any, Any]]:
    loads, dumps = orjson.loads, orjson.dumps
    for line in data.splitlines():
        if not line.strip():
            continue
        record = loads(line)
        if DATA in record:
            value = record[DATA]
            text = None if value is None else dumps(value).decode()
        else:
            text = dumps({k: v for k, v in record.items() if k not in TEXT_ENVELOPE}).decode()
        yield record.get(RAW_ID), _ms(record.get(EXTRACTED_AT)), text


def _csv_rows(data: bytes, fields: Mapping[str, str]) -> Iterator[tuple[Any, Any, Any]]:
    reader = csv.reader(io.StringIO(data.decode("utf-8"), newline=""))
    header = next(reader, None)
    if header is None:
        return
    at = {name: index for index, name in enumerate(header)}
    raw_id, extracted = at.get(RAW_ID), at.get(EXTRACTED_AT)
    if raw_id is None or extracted is None:
        raise ConfigError("a landed CSV file has no raw id or extraction time column; run a full refresh sync "
                          "to land the stream anew")
    if DATA in at:
        data_index = at[DATA]
        for row in reader:
            yield row[raw_id], _ms(row[extracted]), row[data_index] or None
        return
    columns = [(name, index, fields.get(name, "string")) for name, index in at.items() if name not in TEXT_ENVELOPE]
    for row in reader:
        record: dict[str, Any] = {}
        for name, index, kind in columns:
            cell = row[index] if index < len(row) else ""
            if cell == "":
                record[name] = None
            elif kind in ("object", "array", "json"):
                try:
                    record[name] = orjson.loads(cell)
                except orjson.JSONDecodeError:
                    record[name] = cell
            else:
                record[name] = cell
        yield row[raw_id], _ms(row[extracted]), orjson.dumps(record).decode()


def _ms(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value)
    if text.lstrip("-").isdigit():
        return int(text)
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def write_parquet(frame: DataFrame, destination_json: Mapping[str, Any], prefix: str,
                  emitted_at: str | None = "_airbyte_emitted_at") -> list[dict]:
    """Write ``frame`` as Parquet objects under ``prefix`` (one per non-empty partition; one empty file
    when the frame is empty, so the table keeps its schema). Returns ``{key, rows, max_emitted_at}`` per file.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(frame.schema, timezone="UTC")
    tag = uuid.uuid4().hex[:12]
    column = emitted_at if emitted_at in frame.columns else None
    storage = _storage(destination_json)
    if isinstance(storage, LocalStorage):
        written = _write_with_spark(frame, storage, prefix, tag, column)
        if written:
            return written
        return [_write_empty(storage, prefix, tag, arrow_schema)]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        part = context.partitionId() if context else 0
        writer: pq.ParquetWriter | None = None
        handle: ObjectWriter | None = None
        rows, latest = 0, None
        key = f"{prefix}/part-{part:05d}-{tag}.parquet"
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                if writer is None:
                    handle = _storage(destination_json).open_object(key)
                    # the Parquet writer only writes to (and tells) the sink, which an ObjectWriter does
                    writer = pq.ParquetWriter(CountingSink(cast(BinaryIO, handle)), batch.schema,
                                              compression="snappy")
                writer.write_batch(batch)
                rows += batch.num_rows
                if column is not None:
                    value = pc.max(batch.column(column)).as_py()
                    if value is not None and (latest is None or value > latest):
                        latest = value
            if writer is not None and handle is not None:
                writer.close()
                handle.commit()
        except BaseException:
            if handle is not None:
                handle.abort()
            raise
        if writer is not None:
            yield pa.RecordBatch.from_pylist([{"key": key, "rows": rows, "max_emitted_at": latest}],
                                             schema=_WRITTEN_ARROW)

    written = [row.asDict() for row in frame.mapInArrow(run, WRITTEN_DDL).collect()]
    return written or [_write_empty(storage, prefix, tag, arrow_schema)]


def write_tables(tables: StreamTables, destination_json: Mapping[str, Any], prefix: str,
                 emitted_at: str = "_airbyte_emitted_at") -> dict[str, list[dict]]:
    """Write every table of ``tables`` as Parquet objects under ``<prefix>/<table>`` in one pass over its
    record frame; returns each table's ``{key, rows, max_emitted_at}`` per file (as :func:`write_parquet`).

    Each task cuts its Arrow batches into the tables (:func:`framework.normalization.tables.split`) and
    writes one file per table it has rows of; a table no task has rows of gets one empty file.
    """
    from framework.normalization.tables import split

    layout = tables.layout()
    emitted = {name: emitted_at if emitted_at in schema.names else None for name, schema in layout.schemas}
    # ids, hashids and the records' JSON are (nearly) all distinct: a dictionary page would only be tried and dropped
    unique = {table.name: {table.ab_id, table.hashid, *([table.foreign] if table.foreign else [])}
              for table in layout.root.walk()}
    unique[layout.raw_table] = {AB_ID, DATA}
    dictionary = {name: [f.name for f in schema if f.name not in unique[name]] for name, schema in layout.schemas}
    tag = uuid.uuid4().hex[:12]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        part = context.partitionId() if context else 0
        storage = _storage(destination_json)
        files: dict[str, _TableFile] = {}
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                for name, rows in split(batch, layout).items():
                    if rows.num_rows == 0:
                        continue
                    if name not in files:
                        files[name] = _TableFile(storage, f"{prefix}/{name}/part-{part:05d}-{tag}.parquet",
                                                 rows.schema, emitted[name], dictionary[name])
                    files[name].write(rows)
            for file in files.values():
                file.close()
        except BaseException:
            for file in files.values():
                file.abort()
            raise
        if files:
            yield pa.RecordBatch.from_pylist(
                [{"table": name, "key": file.key, "rows": file.rows, "max_emitted_at": file.latest}
                 for name, file in files.items()], schema=_TABLE_WRITTEN_ARROW)

    found: dict[str, list[dict]] = {name: [] for name, _ in layout.schemas}
    for row in tables.records.mapInArrow(run, "table string, " + WRITTEN_DDL).collect():
        written = row.asDict()
        found[written.pop("table")].append(written)
    storage = _storage(destination_json)
    for name, schema in layout.schemas:
        if not found[name]:
            found[name] = [_write_empty(storage, f"{prefix}/{name}", tag, schema)]
    return found


def warm_workers(spark: SparkSession, destination_json: Mapping[str, Any]) -> threading.Thread | None:
    """Start the executors' Python workers in the background: one job of a one-row task per core that imports
    what :func:`write_tables`' tasks need and builds the sink's storage (its settings' validator), so the
    worker daemon starts and forks while the driver plans the stream (a cold JVM takes seconds to analyse and
    compile a record frame) rather than after it. Returns the thread (to join before the session may stop),
    or None on Spark Connect (the server's workers are its own). A warm-up that fails is left to the real job
    to report."""
    if is_connect(spark):
        return None

    def warm(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import framework.normalization.tables  # noqa: F401 - the splitting code and pyarrow.compute

        _storage(destination_json)

        for batch in batches:
            yield pa.record_batch([pa.array([0] * batch.num_rows, pa.int64())], names=["warmed"])

    def run() -> None:
        try:
            # a local table of one row per core: one task per core (an RDD of rows would start a second daemon)
            rows = spark.createDataFrame(pa.table({"core": list(range(default_parallelism(spark)))}))
            rows.mapInArrow(warm, "warmed bigint").collect()
        except Exception:  # noqa: BLE001 - see the docstring
            pass

    thread = threading.Thread(target=run, name="normalization-warm-up", daemon=True)
    thread.start()
    return thread


class _TableFile:
    """One Parquet object a task writes a table's rows into; rows are gathered into row groups of
    :data:`_GROUP_ROWS`."""

    def __init__(self, storage: Storage, key: str, schema: pa.Schema, emitted_at: str | None,
                 dictionary: list[str] | bool = True):
        self.key = key
        self.emitted_at = emitted_at
        self.rows = 0
        self.latest: datetime | None = None
        self._handle = storage.open_object(key)
        # the Parquet writer only writes to (and tells) the sink, which an ObjectWriter does
        self._writer = pq.ParquetWriter(CountingSink(cast(BinaryIO, self._handle)), schema, compression="snappy",
                                        use_dictionary=dictionary)
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, rows: pa.Table) -> None:
        self.rows += rows.num_rows
        if self.emitted_at is not None:
            value = pc.max(rows.column(self.emitted_at)).as_py()
            if value is not None and (self.latest is None or value > self.latest):
                self.latest = value
        self._pending.append(rows)
        self._pending_rows += rows.num_rows
        if self._pending_rows >= _GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=_GROUP_ROWS)
        self._pending, self._pending_rows = [], 0

    def close(self) -> None:
        self._flush()
        self._writer.close()
        self._handle.commit()

    def abort(self) -> None:
        self._handle.abort()


def _write_empty(storage: Storage, prefix: str, tag: str, arrow_schema: pa.Schema) -> dict:
    """One Parquet file of no rows (the table keeps its schema)."""
    key = f"{prefix}/part-00000-{tag}.parquet"
    sink = io.BytesIO()
    pq.write_table(arrow_schema.empty_table(), sink, compression="snappy")
    storage.write_atomic(key, sink.getvalue())
    return {"key": key, "rows": 0, "max_emitted_at": None}


def _write_with_spark(frame: DataFrame, storage: LocalStorage, prefix: str, tag: str, column: str | None) -> list[dict]:
    """Write ``frame`` under the local folder of ``prefix`` with Spark's Parquet writer (timestamps as
    microseconds, snappy); its files are renamed ``part-<n>-<tag>.parquet`` and Spark's other files removed.
    Rows and the newest ``column`` value of each file come from its footer.
    """
    folder = storage.path(prefix)
    conf = frame.sparkSession.conf
    option = "spark.sql.parquet.outputTimestampType"
    before = conf.get(option, None)
    conf.set(option, "TIMESTAMP_MICROS")
    try:
        frame.write.mode("overwrite").option("compression", "snappy").parquet(folder)
    finally:
        if before is None:
            conf.unset(option)
        else:
            conf.set(option, before)
    names = sorted(name for name in os.listdir(folder) if name.endswith(".parquet") and name[0] not in "._")
    written = []
    for number, name in enumerate(names):
        key = f"{prefix}/part-{number:05d}-{tag}.parquet"
        metadata = pq.read_metadata(os.path.join(folder, name))
        if metadata.num_rows == 0:
            os.remove(os.path.join(folder, name))
            continue
        latest = _max_of(os.path.join(folder, name), metadata, column) if column else None
        os.replace(os.path.join(folder, name), storage.path(key))
        written.append({"key": key, "rows": metadata.num_rows, "max_emitted_at": latest})
    kept = {key.rsplit("/", 1)[1] for key in (w["key"] for w in written)}
    for name in os.listdir(folder):
        if name not in kept:
            os.remove(os.path.join(folder, name))  # Spark's _SUCCESS and .crc files, empty parts
    return written


def _max_of(path: str, metadata: pq.FileMetaData, column: str) -> datetime | None:
    """The newest value of a timestamp ``column`` of a Parquet file: its row group statistics, else its values."""
    names = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
    if column not in names:
        return None
    index = names.index(column)
    latest = None
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(index).statistics
        if stats is None or not stats.has_min_max:
            if stats is not None and stats.null_count == metadata.row_group(group).num_rows:
                continue
            value = pc.max(pq.read_table(path, columns=[column]).column(0)).as_py()
            return None if value is None else _aware(value)
        value = _aware(stats.max)
        latest = value if latest is None or value > latest else latest
    return latest


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


_TABLE_WRITTEN_ARROW = pa.schema([("table", pa.string()), ("key", pa.string()), ("rows", pa.int64()),
                                  ("max_emitted_at", pa.timestamp("us", tz="UTC"))])
_WRITTEN_ARROW = pa.schema([("key", pa.string()), ("rows", pa.int64()),
                            ("max_emitted_at", pa.timestamp("us", tz="UTC"))])


__all__ = ["EXTENSIONS", "TEXT_SCHEMA", "conform", "landed_files", "read_files", "warm_workers", "write_parquet",
           "write_tables"]
