"""Landing a stream as Parquet files, as a Delta table and as an Iceberg table, side by side.

Each format does the same work a sync's landing does: records typed by the framework's converter
(`RecordConverter`, the S3 envelope) and written by its Parquet writer (`ParquetFileWriter`) into files of
`--file-records` records; then the table formats commit those files with the stream's state (Iceberg through
`framework/tables/iceberg.py`; Delta through deltalake directly: a new table of add actions, with the state in
the commit's metadata and an app transaction, as the Delta part of issue 38 does). Plain Parquet writes
its state file beside the files. The formats run in rounds, interleaved; the fastest run of each is kept.
The writing is the same code for the three, so what a table format adds is its commit: the last column is
the commit's time beyond the Parquet state file's, against Parquet's whole wall time (the figure a busy
machine blurs least).

Then the commit alone of a sync of `--commit-files` (1,000) small files, into a new table and into a table
that already has a sync, per table format.

    .venv/bin/python bench/table_formats.py                         # 200,000 and 2,000,000 records
    .venv/bin/python bench/table_formats.py --records 200000 --runs 3 --markdown
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from framework.formats.parquet import ParquetFileWriter  # noqa: E402
from framework.models.destination import ParquetFormat  # noqa: E402
from framework.tables.base import DataFile, TableCommit  # noqa: E402
from framework.tables.iceberg import open_iceberg_table  # noqa: E402
from framework.typed.converter import RecordConverter  # noqa: E402

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "customer": {"type": "string"}, "email": {"type": ["null", "string"]},
    "amount": {"type": "number"}, "status": {"type": "string"}, "paid": {"type": "boolean"},
    "updated_at": {"type": "string", "format": "date-time", "airbyte_type": "timestamp_with_timezone"},
    "items": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "quantity": {"type": "integer"}}}}}}
PAGE = 10_000
APP = "bench/orders"


def pages(records: int) -> Iterator[list[dict[str, Any]]]:
    statuses = ("placed", "paid", "shipped", "returned")
    for start in range(0, records, PAGE):
        yield [{"id": i, "customer": f"customer {i % 5000}", "email": f"c{i % 5000}@example.com" if i % 7 else None,
                "amount": (i % 10_000) / 100, "status": statuses[i % 4], "paid": i % 3 == 0,
                "updated_at": f"2026-01-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z",
                "items": [{"sku": f"sku-{i % 97}", "quantity": 1 + i % 5}] * (1 + i % 3)}
               for i in range(start, min(start + PAGE, records))]


def write_files(folder: str, records: int, file_records: int) -> tuple[list[DataFile], pa.Schema]:
    """The stream's records, typed and written as Parquet files of up to `file_records` records each."""
    os.makedirs(folder, exist_ok=True)
    converter = RecordConverter.from_json_schema(SCHEMA, stream="orders")
    files: list[DataFile] = []
    writer: ParquetFileWriter | None = None
    sink: io.BufferedWriter | None = None
    path = ""
    count = 0
    schema: pa.Schema | None = None

    def close() -> None:
        assert writer is not None and sink is not None
        writer.close()
        sink.close()
        files.append(DataFile(path=path, size_bytes=os.path.getsize(path), record_count=count))

    for page in pages(records):
        batch = converter.convert(page, extracted_at_ms=1_767_225_600_000, generation_id=1, sync_id=1)
        schema = batch.schema
        if writer is None:
            path = os.path.join(folder, f"part-{len(files):05d}.parquet")
            sink = open(path, "wb")  # noqa: SIM115 - closed in close()
            writer = ParquetFileWriter(ParquetFormat(), batch.schema, sink)
            count = 0
        writer.write(batch)
        count += batch.num_rows
        if count >= file_records:
            close()
            writer = None
    if writer is not None:
        close()
    assert schema is not None
    return files, schema


def commit_delta(root: str, files: list[DataFile], schema: pa.Schema, version: int) -> None:
    from deltalake import CommitProperties, DeltaTable, Schema, Transaction
    from deltalake.transaction import AddAction, create_table_with_add_actions

    now = int(time.time() * 1000)
    actions = [AddAction(os.path.relpath(file.path, root), file.size_bytes, {}, now, True,
                         json.dumps({"numRecords": file.record_count})) for file in files]
    properties = CommitProperties(custom_metadata={"airbyte.state": json.dumps({"cursor": version})},
                                  app_transactions=[Transaction(APP, version)])
    if version == 1:
        create_table_with_add_actions(root, Schema.from_arrow(schema), actions, mode="error",
                                      commit_properties=properties)
    else:
        DeltaTable(root).create_write_transaction(actions, mode="append", schema=Schema.from_arrow(schema),
                                                  commit_properties=properties)


def commit_iceberg(root: str, files: list[DataFile], schema: pa.Schema, version: int) -> None:
    table = open_iceberg_table(root, "bench", "orders",
                               {"type": "sqlite", "path": os.path.join(os.path.dirname(root), "catalog.db")}, {})
    result = table.commit(TableCommit(files=tuple(files), schema=schema, mode="append", state={"cursor": version},
                                      app_id=APP, version=version))
    assert result.committed


def commit_parquet(root: str, files: list[DataFile], schema: pa.Schema, version: int) -> None:
    """The plain Parquet output keeps its state in a file of its own, replaced atomically."""
    path = os.path.join(root, "_state.json")
    with open(path + ".tmp", "w") as file:
        json.dump({"cursor": version, "files": [os.path.basename(f.path) for f in files]}, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(path + ".tmp", path)


FORMATS: dict[str, tuple[Callable[[str], str], Callable[[str, list[DataFile], pa.Schema, int], None]]] = {
    "parquet": (lambda root: root, commit_parquet),
    "delta": (lambda root: root, commit_delta),
    "iceberg": (lambda root: os.path.join(root, "data"), commit_iceberg),
}


def land(work: str, fmt: str, records: int, file_records: int) -> dict[str, float]:
    root = os.path.join(work, fmt, "orders")
    shutil.rmtree(os.path.join(work, fmt), ignore_errors=True)
    data_folder, commit = FORMATS[fmt]
    started, cpu = time.perf_counter(), time.process_time()
    files, schema = write_files(data_folder(root), records, file_records)
    written = time.perf_counter()
    commit(root, files, schema, 1)
    done, cpu = time.perf_counter(), time.process_time() - cpu
    landed = count_rows(fmt, root)
    if landed != records:
        raise SystemExit(f"{fmt}: {landed} records read back, not {records}")
    return {"total": done - started, "commit": done - written, "files": len(files), "cpu": cpu}


def count_rows(fmt: str, root: str) -> int:
    """The records a reader of the format finds (not timed)."""
    if fmt == "delta":
        import polars as pl  # not deltalake's pyarrow reader: with deltalake 1.6 it aborts the process at exit

        return int(pl.scan_delta(root).select(pl.len()).collect().item())
    if fmt == "iceberg":
        from pyiceberg.catalog.sql import SqlCatalog

        catalog = SqlCatalog("airbyte", uri=f"sqlite:///{os.path.join(os.path.dirname(root), 'catalog.db')}")
        return catalog.load_table(("bench", "orders")).scan(selected_fields=("id",)).to_arrow().num_rows
    import pyarrow.dataset as ds

    return ds.dataset(root, format="parquet", exclude_invalid_files=True).count_rows()


def commit_many(work: str, fmt: str, count: int) -> dict[str, float]:
    """The commit alone of `count` small files: into a new table, then into that table again."""
    root = os.path.join(work, f"many-{fmt}", "orders")
    shutil.rmtree(os.path.dirname(root), ignore_errors=True)
    folder = FORMATS[fmt][0](root)
    one, schema = write_files(os.path.join(folder, "seed"), 100, 100)
    template = one[0]
    files = []
    for number in range(count):
        for batch_no in (0, 1):
            path = os.path.join(folder, f"b{batch_no}-{number:05d}.parquet")
            shutil.copyfile(template.path, path)
            files.append(DataFile(path, template.size_bytes, template.record_count))
    shutil.rmtree(os.path.join(folder, "seed"))
    first, second = files[0::2], files[1::2]
    commit = FORMATS[fmt][1]
    started, cpu = time.perf_counter(), time.process_time()
    commit(root, first, schema, 1)
    middle, cpu_middle = time.perf_counter(), time.process_time()
    commit(root, second, schema, 2)
    return {"new": middle - started, "existing": time.perf_counter() - middle,
            "new_cpu": cpu_middle - cpu, "existing_cpu": time.process_time() - cpu_middle}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", default="200000,2000000", help="comma-separated record counts")
    parser.add_argument("--file-records", type=int, default=100_000, help="records per data file")
    parser.add_argument("--commit-files", type=int, default=1000, help="files of the commit-only measure")
    parser.add_argument("--runs", type=int, default=1, help="rounds of the three formats; the fastest is kept")
    parser.add_argument("--work", help="where the outputs go (default: a temporary folder, removed)")
    parser.add_argument("--markdown", action="store_true", help="the tables again in Markdown")
    args = parser.parse_args(argv)
    work = args.work or tempfile.mkdtemp(prefix="bench-tables-")
    lines = []
    try:
        print("load average: {:.2f} {:.2f} {:.2f}, cpus: {}".format(*os.getloadavg(), os.cpu_count()))
        for module in ("deltalake", "pyiceberg.catalog.sql"):  # once per driver process, not per record: shown apart
            started = time.perf_counter()
            __import__(module)
            print(f"import {module}: {time.perf_counter() - started:.2f} s")
        for fmt in FORMATS:  # a warm-up landing of each format, not timed
            land(work, fmt, 2 * PAGE, PAGE)
        for records in (int(value) for value in args.records.split(",")):
            best: dict[str, dict[str, float]] = {}
            for _ in range(args.runs):
                for fmt in FORMATS:
                    run = land(work, fmt, records, args.file_records)
                    if fmt not in best or run["total"] < best[fmt]["total"]:
                        best[fmt] = run
            base = best["parquet"]["total"]
            for fmt, run in best.items():
                line = (f"| {records:,} | {fmt} | {int(run['files'])} | {run['total']:.2f} s | {run['commit']:.3f} s "
                        f"| {(run['total'] / base - 1) * 100:+.1f}% | {run['cpu']:.2f} s "
                        f"| {(run['cpu'] / best['parquet']['cpu'] - 1) * 100:+.1f}% "
                        f"| {(run['commit'] - best['parquet']['commit']) / base * 100:+.1f}% |")
                print(line, flush=True)
                lines.append(line)
        many = []
        for fmt in ("delta", "iceberg"):
            result = commit_many(work, fmt, args.commit_files)
            line = (f"| {fmt} | {args.commit_files:,} | {result['new']:.2f} s ({result['new_cpu']:.2f} s CPU) "
                    f"| {result['existing']:.2f} s ({result['existing_cpu']:.2f} s CPU) |")
            print(line, flush=True)
            many.append(line)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    if args.markdown:
        print("\n| records | format | files | wall time | of which the commit | vs Parquet | CPU time | vs Parquet "
              "| the commit's extra vs Parquet's wall |")
        print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print("\n".join(lines))
        print("\n| format | files in the commit | into a new table | into a table with a sync |")
        print("| --- | ---: | ---: | ---: |")
        print("\n".join(many))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
