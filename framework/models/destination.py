"""Settings of the sink: where synced records land and in which file format.

The JSON of an Airbyte S3 destination config validates here unchanged: same
keys, same enum strings, same defaults. On top of it we add a local or
``s3://`` ``output`` for runs without a bucket, a file roll-over size, the
normalization settings, and two change-data file formats (``replicant_csv``,
``replicant_json``) laid out like Replicant's S3 files.
"""

import re
from typing import Annotated, Literal

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from framework.models.base import Model, Secret, spec
from framework.models.normalization import NormalizationSettings

# ---------------------------------------------------------------- Avro codecs


class AvroNoCompression(Model):
    """Avro blocks are written as they are."""

    codec: Literal["no compression"] = spec("Codec name.", "no compression", "no compression")


class AvroDeflate(Model):
    """Avro blocks compressed with Deflate."""

    codec: Literal["Deflate"] = spec("Codec name.", "Deflate", "Deflate")
    compression_level: Annotated[int, Field(ge=0, le=9)] = spec(
        "Deflate level from 0 (fastest, no compression) to 9 (smallest, slowest).", 5, 0
    )


class AvroBzip2(Model):
    """Avro blocks compressed with bzip2."""

    codec: Literal["bzip2"] = spec("Codec name.", "bzip2", "bzip2")


class AvroXz(Model):
    """Avro blocks compressed with xz."""

    codec: Literal["xz"] = spec("Codec name.", "xz", "xz")
    compression_level: Annotated[int, Field(ge=0, le=9)] = spec(
        "xz preset from 0 (fastest) to 9 (smallest).", 6, 6
    )


class AvroZstandard(Model):
    """Avro blocks compressed with Zstandard."""

    codec: Literal["zstandard"] = spec("Codec name.", "zstandard", "zstandard")
    compression_level: Annotated[int, Field(ge=-5, le=22)] = spec(
        "Zstandard level from -5 (fastest) to 22 (smallest, memory hungry).", 3, 3
    )
    include_checksum: bool = spec("Store a checksum with every compressed block.", True, False)


class AvroSnappy(Model):
    """Avro blocks compressed with Snappy."""

    codec: Literal["snappy"] = spec("Codec name.", "snappy", "snappy")


AvroCodec = Annotated[
    AvroNoCompression | AvroDeflate | AvroBzip2 | AvroXz | AvroZstandard | AvroSnappy,
    Field(discriminator="codec"),
]

# --------------------------------------------------- CSV / JSONL compression


class NoCompression(Model):
    """Files are written uncompressed."""

    compression_type: Literal["No Compression"] = spec("Compression name.", "No Compression", "No Compression")


class Gzip(Model):
    """Files are gzipped; `.gz` is appended to their names."""

    compression_type: Literal["GZIP"] = spec("Compression name.", "GZIP", "GZIP")


Compression = Annotated[NoCompression | Gzip, Field(discriminator="compression_type")]
Flattening = Literal["No flattening", "Root level flattening"]

_PART_SIZE_DOC = (
    "Multipart upload part size from older Airbyte configs; accepted so those configs still validate, "
    "and ignored: files are written by Spark."
)

# -------------------------------------------------------------- Airbyte formats


class AvroFormat(Model):
    """Apache Avro container files."""

    format_type: Literal["Avro"] = spec("Format name.", "Avro", "Avro")
    compression_codec: AvroCodec = spec(
        "How Avro blocks are compressed.",
        {"codec": "zstandard", "compression_level": 3, "include_checksum": False},
        default_factory=AvroNoCompression,
    )
    part_size_mb: int | None = spec(_PART_SIZE_DOC, 5, None)

    @property
    def extension(self) -> str:
        return ".avro"


class CsvFormat(Model):
    """Comma-separated values with a header row."""

    format_type: Literal["CSV"] = spec("Format name.", "CSV", "CSV")
    flattening: Flattening = spec(
        "`No flattening` writes each record as one JSON column; `Root level flattening` writes each "
        "top-level field of the record as its own column.",
        "Root level flattening",
        "No flattening",
    )
    compression: Compression = spec(
        "Whether files are gzipped.", {"compression_type": "GZIP"}, default_factory=NoCompression
    )
    part_size_mb: int | None = spec(_PART_SIZE_DOC, 5, None)

    @property
    def extension(self) -> str:
        return ".csv.gz" if isinstance(self.compression, Gzip) else ".csv"


class JsonlFormat(Model):
    """Newline-delimited JSON: one record per line."""

    format_type: Literal["JSONL"] = spec("Format name.", "JSONL", "JSONL")
    flattening: Flattening = spec(
        "`No flattening` nests the record under one key; `Root level flattening` puts its top-level "
        "fields next to the metadata fields.",
        "Root level flattening",
        "No flattening",
    )
    compression: Compression = spec(
        "Whether files are gzipped.", {"compression_type": "GZIP"}, default_factory=NoCompression
    )
    part_size_mb: int | None = spec(_PART_SIZE_DOC, 5, None)

    @property
    def extension(self) -> str:
        return ".jsonl.gz" if isinstance(self.compression, Gzip) else ".jsonl"


ParquetCodec = Literal["UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD"]


class ParquetFormat(Model):
    """Apache Parquet columnar files."""

    format_type: Literal["Parquet"] = spec("Format name.", "Parquet", "Parquet")
    compression_codec: ParquetCodec = spec("How data pages are compressed.", "SNAPPY", "UNCOMPRESSED")
    block_size_mb: PositiveInt = spec(
        "Row group size in MB: what is buffered in memory before a row group is flushed. Bigger groups "
        "read faster and cost more memory while writing.",
        128,
        128,
    )
    max_padding_size_mb: NonNegativeInt = spec(
        "Most padding in MB added to align row groups with file system blocks.", 8, 8
    )
    page_size_kb: PositiveInt = spec(
        "Page size in KB; a page is the smallest unit compressed and read as a whole.", 1024, 1024
    )
    dictionary_page_size_kb: PositiveInt = spec(
        "Size in KB of the dictionary page kept per column and row group when dictionary encoding is on.",
        1024,
        1024,
    )
    dictionary_encoding: bool = spec("Encode repeated column values through a dictionary.", False, True)
    part_size_mb: int | None = spec(_PART_SIZE_DOC, 5, None)
    time_adjusted_to_utc: bool = spec(
        "Write time-of-day columns as Parquet `TIME(MICROS, isAdjustedToUTC=true)`, the S3 destination 1.0's "
        "exact form, which Spark's Parquet reader refuses (PARQUET_TYPE_ILLEGAL). By default (false) they are "
        "`TIME(MICROS, isAdjustedToUTC=false)`, which Spark 4 reads with `spark.sql.timeType.enabled=true`; "
        "the values are the same either way (a time with a timezone is converted to UTC).",
        True,
        False,
    )

    @property
    def extension(self) -> str:
        return ".parquet"


# ------------------------------------------------------------ table formats


class _TableFormat(Model):
    """A lakehouse table: Parquet data files (typed as for `Parquet`) committed with the stream's state."""

    compression_codec: ParquetCodec = spec("How the data files' pages are compressed.", "ZSTD", "SNAPPY")
    block_size_mb: PositiveInt = spec("Row group size in MB of the data files.", 128, 128)
    page_size_kb: PositiveInt = spec("Page size in KB of the data files.", 1024, 1024)
    dictionary_encoding: bool = spec("Encode repeated column values through a dictionary.", False, True)

    @property
    def extension(self) -> str:
        return ".parquet"

    def parquet(self) -> ParquetFormat:
        """The Parquet settings the executors write the table's data files with."""
        return ParquetFormat(compression_codec=self.compression_codec, block_size_mb=self.block_size_mb,
                             page_size_kb=self.page_size_kb, dictionary_encoding=self.dictionary_encoding)


class DeltaFormat(_TableFormat):
    """A Delta Lake table per stream (`<output>/<namespace>/<stream>/`), committed through delta-rs: the data
    files, the stream's state in the commit's metadata and an app transaction, in one commit. Delta has no
    time-of-day type: time columns are stored as ISO 8601 text (`HH:MM:SS.ffffff`)."""

    format_type: Literal["delta"] = spec("Format name.", "delta", "delta")


class IcebergSqliteCatalog(Model):
    """An embedded catalog in a SQLite file: nothing to start."""

    type: Literal["sqlite"] = spec("Catalog kind.", "sqlite", "sqlite")
    path: str | None = spec(
        "The SQLite file of the catalog; `<output>/_airbyte_state/iceberg_catalog.db` when left out. On S3 the "
        "file is an object: a sync fetches it and puts it back at each commit (the commit's last step).",
        "/var/lib/airbyte/iceberg_catalog.db",
        None,
    )


class IcebergRestCatalog(Model):
    """An Iceberg REST catalog (Polaris, Nessie, Glue's and others' REST endpoints)."""

    type: Literal["rest"] = spec("Catalog kind.", "rest", "rest")
    uri: str = spec("The catalog's REST endpoint.", "https://catalog.example.com/api/catalog")
    warehouse: str | None = spec("The warehouse the catalog names, where it asks for one.", "analytics", None)
    credential: Secret = spec("An OAuth2 client credential `client_id:client_secret`.", "client:secret", None)
    token: Secret = spec("A bearer token, instead of a credential.", "eyJhbGciOi...", None)
    properties: dict[str, str] = spec(
        "More of pyiceberg's catalog properties, passed as they are.", {"scope": "PRINCIPAL_ROLE:ALL"},
        default_factory=dict)


IcebergCatalog = Annotated[IcebergSqliteCatalog | IcebergRestCatalog, Field(discriminator="type")]


class IcebergFormat(_TableFormat):
    """An Apache Iceberg table per stream, committed through pyiceberg: an append of the written data files
    (no rewrite) with the stream's state in the snapshot summary."""

    format_type: Literal["iceberg"] = spec("Format name.", "iceberg", "iceberg")
    catalog: IcebergCatalog = spec(
        "Where the tables are registered: `sqlite` (default, a file inside the output) or a REST catalog.",
        {"type": "rest", "uri": "https://catalog.example.com/api/catalog", "warehouse": "analytics"},
        default_factory=IcebergSqliteCatalog,
    )
    namespace: str = spec(
        "The catalog namespace the stream tables go in (the stream's namespace, when it has one, wins).",
        "airbyte",
        "airbyte",
    )


#: The formats that land a table per stream rather than a folder of files.
TableFormat = DeltaFormat | IcebergFormat


# ------------------------------------------------------ change-data formats


class _ReplicantFormat(Model):
    """Change-data files laid out like Replicant's S3 output."""

    mode: Literal["snapshot", "realtime"] = spec(
        "`snapshot` writes one row per record with the table's columns; `realtime` writes one row per "
        "change with the before and after value and a presence flag for every column, then the operation "
        "type and recovery metadata.",
        "snapshot",
        "realtime",
    )
    image: Literal["changes", "full"] = spec(
        "In `realtime` mode, `changes` carries only the columns a change touched (the others are flagged "
        "absent), `full` carries every column of the row.",
        "full",
        "changes",
    )
    deleted_field: str = spec(
        "Record field whose non-null value marks a deleted row (written as a delete operation).",
        "deleted_at",
        "_ab_cdc_deleted_at",
    )
    catalog: str | None = spec(
        "Catalog part of the table namespace written with each change; null when left out.", "warehouse", None
    )
    schema_name: str | None = spec(
        "Schema part of the table namespace written with each change; the stream namespace when left out.",
        "sales",
        None,
        alias="schema",
    )


class ReplicantCsvFormat(_ReplicantFormat):
    """Replicant-style CSV: in realtime mode, three columns per table column plus three trailing ones."""

    format_type: Literal["replicant_csv"] = spec("Format name.", "replicant_csv", "replicant_csv")
    include_header: bool = spec("Start every file with a row of column names.", True, False)

    @property
    def extension(self) -> str:
        return ".csv"


class ReplicantJsonFormat(_ReplicantFormat):
    """Replicant-style JSON: in realtime mode one object per change with table name, operation,
    cursor, `before`, `after` and `exists`."""

    format_type: Literal["replicant_json"] = spec("Format name.", "replicant_json", "replicant_json")

    @property
    def extension(self) -> str:
        return ".json"


OutputFormat = Annotated[
    AvroFormat | CsvFormat | JsonlFormat | ParquetFormat | ReplicantCsvFormat | ReplicantJsonFormat | DeltaFormat
    | IcebergFormat,
    Field(discriminator="format_type"),
]

# ------------------------------------------------------------------- the sink

Region = Literal[
    "", "af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ca-central-1",
    "ca-west-1", "cn-north-1", "cn-northwest-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1",
    "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1",
    "sa-east-1", "us-east-1", "us-east-2", "us-gov-east-1", "us-gov-west-1", "us-west-1", "us-west-2",
]

#: What becomes of undeclared fields (framework/typed/drift.py holds the same three names).
SchemaDrift = Literal["drop", "keep", "evolve"]

# `s3a://` is the Hadoop connector's name for the same thing; both address a bucket and a prefix.
_S3_URI = re.compile(r"^s3a?://(?P<bucket>[^/]+)(?:/(?P<prefix>.*))?$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class DestinationSettings(Model):
    """Where and how synced records are written: an S3 bucket or a local folder."""

    s3_bucket_name: str | None = spec(
        "S3 bucket to write to; when left out, files go to `output`.", "airbyte_sync", None
    )
    s3_bucket_path: str = spec(
        "Folder inside the bucket under which everything is written; the bucket root when empty.",
        "data_sync/test",
        "",
    )
    s3_bucket_region: Region = spec(
        "AWS region of the bucket; the client's default region when empty.", "us-east-1", ""
    )
    s3_endpoint: str = spec(
        "URL of an S3-compatible service (MinIO, Ceph, ...); AWS when empty.", "http://localhost:9000", ""
    )
    access_key_id: Secret = spec(
        "AWS access key id, given together with `secret_access_key`; the default AWS credential chain "
        "(environment, profile, instance role) when left out.",
        "A012345678910EXAMPLE",
        None,
    )
    secret_access_key: Secret = spec(
        "Secret that goes with `access_key_id`.", "a012345678910ABCDEFGH/AbCdEfGhEXAMPLEKEY", None
    )
    role_arn: str | None = spec(
        "IAM role assumed to write to the bucket.", "arn:aws:iam::123456789012:role/connector-writer", None
    )
    s3_path_format: str | None = spec(
        "Layout of object keys under `s3_bucket_path`, with placeholders such as `${NAMESPACE}`, "
        "`${STREAM_NAME}`, `${YEAR}`, `${MONTH}`, `${DAY}`, `${HOUR}`, `${EPOCH}` and `${UUID}`; "
        "`${NAMESPACE}/${STREAM_NAME}/${YEAR}_${MONTH}_${DAY}_${EPOCH}_` when left out.",
        "${NAMESPACE}/${STREAM_NAME}/${YEAR}/${MONTH}/${DAY}/",
        None,
    )
    file_name_pattern: str | None = spec(
        "Name of each file, with placeholders such as `{date}`, `{date:yyyy_MM}`, `{timestamp}`, "
        "`{part_number}` and `{sync_id}`; a name from the time and a part number when left out.",
        "{date}_{part_number}",
        None,
    )
    format: OutputFormat = spec(
        "File format of the output, chosen by `format_type`.",
        {"format_type": "Parquet", "compression_codec": "SNAPPY"},
        default_factory=lambda: ParquetFormat(),
    )
    output: str | None = spec(
        "Where to write when no `s3_bucket_name` is given: a local folder or `s3://bucket/prefix`. "
        "Ignored when `s3_bucket_name` is set.",
        "./output",
        None,
    )
    file_size_limit_mb: PositiveInt = spec(
        "Size in MB after which the writer starts a new file.", 256, 128
    )
    compact: bool = spec(
        "After each sync, merge a Parquet stream's files smaller than half of `file_size_limit_mb` into files of "
        "up to `file_size_limit_mb` (as `run-manifest --compact`), atomically and with the state untouched.",
        True,
        False,
    )
    normalization: NormalizationSettings | None = spec(
        "Turning the landed records into typed tables after a sync; off when left out.",
        {"enabled": True, "target": "parquet"},
        None,
    )
    schema_drift: SchemaDrift = spec(
        "What becomes of record fields the stream's schema does not declare (Parquet and Avro): `drop` leaves "
        "them out, as Airbyte's S3 destination 1.0 does; `keep` adds the column `_airbyte_additional_properties` "
        "with them as JSON text; `evolve` adds a typed column per new top-level field, its type inferred from "
        "the values and kept for the next syncs. Every policy counts them in the run's summary.",
        "keep",
        "drop",
    )
    schema_drift_streams: dict[str, SchemaDrift] = spec(
        "Per stream, a `schema_drift` policy that replaces the one above for that stream.",
        {"events": "evolve"},
        default_factory=dict,
    )

    @model_validator(mode="after")
    def _check_location(self) -> "DestinationSettings":
        if not self.s3_bucket_name:
            if not self.output:
                raise ValueError("give `s3_bucket_name` or `output` (a local folder or `s3://bucket/prefix`)")
            if self.output.startswith(("s3://", "s3a://")):
                if not _S3_URI.match(self.output):
                    raise ValueError(f"`output` {self.output!r} is not of the form `s3://bucket/prefix`")
            elif _SCHEME.match(self.output):
                raise ValueError(
                    f"`output` {self.output!r} must be a local folder or an `s3://` address"
                )
        if isinstance(self.format, (DeltaFormat, IcebergFormat)):
            laid_out = [name for name in ("s3_path_format", "file_name_pattern") if getattr(self, name)]
            if laid_out:
                raise ValueError(
                    f"`{'` and `'.join(laid_out)}` do not apply to the `{self.format.format_type}` format: each "
                    "stream is one table at `<output>/<namespace>/<stream>/`; remove them")
        if bool(self.access_key_id) != bool(self.secret_access_key):
            given, missing = (
                ("access_key_id", "secret_access_key") if self.access_key_id else ("secret_access_key", "access_key_id")
            )
            raise ValueError(f"`{given}` needs `{missing}`: give both or neither")
        return self

    def schema_drift_for(self, stream: str) -> "SchemaDrift":
        """The schema drift policy of ``stream``: its own in `schema_drift_streams`, else `schema_drift`."""
        return self.schema_drift_streams.get(stream, self.schema_drift)

    @classmethod
    def default_local(cls, output: str = "./output") -> "DestinationSettings":
        """Snappy-compressed Parquet in a local folder: the settings used when none are given."""
        return cls.model_validate(
            {"output": output, "format": {"format_type": "Parquet", "compression_codec": "SNAPPY"}}
        )

    @property
    def target(self) -> Literal["local", "s3"]:
        """`s3` when files go to a bucket (`s3_bucket_name` or an `s3://` output), else `local`."""
        if self.s3_bucket_name or (self.output or "").startswith(("s3://", "s3a://")):
            return "s3"
        return "local"

    @property
    def bucket(self) -> str | None:
        """The bucket written to, or None for a local target."""
        if self.s3_bucket_name:
            return self.s3_bucket_name
        match = _S3_URI.match(self.output or "")
        return match.group("bucket") if match else None

    @property
    def prefix(self) -> str:
        """Key prefix inside the bucket, without leading or trailing slashes; empty for a local target."""
        if self.s3_bucket_name:
            return self.s3_bucket_path.strip("/")
        match = _S3_URI.match(self.output or "")
        return (match.group("prefix") or "").strip("/") if match else ""

    @property
    def base_uri(self) -> str:
        """Root of the output: `s3://bucket[/prefix]` or the local folder as given."""
        if self.target == "local":
            return self.output or ""
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"
