"""Helpers of the normalization tests: land records into an output the way the sink does, read tables back.

``land(settings, stream, records, schema, emitted_at=..., ...)`` writes one
landed file of ``records`` (Parquet, JSONL or CSV per ``settings.format``)
where the sink would put it, and merges the stream into the landed catalog,
without Spark or an HTTP API. ``table_rows(output, table)`` reads a normalized
Parquet table with pyarrow.
"""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import pyarrow.parquet as pq
import pytest

_PARTS = itertools.count(1000)


def land(settings: Any, stream: str, records: Sequence[dict], schema: dict, *, emitted_at: datetime,
         primary_key: Sequence[str] = (), cursor: str | None = None, sync_mode: str = "incremental",
         destination_sync_mode: str = "append", ids: Sequence[str] | None = None) -> str:
    """Write one landed file of ``records`` and merge ``stream`` into the catalog; returns the file's key."""
    from framework.formats import open_format_writer, raw_batch
    from framework.storage import storage_for
    from framework.storage.layout import StreamLayout
    from framework.storage.state_store import CatalogStore
    from framework.typed import RecordConverter

    storage = storage_for(settings)
    at_ms = int(emitted_at.timestamp() * 1000)
    layout = StreamLayout.of(settings, stream, "", started_at=emitted_at)
    key = layout.key(next(_PARTS))
    converter = RecordConverter.from_json_schema(schema, stream=stream)
    ids = list(ids) if ids is not None else [f"{stream}-{at_ms}-{i}" for i in range(len(records))]
    if settings.format.format_type == "Parquet":
        batch = converter.convert(list(records), extracted_at_ms=at_ms, generation_id=0, sync_id=1)
        import pyarrow as pa

        batch = batch.set_column(0, batch.schema.field(0), pa.array(ids, pa.string()))
    else:
        import orjson

        batch = raw_batch([orjson.dumps(r).decode() for r in records], ids, at_ms, 0, sync_id=1)
    sink = io.BytesIO()
    writer = open_format_writer(settings.format, converter.schema, None, sink,
                                columns=[name for name in schema.get("properties", {})])
    writer.write(batch)
    writer.close()
    storage.write_atomic(key, sink.getvalue())
    CatalogStore(storage).merge([{
        "stream": {"name": stream, "json_schema": schema, "supported_sync_modes": ["full_refresh", "incremental"],
                   "source_defined_primary_key": [[k] for k in primary_key],
                   "default_cursor_field": [cursor] if cursor else []},
        "sync_mode": sync_mode, "destination_sync_mode": destination_sync_mode,
        "cursor_field": [cursor] if cursor else [], "primary_key": [[k] for k in primary_key],
    }])
    return key


def normalized(output: str, *parts: str) -> str:
    """A path in the normalized tables' root, beside the output (framework/normalization/root.py)."""
    return os.path.join(output.rstrip("/") + "_normalized", *parts)


def normalized_tables(output: str) -> list[str]:
    """The normalized tables' folders (the target's bookkeeping folder left out)."""
    return sorted(name for name in os.listdir(normalized(output)) if name != "_airbyte_normalization")


def table_rows(output: str, table: str, order: Sequence[str] = ()) -> list[dict]:
    """The rows of a normalized Parquet table (read with pyarrow), sorted by ``order`` columns."""
    folder = normalized(output, table)
    rows = pq.read_table(folder).to_pylist()
    if order:
        rows.sort(key=lambda r: tuple((r[c] is None, r[c]) for c in order))
    return rows


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2024, 1, day, hour, tzinfo=timezone.utc)


@pytest.fixture
def output(tmp_path) -> str:
    return str(tmp_path / "out")


@pytest.fixture
def local_settings(output):
    """``make(format="parquet"|"jsonl"|"csv", **more)``: DestinationSettings for the test's output folder."""
    from framework.models.destination import DestinationSettings

    def make(fmt: str = "parquet", **more: Any) -> DestinationSettings:
        formats = {"parquet": {"format_type": "Parquet", "compression_codec": "SNAPPY"},
                   "jsonl": {"format_type": "JSONL"}, "csv": {"format_type": "CSV"},
                   "avro": {"format_type": "Avro"}}
        return DestinationSettings.model_validate({"output": output, "format": formats[fmt], **more})

    return make


