"""The `Table` of a stream for the destination settings: where it lives, and which format's class opens it.

Layout: each stream is one table at `<output>/<namespace>/<stream>/` (names made safe as for files:
:func:`framework.output_names.safe_name`), its data files under `data/`. Delta keeps its log beside them
(`_delta_log/`); Iceberg keeps its metadata under `metadata/` and registers the table in the format's catalog
(by default a SQLite file at `<output>/_airbyte_state/iceberg_catalog.db`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from framework.errors import ConfigError
from framework.models.destination import DeltaFormat, DestinationSettings, IcebergFormat, IcebergSqliteCatalog
from framework.output_names import safe_name

if TYPE_CHECKING:
    from framework.tables.base import Table

#: The internal folder (beside the streams' tables) the embedded Iceberg catalog's file goes in.
STATE_FOLDER = "_airbyte_state"
ICEBERG_CATALOG_FILE = "iceberg_catalog.db"


def is_table_format(settings: DestinationSettings) -> bool:
    """True when the settings land tables (`delta`, `iceberg`) rather than files."""
    return isinstance(settings.format, (DeltaFormat, IcebergFormat))


def table_key(stream: str, namespace: str | None = "") -> str:
    """The table's folder relative to the output's root: `<namespace>/<stream>` or `<stream>`."""
    return "/".join(part for part in (safe_name(namespace or ""), safe_name(stream)) if part)


def table_location(settings: DestinationSettings, stream: str, namespace: str | None = "") -> str:
    """Where the stream's table lives: a local folder or an `s3://` URI."""
    return f"{settings.base_uri.rstrip('/')}/{table_key(stream, namespace)}"


def app_id(stream: str, namespace: str | None = "") -> str:
    """The app id a stream's commits carry (Delta's app transaction, Iceberg's snapshot property)."""
    return f"manifest-framework:{table_key(stream, namespace)}"


def delta_options(settings: DestinationSettings) -> dict[str, str]:
    """delta-rs's object store options for the settings' S3 output (none for a local one)."""
    if settings.target != "s3":
        return {}
    from framework.tables.delta import delta_storage_options

    return delta_storage_options(endpoint=settings.s3_endpoint, region=settings.s3_bucket_region,
                                 access_key_id=settings.access_key_id, secret_access_key=settings.secret_access_key)


def iceberg_options(settings: DestinationSettings) -> dict[str, str]:
    """pyiceberg's FileIO properties for the settings' S3 output (none for a local one)."""
    if settings.target != "s3":
        return {}
    options: dict[str, str] = {}
    if settings.s3_endpoint:
        options["s3.endpoint"] = settings.s3_endpoint
        options["s3.path-style-access"] = "true"
    if settings.s3_bucket_region:
        options["s3.region"] = settings.s3_bucket_region
    if settings.access_key_id and settings.secret_access_key:
        options["s3.access-key-id"], options["s3.secret-access-key"] = settings.access_key_id, \
            settings.secret_access_key
    return options


def iceberg_catalog(settings: DestinationSettings) -> Mapping[str, Any]:
    """The Iceberg catalog settings as a mapping, the SQLite file's path filled in (inside the output)."""
    fmt = settings.format
    if not isinstance(fmt, IcebergFormat):
        raise ConfigError(f"the `{fmt.format_type}` format has no Iceberg catalog")
    catalog = fmt.catalog.model_dump(by_alias=True)
    if isinstance(fmt.catalog, IcebergSqliteCatalog) and not catalog.get("path"):  # on S3: an object
        catalog["path"] = f"{settings.base_uri.rstrip('/')}/{STATE_FOLDER}/{ICEBERG_CATALOG_FILE}"
    return catalog


def open_table(settings: DestinationSettings, stream: str, namespace: str | None = "") -> Table:
    """The stream's table in the settings' table format (deltalake or pyiceberg imported only now)."""
    fmt = settings.format
    location = table_location(settings, stream, namespace)
    if isinstance(fmt, DeltaFormat):
        from framework.tables.delta import open_delta_table

        return open_delta_table(location, delta_options(settings))
    if isinstance(fmt, IcebergFormat):
        try:
            from framework.tables.iceberg import open_iceberg_table  # type: ignore[import-not-found,import-untyped,unused-ignore]
        except ImportError as exc:
            raise ConfigError(f"--format iceberg is not available here ({exc}); install "
                              "'manifest-framework[tables]' or use --format delta") from None
        table: Table = open_iceberg_table(location, safe_name(namespace or "") or fmt.namespace, safe_name(stream),
                                          iceberg_catalog(settings), iceberg_options(settings))
        return table
    raise ConfigError(f"the `{fmt.format_type}` format lands files, not tables; use `delta` or `iceberg`")


__all__ = ["app_id", "delta_options", "iceberg_catalog", "iceberg_options", "is_table_format", "open_table",
           "table_key", "table_location"]
