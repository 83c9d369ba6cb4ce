"""Benchmark of normalization: land N nested records as Parquet, normalize them, print rows/s and peak memory.

    .venv/bin/python bench/normalization.py --records 1000000 [--children 2] [--master local[*]] [--files 8]
        [--keep DIR] [--quick-jit] [--conf spark.driver.memory=2g ...]

Each record has scalars of every type, a nested object and an array of
objects (so three tables plus the raw table); ``--children 8`` adds objects
and arrays of objects up to eight child tables. The landed files are written
with the sink's own typing and Parquet writer, without Spark or an API; the
catalog says append, so the run is a full normalization of every record.
Rows/s counts the stream's records (input rows); the child table rows are
printed too. Peak memory is the largest resident size of the Python driver
process and of Spark's JVM (its ``VmHWM``), as the operating system reports it.
*CPU by kind* splits the CPU seconds of the run: the JVM's task threads, its
JIT compilers, GC, the rest of the JVM (planning, code generation), and the
Python workers (with their daemon). The framework is byte-compiled first, as
an install does, so that workers do not compile it inside the measured time.

The session is the one ``normalize-output`` and ``run-manifest --normalize``
use (:func:`framework.spark.session.spark_session` with ``full_jit=True``);
``--quick-jit`` starts it with the quick JIT tier only
(``-XX:TieredStopAtLevel=1``), as a plain sync does, to compare.
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
_NOTE = {"type": "object", "properties": {"code": {"type": "string"}, "level": {"type": "integer"}}}
_PART = {"type": "array", "items": {"type": "object", "properties": {
    "part": {"type": "string"}, "weight": {"type": "number"}}}}


def schema_with(children: int) -> dict:
    """The record schema with ``children`` child tables (at least 2): ``address`` and ``lines``, then
    objects ``note_<n>`` and arrays of objects ``parts_<n>`` in turn."""
    properties = dict(SCHEMA["properties"])
    for number in range(2, children):
        properties[f"note_{number}" if number % 2 == 0 else f"parts_{number}"] = _NOTE if number % 2 == 0 else _PART
    return {"type": "object", "properties": properties}


def record(i: int, children: int) -> dict:
    value = {"id": i, "name": f"order {i}", "price": i / 100, "active": i % 2 == 0,
             "updated_at": "2024-01-01T00:00:00Z", "address": {"city": f"city {i % 100}", "zip": str(i)},
             "lines": [{"sku": f"s{i}", "qty": 1}, {"sku": f"t{i}", "qty": 2}]}
    for number in range(2, children):
        if number % 2 == 0:
            value[f"note_{number}"] = {"code": f"c{i % 7}", "level": number}
        else:
            value[f"parts_{number}"] = [{"part": f"p{i}", "weight": 1.5}, {"part": f"q{i}", "weight": 2.5}]
    return value


def land(output: str, records: int, files: int, children: int = 2) -> None:
    from framework.formats import open_format_writer
    from framework.models.destination import DestinationSettings
    from framework.storage import storage_for
    from framework.storage.layout import StreamLayout
    from framework.storage.state_store import CatalogStore
    from framework.typed import RecordConverter

    settings = DestinationSettings.model_validate({"output": output, "format": {"format_type": "Parquet"}})
    storage = storage_for(settings)
    schema = schema_with(children)
    converter = RecordConverter.from_json_schema(schema, stream="orders")
    started = datetime(2024, 1, 1, tzinfo=timezone.utc)
    layout = StreamLayout.of(settings, "orders", "", started_at=started)
    per_file = -(-records // files)
    for part in range(files):
        sink = io.BytesIO()
        writer = open_format_writer(settings.format, converter.schema, None, sink)
        first = part * per_file
        for start in range(first, min(first + per_file, records), 50_000):
            batch = [record(i, children) for i in range(start, min(start + 50_000, first + per_file, records))]
            writer.write(converter.convert(batch, extracted_at_ms=int(started.timestamp() * 1000),
                                           generation_id=0, sync_id=1))
        writer.close()
        storage.write_atomic(layout.key(part), sink.getvalue())
    CatalogStore(storage).merge([{"stream": {"name": "orders", "json_schema": schema},
                                  "sync_mode": "full_refresh", "destination_sync_mode": "append",
                                  "cursor_field": [], "primary_key": [["id"]]}])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--children", type=int, default=2,
                        help="child tables of the stream (2: an object and an array of objects, four tables with "
                             "the stream's and the raw table; more add objects and arrays of objects in turn)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--keep", metavar="DIR", help="use (and keep) this output folder")
    parser.add_argument("--quick-jit", action="store_true",
                        help="start Spark's JVM with the quick JIT tier only, as a plain sync does (normalize-output "
                             "and --normalize use the full JIT)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="more Spark settings")
    args = parser.parse_args(argv)

    from framework.models.destination import DestinationSettings
    from framework.normalization.runner import normalize
    from framework.spark.session import spark_session

    output = args.keep or tempfile.mkdtemp(prefix="bench-normalization-")
    try:
        began = time.perf_counter()
        land(output, args.records, args.files, max(2, args.children))
        print(f"landed {args.records:,} records ({max(2, args.children)} child tables) in {args.files} "
              f"Parquet file(s) in "
              f"{time.perf_counter() - began:.1f} s", file=sys.stderr)
        _compile_framework()
        conf = dict(item.split("=", 1) for item in args.conf)
        spark = spark_session(args.master, app_name="bench-normalization", full_jit=not args.quick_jit, **conf)
        settings = DestinationSettings.model_validate({"output": output, "format": {"format_type": "Parquet"}})
        jvm = _jvm_pid(spark)
        cpu_before, threads_before = _tree_cpu_seconds(jvm), _thread_cpu_seconds(jvm)
        began = time.perf_counter()
        result = normalize(spark, settings, full_refresh=True)
        seconds = time.perf_counter() - began
        cpu = _tree_cpu_seconds(jvm) - cpu_before
        threads = {kind: spent - threads_before.get(kind, 0.0) for kind, spent in _thread_cpu_seconds(jvm).items()}
        if result.failed:
            print(f"normalization failed: {result.streams[0].error}", file=sys.stderr)
            return 1
        import pyarrow.parquet as pq

        from framework.normalization.root import META, normalized_root

        tables = normalized_root(settings)  # beside the output: <output>_normalized
        counts = {t: pq.ParquetDataset(os.path.join(tables, t)).read(columns=[]).num_rows
                  for t in sorted(os.listdir(tables)) if t != META}
        peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"normalized {args.records:,} records in {seconds:.1f} s: {args.records / seconds:,.0f} rows/s "
              f"({spark.sparkContext.master}, {spark.sparkContext.defaultParallelism} cores"
              f"{', quick JIT' if args.quick_jit else ', full JIT'})")
        print("tables: " + ", ".join(f"{t}={n:,}" for t, n in counts.items()))
        if cpu > 0:  # CPU seconds do not depend on what else the machine runs, as wall seconds do
            print(f"CPU: {cpu:.1f} s in Spark's JVM and its Python workers "
                  f"({args.records / cpu:,.0f} rows per CPU second)")
            print("CPU by kind: " + ", ".join(f"{kind} {spent:.1f} s" for kind, spent in threads.items())
                  + f", Python workers {cpu - sum(threads.values()):.1f} s")
        print(f"peak memory: Python driver {peak_self:,.0f} MB, Spark JVM {_jvm_peak_mb(jvm)}")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(output, ignore_errors=True)
            shutil.rmtree(output.rstrip("/") + "_normalized", ignore_errors=True)  # the tables' root beside it


def _compile_framework() -> None:
    """Byte-compile the framework the executors' Python workers import, as an install does (under
    ``PYTHONDONTWRITEBYTECODE=1`` every worker would compile it again, inside the measured time)."""
    import compileall

    import framework

    compileall.compile_dir(os.path.dirname(framework.__file__), quiet=1)


#: The JVM's threads by kind, from the start of their names (``/proc/<pid>/task/<tid>/comm``).
_THREAD_KINDS = (("Executor task", "JVM tasks"), ("C2 Compiler", "JIT C2"), ("C1 Compiler", "JIT C1"),
                 ("GC Thread", "GC"), ("G1 ", "GC"))


def _thread_cpu_seconds(pid: int | None) -> dict[str, float]:
    """User and system CPU seconds of process ``pid`` (the JVM) by kind of thread, from /proc (empty without
    it): task threads, JIT compilers and GC by their names, the rest ("JVM other": the driver's planning,
    code generation and scheduling, and threads that ended) as the process's total minus those."""
    spent = {kind: 0.0 for _, kind in _THREAD_KINDS}
    if pid is None or not os.path.isdir(f"/proc/{pid}/task"):
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return {}
    total = (int(fields[11]) + int(fields[12])) / tick
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        kind = next((kind for start, kind in _THREAD_KINDS if name.startswith(start)), None)
        if kind is not None:
            spent[kind] += (int(fields[11]) + int(fields[12])) / tick
    return spent | {"JVM other": total - sum(spent.values())}


def _jvm_pid(spark: object) -> int | None:
    try:
        return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a remote JVM, or no py4j gateway: no figures
        return None


def _jvm_peak_mb(pid: int | None) -> str:
    """The peak resident size of Spark's (local) JVM, from /proc; "unknown" where there is no /proc."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return f"{int(line.split()[1]) / 1024:,.0f} MB"
    except (OSError, ValueError):
        pass
    return "unknown"


def _tree_cpu_seconds(pid: int | None) -> float:
    """User and system CPU seconds of process ``pid`` and its descendants (live, or reaped by them), from /proc."""
    if pid is None or not os.path.isdir("/proc"):
        return 0.0
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15), counted from state = 0
        stats[int(entry)] = (int(fields[1]), sum(int(v) for v in fields[11:15]) / tick)
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += stats.get(current, (0, 0.0))[1]
        todo.extend(child for child, (parent, _) in stats.items() if parent == current)
    return total


if __name__ == "__main__":
    sys.exit(main())
