"""``spark.read.format("fastavro")``: landed Avro files as a DataFrame, for a Spark without spark-avro.

Spark reads Avro only through the spark-avro package, which PyPI's pyspark
does not include (``--packages org.apache.spark:spark-avro_2.13:<version>``
fetches it from Maven). Where it cannot be had, this Python data source
(Spark 4's ``pyspark.sql.datasource``) reads the files with fastavro on the
executors, one input partition per file::

    from framework.spark.avro_source import register

    register(spark)
    events = spark.read.format("fastavro").load("out/events")     # a folder, a file, or s3://bucket/prefix

The path is a local folder (every ``.avro`` file below it, hidden ``.`` and
internal ``_`` folders left out, as Spark leaves them out), one file, or an
``s3://bucket/prefix`` (credentials and region from boto3's usual chain;
``endpoint`` names another S3 server). With ``destination``, the path of the
destination JSON the sync ran with, the path is a stream's folder under its
root, read with its bucket, region, endpoint and keys::

    spark.read.format("fastavro").option("destination", "destination.json").load("events")
 The columns are those of every file's
schema (a stream whose schema grew reads as one table, older files null in
the newer columns), typed as spark-avro types them
(:mod:`framework.formats.avro_tables`), so a query works with either reader:
a union of several types is ``struct<member0, member1, ...>``, timestamps are
``timestamp``, and time-of-day is Spark's ``time``, which needs
``spark.sql.timeType.enabled`` (our sessions set it:
:data:`framework.spark.session.READS_OUR_OUTPUT`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pyarrow as pa
from pydantic import ValidationError
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from framework.errors import ConfigError
from framework.formats.avro_tables import avro_batches, avro_keys, merged_schema, writer_schema
from framework.models.destination import DestinationSettings
from framework.storage import storage_for
from framework.storage.objects import Storage

FORMAT_NAME = "fastavro"


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("fastavro")`` available in ``spark``."""
    spark.dataSource.register(AvroFilesDataSource)


class _Files:
    """Which Avro files a query reads: the settings of their storage and their keys there (picklable)."""

    def __init__(self, path: str, settings: DestinationSettings | None, endpoint: str | None):
        self.path = path
        prefix = ""
        if settings is None:  # a local folder or file, or an s3:// URI
            local = not path.startswith("s3://")
            single = local and os.path.isfile(path)
            root = os.path.abspath(os.path.expanduser(path)) if local else path  # the executors' view of it
            if single:
                root, prefix = os.path.split(root)
            elif local and not os.path.isdir(root):
                raise ConfigError(f"{path}: no such folder or file; give the stream's folder of an Avro sync "
                                  "(`<output>/<stream>`), one of its files, or s3://bucket/prefix")
            given: dict[str, object] = {"output": root, "format": {"format_type": "Avro"}}
            if endpoint:
                given["s3_endpoint"] = endpoint
            settings = DestinationSettings.model_validate(given)
        else:  # a stream folder (or a file) under the destination's root
            prefix = path.strip("/")
        self.settings = settings
        found = self.storage().list(prefix, with_metadata=False)
        if prefix.endswith(".avro"):
            self.keys = [info.key for info in found if info.key == prefix]
        else:
            under = prefix + "/" if prefix else ""
            self.keys = [under + key for key in avro_keys(info.key[len(under):] for info in found
                                                          if info.key.startswith(under))]
        if not self.keys:
            raise ConfigError(f"{path}: no Avro files (`.avro`) there; give the stream's folder of an Avro sync "
                              "(`<output>/<stream>`) or one of its files")

    def storage(self) -> Storage:
        return storage_for(self.settings)

    def schema_of(self, key: str) -> Mapping[str, Any]:
        """The writer schema of one file: from its header alone where the file is local."""
        if self.settings.target == "local" and self.settings.output:
            with open(os.path.join(self.settings.output, *key.split("/")), "rb") as handle:
                return writer_schema(handle)
        return writer_schema(io.BytesIO(self.read(key)))

    def read(self, key: str) -> bytes:
        data = self.storage().read(key)
        if data is None:
            raise ConfigError(f"{self.path}: the Avro file `{key}` was removed while it was read; run the query again")
        return data


def _destination(path: str) -> DestinationSettings:
    """The destination settings in the JSON file ``path`` (the file given to ``run-manifest --destination``)."""
    try:
        with open(path, "rb") as handle:
            data = orjson.loads(handle.read())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such destination file (the `destination` option)") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); give the destination JSON run-manifest landed with") from None
    try:
        return DestinationSettings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from None


class AvroFilesDataSource(DataSource):
    """The ``fastavro`` data source (see the module docs)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _files(self) -> _Files:
        options = {k.lower(): v for k, v in self.options.items()}
        path = options.get("path")
        if not path:
            raise ConfigError("spark.read.format('fastavro') needs a path: .load('out/<stream>')")
        destination = options.get("destination")
        return _Files(path, _destination(destination) if destination else None, options.get("endpoint"))

    def schema(self) -> StructType:
        files = self._files()
        return from_arrow_schema(merged_schema([files.schema_of(key) for key in files.keys]))

    def reader(self, schema: StructType) -> DataSourceReader:
        return _AvroReader(self._files(), schema)


class _AvroReader(DataSourceReader):
    def __init__(self, files: _Files, schema: StructType):
        self.files = files
        self.spark_schema = schema
        # Spark wants its own Arrow flavour back (microsecond timestamps, list items named `element`).
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(key) for key in self.files.keys]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        data = self.files.read(partition.value)
        # Every column of the merged schema: a field this file lacks is null.
        built = pa.schema([pa.field(f.name, _unspark(f.type)) for f in self.arrow_schema])
        for batch in avro_batches(io.BytesIO(data), built):
            yield batch.cast(self.arrow_schema)


def _unspark(kind: pa.DataType) -> pa.DataType:
    """Spark's Arrow type of a column as the records can be built in: nanosecond times as microseconds."""
    if pa.types.is_time(kind):
        return pa.time64("us")
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _unspark(f.type)) for f in kind])
    if pa.types.is_list(kind):
        return pa.list_(pa.field(kind.value_field.name, _unspark(kind.value_type)))
    if pa.types.is_map(kind):
        return pa.map_(_unspark(kind.key_type), _unspark(kind.item_type))
    return kind


__all__ = ["FORMAT_NAME", "AvroFilesDataSource", "register"]
