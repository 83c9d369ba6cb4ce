"""What the change-data step of one stream needs to know, fixed on the driver: :class:`ChangeStream`.

:func:`realtime_stream` returns None unless the destination writes Replicant
files in ``realtime`` mode; then it checks that the stream can have changes
(a primary key of top-level fields of its schema) and names every place the
step reads and writes, all relative to the output root:

==============================================  ===========================================
``_airbyte_cdc/<stream>/staging/sync_<id>/``    the typed records of sync ``<id>`` (Parquet)
``_airbyte_cdc/<stream>/image/v<version>/``     the image files that version wrote, one folder
                                                a hash bucket (Parquet, :mod:`.buckets`)
``_airbyte_cdc/<stream>/pointer.json``          the commit: image version, last applied sync,
                                                last ``mutId``
``<stream folder>/cdc_<version>_<part>.csv``    the operations (``.json`` for JSON)
==============================================  ===========================================

The stream folder is the part of ``s3_path_format`` before its first time
variable (``<namespace>/<stream>/`` by default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct

from framework.errors import ConfigError
from framework.models.destination import DestinationSettings, ReplicantCsvFormat, ReplicantJsonFormat
from framework.storage import StreamLayout, safe_name
from framework.typed import RecordConverter, parse_schema
from framework.typed.arrow import ENVELOPE_NAMES

if TYPE_CHECKING:
    from framework.components.stream import Stream

CDC_ROOT = "_airbyte_cdc"


class ChangeStream(Struct, frozen=True):
    """The change-data settings of one stream in one sync (picklable: it travels to the executors)."""

    stream: str
    namespace: str
    fields: tuple[str, ...]  # data fields, in schema order
    keys: tuple[int, ...]  # positions of the primary key fields in ``fields``
    cursor: str | None  # the cursor field when it is a data field: orders the records of a key
    deleted_field: str | None  # the field whose non-null value marks a deleted record, when in the schema
    incremental: bool  # False: each sync is a full snapshot, keys missing from it are deleted
    sync_id: int
    format_type: str  # replicant_csv or replicant_json
    image: str  # changes or full
    include_header: bool
    catalog: str | None
    schema: str | None
    root: str  # _airbyte_cdc/<stream>/
    op_prefix: str  # where the operation files go, before ``cdc_<version>_<part>``

    @property
    def staging_root(self) -> str:
        return f"{self.root}staging/"

    def staging_prefix(self, sync_id: int | None = None) -> str:
        return f"{self.root}staging/sync_{self.sync_id if sync_id is None else sync_id}/"

    def image_prefix(self, version: int) -> str:
        return f"{self.root}image/v{version:08d}/"

    @property
    def pointer_key(self) -> str:
        return f"{self.root}pointer.json"

    @property
    def extension(self) -> str:
        return ".csv" if self.format_type == "replicant_csv" else ".json"

    def op_key(self, version: int, part: int) -> str:
        return f"{self.op_prefix}cdc_{version:08d}_{part:05d}{self.extension}"

    def op_version_prefix(self, version: int) -> str:
        return f"{self.op_prefix}cdc_{version:08d}_"


def is_realtime(settings: DestinationSettings) -> bool:
    fmt = settings.format
    return isinstance(fmt, (ReplicantCsvFormat, ReplicantJsonFormat)) and fmt.mode == "realtime"


def realtime_stream(settings: DestinationSettings, stream: Stream, *, incremental: bool, sync_id: int,
                    namespace: str = "") -> ChangeStream | None:
    """The :class:`ChangeStream` of ``stream`` (a framework Stream) when ``settings`` ask for realtime files."""
    fmt = settings.format
    if not isinstance(fmt, (ReplicantCsvFormat, ReplicantJsonFormat)) or fmt.mode != "realtime":  # is_realtime
        return None
    schema = RecordConverter(parse_schema(dict(stream.json_schema), stream=stream.name), stream=stream.name).schema
    fields = tuple(name for name in schema.names if name not in ENVELOPE_NAMES)
    keys = _key_positions(stream, fields)
    cursor_field = getattr(getattr(stream, "cursor", None), "cursor_field", None)
    cursor = cursor_field if isinstance(cursor_field, str) and cursor_field in fields else None
    deleted = fmt.deleted_field if fmt.deleted_field in fields else None
    layout = StreamLayout.of(settings, stream.name, namespace)
    root_name = safe_name(f"{namespace}.{stream.name}" if namespace else stream.name)
    return ChangeStream(
        stream=stream.name, namespace=namespace or "", fields=fields, keys=keys, cursor=cursor,
        deleted_field=deleted, incremental=incremental, sync_id=sync_id, format_type=fmt.format_type,
        image=fmt.image, include_header=bool(getattr(fmt, "include_header", False)), catalog=fmt.catalog,
        schema=fmt.schema_name if fmt.schema_name is not None else (namespace or None),
        root=f"{CDC_ROOT}/{root_name}/", op_prefix=layout.scan_prefix,
    )


def _key_positions(stream: Stream, fields: tuple[str, ...]) -> tuple[int, ...]:
    paths = [list(path) for path in (stream.primary_key or [])]
    fix = ("give the stream a `primary_key` of top-level fields of its schema, or write it with `mode: snapshot`")
    if not paths:
        raise ConfigError(f"stream `{stream.name}` has no primary key, so `mode: realtime` cannot tell inserts, "
                          f"updates and deletes apart; {fix}")
    positions = []
    for path in paths:
        if len(path) != 1 or path[0] not in fields:
            raise ConfigError(f"stream `{stream.name}`: the primary key field `{'.'.join(map(str, path))}` is "
                              f"not a top-level field of the stream's schema, which `mode: realtime` needs; {fix}")
        positions.append(fields.index(path[0]))
    return tuple(positions)


__all__ = ["CDC_ROOT", "ChangeStream", "is_realtime", "realtime_stream"]
