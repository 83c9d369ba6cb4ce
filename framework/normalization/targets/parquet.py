"""Normalized tables as Parquet folders in a root of their own: ``<output>_normalized/<table>/``.

The root is outside the raw output (:mod:`framework.normalization.root`), so
``<output>/**/*.parquet`` is raw data only. Each table folder holds only the
Parquet files of its current content, so Spark, pyarrow and DuckDB read it as
a plain dataset. Bookkeeping lives in ``<root>/_airbyte_normalization/``:

* ``tables.json``: per table its files, row count, newest
  ``_airbyte_emitted_at`` (the watermark of incremental runs) and Arrow schema;
* ``staging/<run>/<table>/``: the files of a publish being written;
* ``journal.json``: the publish being applied.

Publishing is all or nothing: (1) every new table version (or appended rows)
is written into staging by the executors; a failure here deletes the staging
files and leaves every table as it was; (2) the journal is written in one
step: from now on the publish *will* happen; (3) staged files are moved into
the table folders (a rename locally, copy and delete on S3) and the files of
replaced versions deleted; (4) ``tables.json`` is rewritten and the journal
removed. Every step of (3) and (4) can be done again, so a run that finds a
journal (the previous one crashed after step 2) finishes it first: it rolls
forward.
"""

from __future__ import annotations

import base64
import os
import shutil
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from framework.errors import FrameworkError
from framework.normalization.files import read_files, write_parquet, write_tables
from framework.normalization.root import META
from framework.normalization.tables import StreamTables
from framework.storage import LocalStorage, S3Storage, Storage, storage_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.models.destination import DestinationSettings

#: the tables' folders, under the target's root (framework.normalization.root)
ROOT = ""
JOURNAL = f"{META}/journal.json"
TABLES = f"{META}/tables.json"


class ParquetTarget:
    """Tables as Parquet folders in the normalized root (a local folder or S3): ``destination`` addresses that
    root (:func:`framework.normalization.root.normalized_destination`), not the raw files."""

    name = "parquet"

    def __init__(self, spark: SparkSession, destination: DestinationSettings, dialect: str = "spark",
                 storage: Storage | None = None):
        self.spark = spark
        self.destination = destination
        self.destination_json = destination.model_dump(mode="json", by_alias=True)
        self.dialect = dialect
        self.storage = storage if storage is not None else storage_for(destination)
        self._recovered = False

    def __repr__(self) -> str:
        return f"ParquetTarget({self.storage.uri()!r})"

    # ---------------------------------------------------------------- reading

    def table_uri(self, table: str) -> str:
        return self.storage.uri(f"{ROOT}{table}")

    def _tables(self) -> dict[str, dict]:
        self._recover()
        raw = self.storage.read(TABLES)
        return dict(orjson.loads(raw)["tables"]) if raw else {}

    def read_table(self, table: str) -> DataFrame | None:
        entry = self._tables().get(table)
        if entry is None:
            return None
        schema = _schema_of(entry["schema"])
        if self._local():
            from pyspark.sql.pandas.types import from_arrow_schema

            return self.spark.read.schema(from_arrow_schema(schema)).parquet(self.table_uri(table))
        return read_files(self.spark, self.destination_json, entry["files"], schema, "parquet")

    def max_emitted_at(self, table: str) -> datetime | None:
        entry = self._tables().get(table)
        if not entry or not entry.get("max_emitted_at"):
            return None
        return datetime.fromisoformat(entry["max_emitted_at"])

    # ------------------------------------------------------------- publishing

    def publish(self, replace: Mapping[str, DataFrame], append: Mapping[str, DataFrame]) -> None:
        tables = self._tables()
        run = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        staging = f"{META}/staging/{run}"
        changes: dict[str, dict] = {}
        try:
            for mode, frames in (("replace", replace), ("append", append)):
                if isinstance(frames, StreamTables):  # every table from one pass over the stream's records
                    schemas = dict(frames.schemas())
                    for table, written in write_tables(frames, self.destination_json, staging).items():
                        changes[table] = {"mode": mode, "written": written, "schema": _arrow_text(schemas[table])}
                    continue
                for table, frame in frames.items():
                    written = write_parquet(frame, self.destination_json, f"{staging}/{table}")
                    changes[table] = {"mode": mode, "written": written,
                                      "schema": _schema_text(frame)}
        except BaseException:
            self._delete_prefix(staging + "/")
            raise
        journal: dict[str, Any] = {"run": run, "staging": staging, "tables": {}}
        for table, change in changes.items():
            before = tables.get(table) if change["mode"] == "append" else None
            moved = [f"{ROOT}{table}/{w['key'].rsplit('/', 1)[1]}" for w in change["written"]]
            latest = [w["max_emitted_at"] for w in change["written"] if w["max_emitted_at"] is not None]
            if before and before.get("max_emitted_at"):
                latest.append(datetime.fromisoformat(before["max_emitted_at"]))
            journal["tables"][table] = {
                "mode": change["mode"],
                "moves": [[w["key"], key] for w, key in zip(change["written"], moved)],
                "files": (list(before["files"]) if before else []) + moved,
                "rows": (int(before["rows"]) if before else 0) + sum(int(w["rows"]) for w in change["written"]),
                "max_emitted_at": max(latest).isoformat() if latest else None,
                "schema": change["schema"],
            }
        self.storage.write_atomic(JOURNAL, orjson.dumps(journal))
        self._apply(journal)

    def _recover(self) -> None:
        if self._recovered:
            return
        raw = self.storage.read(JOURNAL)
        if raw is not None:
            self._apply(orjson.loads(raw))
        self._recovered = True

    def _apply(self, journal: Mapping[str, Any]) -> None:
        """Carry out a journal (again): move staged files in, drop replaced files, save ``tables.json``."""
        raw = self.storage.read(TABLES)
        tables = dict(orjson.loads(raw)["tables"]) if raw else {}
        for table, change in journal["tables"].items():
            for source, destination in change["moves"]:
                self._move(source, destination)
            if change["mode"] == "replace":
                keep = set(change["files"])
                stale = [info.key for info in self.storage.list(f"{ROOT}{table}/", with_metadata=False)
                         if info.key not in keep]
                self.storage.delete(stale)
            tables[table] = {k: change[k] for k in ("files", "rows", "max_emitted_at", "schema")}
        self.storage.write_atomic(TABLES, orjson.dumps({"tables": tables}, option=orjson.OPT_INDENT_2))
        self._delete_prefix(journal["staging"] + "/")
        self.storage.delete([JOURNAL])

    def _local(self) -> bool:
        return isinstance(self.storage, LocalStorage)

    def _move(self, source: str, destination: str) -> None:
        storage = self.storage
        if isinstance(storage, LocalStorage):
            src, dst = storage.path(source), storage.path(destination)
            if os.path.exists(src):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.replace(src, dst)
            return
        if not isinstance(storage, S3Storage):
            raise TypeError(f"cannot move objects in {storage!r}: neither a local folder nor S3")
        client, bucket = storage.client, storage.bucket
        if not _exists(storage, source):
            return  # moved by an earlier attempt
        try:
            client.copy_object(Bucket=bucket, Key=storage.full_key(destination),
                               CopySource={"Bucket": bucket, "Key": storage.full_key(source)})
        except Exception as exc:  # noqa: BLE001 - reported in plain words
            raise FrameworkError(f"could not move {self.storage.uri(source)} to {self.storage.uri(destination)} "
                                 f"({exc}); run the normalization again to finish the publish") from None
        self.storage.delete([source])

    def _delete_prefix(self, prefix: str) -> None:
        if isinstance(self.storage, LocalStorage):
            shutil.rmtree(self.storage.path(prefix.rstrip("/")), ignore_errors=True)
            return
        self.storage.delete([info.key for info in self.storage.list(prefix, with_metadata=False)])


def _exists(storage: Storage, key: str) -> bool:
    return any(info.key == key for info in storage.list(key, with_metadata=False))


def _schema_text(frame: DataFrame) -> str:
    from pyspark.sql.pandas.types import to_arrow_schema

    return _arrow_text(to_arrow_schema(frame.schema, timezone="UTC"))


def _arrow_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def _schema_of(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


__all__ = ["JOURNAL", "ROOT", "TABLES", "ParquetTarget"]
