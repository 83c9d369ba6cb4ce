"""Benchmark of normalization: land N nested records as Parquet, normalize them, print rows/s and peak memory.

    .venv/bin/python bench/normalization.py --records 1000000 [--master local[*]] [--files 8] [--keep DIR]

Each record has scalars of every type, a nested object and an array of
objects (so three tables plus the raw table). The landed files are written
with the sink's own typing and Parquet writer, without Spark or an API; the
catalog says append, so the run is a full normalization of every record.
Rows/s counts the stream's records (input rows); the child table rows are
printed too. Peak memory is the largest resident size of the driver process
and of any finished child process (Spark's JVM and Python workers), as the
operating system reports it.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "price": {"type": "number"},
    "active": {"type": "boolean"}, "updated_at": {"type": "string", "format": "date-time"},
    "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}},
    "lines": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "integer"}}}},
}}


def land(output: str, records: int, files: int) -> None:
    from framework.models.destination import DestinationSettings
    from framework.sink.formats import open_format_writer
    from framework.sink.layout import StreamLayout
    from framework.sink.state_store import CatalogStore
    from framework.sink.storage import storage_for
    from framework.sink.typing import RecordConverter

    settings = DestinationSettings.model_validate({"output": output, "format": {"format_type": "Parquet"}})
    storage = storage_for(settings)
    converter = RecordConverter.from_json_schema(SCHEMA, stream="orders")
    started = datetime(2024, 1, 1, tzinfo=timezone.utc)
    layout = StreamLayout.of(settings, "orders", "", started_at=started)
    per_file = -(-records // files)
    for part in range(files):
        sink = io.BytesIO()
        writer = open_format_writer(settings.format, converter.schema, None, sink)
        first = part * per_file
        for start in range(first, min(first + per_file, records), 50_000):
            batch = [{"id": i, "name": f"order {i}", "price": i / 100, "active": i % 2 == 0,
                      "updated_at": "2024-01-01T00:00:00Z", "address": {"city": f"city {i % 100}", "zip": str(i)},
                      "lines": [{"sku": f"s{i}", "qty": 1}, {"sku": f"t{i}", "qty": 2}]}
                     for i in range(start, min(start + 50_000, first + per_file, records))]
            writer.write(converter.convert(batch, extracted_at_ms=int(started.timestamp() * 1000),
                                           generation_id=0, sync_id=1))
        writer.close()
        storage.write_atomic(layout.key(part), sink.getvalue())
    CatalogStore(storage).merge([{"stream": {"name": "orders", "json_schema": SCHEMA},
                                  "sync_mode": "full_refresh", "destination_sync_mode": "append",
                                  "cursor_field": [], "primary_key": [["id"]]}])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--keep", metavar="DIR", help="use (and keep) this output folder")
    args = parser.parse_args(argv)

    from framework.models.destination import DestinationSettings
    from framework.normalization.runner import normalize
    from framework.sink.spark import spark_session

    output = args.keep or tempfile.mkdtemp(prefix="bench-normalization-")
    try:
        began = time.perf_counter()
        land(output, args.records, args.files)
        print(f"landed {args.records:,} records in {args.files} Parquet file(s) in "
              f"{time.perf_counter() - began:.1f} s", file=sys.stderr)
        spark = spark_session(args.master, app_name="bench-normalization")
        settings = DestinationSettings.model_validate({"output": output, "format": {"format_type": "Parquet"}})
        began = time.perf_counter()
        result = normalize(spark, settings, full_refresh=True)
        seconds = time.perf_counter() - began
        if result.failed:
            print(f"normalization failed: {result.streams[0].error}", file=sys.stderr)
            return 1
        import pyarrow.parquet as pq

        counts = {t: pq.ParquetDataset(os.path.join(output, "normalized", t)).read(columns=[]).num_rows
                  for t in sorted(os.listdir(os.path.join(output, "normalized")))}
        peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        peak_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"normalized {args.records:,} records in {seconds:.1f} s: {args.records / seconds:,.0f} rows/s "
              f"({spark.sparkContext.master}, {spark.sparkContext.defaultParallelism} cores)")
        print("tables: " + ", ".join(f"{t}={n:,}" for t, n in counts.items()))
        print(f"peak memory: driver {peak_self:,.0f} MB, largest finished child {peak_children:,.0f} MB "
              f"(the Spark JVM is still running: see its own metrics)")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(output, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
