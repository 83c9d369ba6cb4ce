"""How fast does the Spark pipeline land Parquet, next to protocol mode and dlt?

    python bench/pipeline.py [--records 1000000] [--small 200000] [--shards 16] [--peers] [--peers-python PATH]
    python bench/pipeline.py --task-profile [--records 250000] [--shards 2] [--top 25] [--sort cumulative]

Starts ``bench/api_server.py`` (its own process) with N synthetic records
split into ``--shards`` disjoint shards, writes a manifest for it (one
DeclarativeStream with a typed schema, a ``ListPartitionRouter`` over the
shard numbers, ``PageIncrement`` pages of 1,000) into a temp folder, and
measures in one run:

* **protocol**: ``run-manifest MANIFEST --config CFG --protocol`` in its own
  process, counting the RECORD lines: the reference rate;
* **Spark pipeline**, at N and at ``--small`` records: a child process of this
  script (``--spark-child``) that times ``spark_session()`` and
  ``run_pipeline()`` apart, in-process, writing Parquet to a temp folder (then
  a 2nd sync in the same session, into another folder: the steady state), the
  CPU seconds of the driver, the JVM and the Python workers (from ``/proc``),
  its own peak RSS (the driver's Python), the JVM's and the largest Python
  worker's (``VmHWM``, read before the session stops). The rows of the
  written Parquet files are counted and must equal N;
* **dlt** (``--peers``): dlt's ``rest_api`` source with a ``page_number``
  paginator over the same shards (one resource per shard, all into one
  table), ``pipeline.run(..., loader_file_format="parquet")`` into the
  ``filesystem`` destination at a temp folder, run by the peers venv's
  Python (``bash bench/peers.sh``): this project never imports dlt.

``--task-profile``: no Spark; one group of every shard read in this process
through :func:`framework.spark.tasks.run_task` (what a Spark task and the
driver run), after one unit read to warm the connector as a reused worker has
it, under cProfile with a CPU clock; prints records per CPU-second with and
without the profiler and the top functions by own time.

Prints a table (records, start-up seconds, sync seconds, records/s over the
sync, wall seconds, CPU seconds, peak memory) and the ratios the targets are
about (``--markdown``: the table in Markdown too). The
exit code is 1 if a mode failed or wrote a different number of rows than the
API holds. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from harness import PAGE_SIZE, REPO, ApiServer, bench_manifest, peers_python, run_manifest_command

STREAM = "records"
RESULT_MARK = "bench-result "  # the line a child process reports its measurements on


# What the peers venv runs for dlt (argv: base_url shards per_page output_folder work_folder).
DLT_SCRIPT = """\
import json, os, sys, time
os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
started = time.perf_counter()
import dlt
from dlt.sources.rest_api import rest_api_source

base_url, shards, per_page, output, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
source = rest_api_source({
    "client": {
        "base_url": base_url,
        "paginator": {"type": "page_number", "base_page": 1, "page_param": "page", "total_path": None},
    },
    "resources": [
        {"name": f"shard_{shard}", "table_name": "records",
         "endpoint": {"path": "records", "data_selector": "data",
                      "params": {"shard": shard, "shards": shards, "per_page": per_page}}}
        for shard in range(shards)
    ],
})
pipeline = dlt.pipeline(pipeline_name="bench", dataset_name="bench", pipelines_dir=work,
                        destination=dlt.destinations.filesystem(bucket_url="file://" + output))
ready = time.perf_counter()
pipeline.run(source, loader_file_format="parquet")
ended = time.perf_counter()
print("bench-result " + json.dumps({"start": ready - started, "sync": ended - ready,
                                    "version": dlt.__version__}), flush=True)
"""


# -- the API server -----------------------------------------------------------------------------------------


def write_inputs(folder: Path, url: str, shards: int) -> tuple[str, str]:
    """The manifest and config for a server; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "manifest.yaml"
    manifest.write_text(bench_manifest(PAGE_SIZE, shards=shards, typed=True))
    config = folder / "config.json"
    config.write_text(json.dumps({"base_url": url}))
    return str(manifest), str(config)


# -- one measured row ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    mode: str
    records: int  # records (rows) the mode delivered
    expected: int  # records the API holds
    start: float  # start-up: Spark session / process start to first status / dlt imports and setup
    sync: float  # the rest: reading, typing, writing
    wall: float | None  # the whole process (None: a second sync in a process that did two)
    cpu: float  # CPU seconds (user + system) of every process of the mode; Spark: during the sync only
    peak_mib: float  # peak RSS of the process that drives the work (Spark: the driver's Python)
    jvm_mib: float | None = None  # Spark: the driver JVM's peak RSS
    worker_mib: float | None = None  # Spark: the largest Python worker's peak RSS
    error: str | None = None
    note: str = ""

    @property
    def rate(self) -> float:
        return self.records / self.sync if self.sync > 0 else 0.0

    @property
    def wall_rate(self) -> float | None:
        return self.records / self.wall if self.wall else None

    @property
    def cpu_rate(self) -> float:
        return self.records / self.cpu if self.cpu > 0 else 0.0

    @property
    def failed(self) -> bool:
        return self.error is not None or self.records != self.expected


def _checked(row: Row) -> Row:
    if row.error is None and row.records != row.expected:
        return replace(row, error=f"delivered {row.records:,} records, expected {row.expected:,}")
    return row


def _tail(text: str, lines: int = 4) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])[:500]


@dataclass(frozen=True)
class Child:
    """What a finished child process left: its result line (parsed), times, memory and stderr."""

    result: dict | None
    wall: float
    cpu: float  # user + system seconds of the process and its reaped children
    rss_mib: float
    error: str | None


def run_child(command: Sequence[str], cwd: str, env: dict[str, str] | None = None) -> Child:
    """Run ``command`` to its end; its ``bench-result`` line, wall time and rusage (from ``wait4``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(list(command), stdout=out, stderr=err, cwd=cwd, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    result = None
    for line in stdout.splitlines():
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK):])
    error = f"exit code {code}: {_tail(stderr)}" if code or result is None else None
    return Child(result, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, error)


def parquet_rows(folder: Path) -> int:
    """Rows in every Parquet file under ``folder`` (from the footers); 0 if there is no folder."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(path).num_rows for path in folder.rglob("*.parquet")) if folder.exists() else 0


# -- protocol mode ------------------------------------------------------------------------------------------


def measure_protocol(manifest: str, config: str, expected: int, cwd: str) -> Row:
    """``run-manifest --protocol`` in its own process, its stdout read as it comes: RECORD lines counted."""
    command = run_manifest_command() + [manifest, "--config", config, "--protocol"]
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, cwd=cwd, bufsize=1 << 20)
        assert process.stdout is not None
        first = None
        records = 0
        for line in process.stdout:
            if line.startswith(b'{"type":"RECORD"'):
                records += 1
            elif first is None and b'"STREAM_STATUS"' in line and b'"STARTED"' in line:
                first = time.perf_counter()
        process.stdout.close()
        _, status, usage = os.wait4(process.pid, 0)
        ended = time.perf_counter()
        code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        error = f"exit code {code}: {_tail(err.read().decode(errors='replace'))}" if code else None
    first = first if first is not None else started
    return _checked(Row("run-manifest --protocol", records, expected, first - started, ended - first,
                        ended - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, error=error))


# -- the Spark pipeline (the child process measures itself) -------------------------------------------------


def _proc_stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()


def _peak_kib(pid: int) -> int:
    """A live process's peak resident memory (``VmHWM``), in KiB; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(root: int) -> list[int]:
    """``root`` and every live process under it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(int(_proc_stat(int(entry))[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    found, pending = [root], [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def _tree_cpu(root: int) -> float:
    """CPU seconds used so far by ``root``'s tree: each live process's own, plus what its reaped children used."""
    total = 0
    for pid in _tree(root):
        try:
            fields = _proc_stat(pid)
        except (OSError, IndexError):
            continue
        total += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


def _cpu_parts(jvm: int) -> dict[str, float]:
    """CPU seconds used so far by this (the driver's) Python process, the JVM alone, and its Python workers."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    whole = _tree_cpu(jvm)
    workers = sum(_tree_cpu(pid) for pid in _tree(jvm) if _is_python_worker(pid) and
                  not _is_python_worker(int(_proc_stat(pid)[1])))  # each daemon's tree once
    return {"driver": usage.ru_utime + usage.ru_stime, "jvm": whole - workers, "workers": workers}


def _is_python_worker(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"pyspark.daemon" in handle.read()
    except OSError:
        return False


def spark_child(manifest: str, config: str, output: str) -> int:
    """Run the pipeline in this process, timing Spark's start-up and each sync apart; print the result line.

    Two syncs in one session, each into its own folder: the first is what ``run-manifest`` does (its
    Spark jobs start the Python workers and warm the JVM up), the second shows the steady state.
    """
    sys.path.insert(0, str(REPO))
    from framework.engine.connector import open_connector, read_config
    from framework.engine.selection import select_streams
    from framework.models.destination import DestinationSettings
    from framework.spark.pipeline import run_pipeline
    from framework.spark.session import spark_session

    connector = open_connector(manifest, read_config(config), config_path=config)
    selections = select_streams(connector.streams, None, None)
    started = time.perf_counter()
    spark = spark_session()
    ready = time.perf_counter()
    gateway = spark.sparkContext._gateway
    assert gateway is not None  # a local session's JVM, started by this process
    jvm = gateway.proc.pid
    syncs = []
    for number in (1, 2):
        folder = str(Path(output, f"sync-{number}"))
        settings = DestinationSettings.default_local(folder)  # what run-manifest --output FOLDER lands
        cpu_before = _cpu_parts(jvm)
        began = time.perf_counter()
        result = run_pipeline(connector, manifest, selections, settings, spark)
        seconds = time.perf_counter() - began
        cpu = {part: used - cpu_before.get(part, 0.0) for part, used in _cpu_parts(jvm).items()}
        syncs.append({
            "seconds": seconds,
            "ended_at": time.time(),  # epoch: the parent makes the wall time up to here from it
            "cpu": sum(cpu.values()),
            "cpu_parts": cpu,
            "output": folder,
            "records": sum(s.records for s in result.streams),
            "files": sum(len(s.files) for s in result.streams),
            "units": sum(s.units for s in result.streams),
            "error": next((s.error for s in result.streams if s.error), None),
            "driver_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        })
    workers = [pid for pid in _tree(jvm) if _is_python_worker(pid)]
    report = {
        "start": ready - started,
        "syncs": syncs,
        "cores": int(spark.sparkContext.defaultParallelism),
        "jvm_mib": _peak_kib(jvm) / 1024,
        "worker_mib": max((_peak_kib(pid) for pid in workers), default=0) / 1024,
        "workers": len(workers),
    }
    spark.stop()
    print(RESULT_MARK + json.dumps(report), flush=True)
    return 1 if any(sync["error"] for sync in syncs) else 0


def measure_spark(manifest: str, config: str, expected: int, folder: Path, label: str) -> list[Row]:
    """Two rows: the first sync of a fresh session (as ``run-manifest`` runs it), and a second in the same session."""
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--spark-child", manifest, config,
               str(folder / "spark-output")]
    launched = time.time()
    child = run_child(command, str(folder))
    if child.result is None:
        return [Row(label, 0, expected, 0.0, 0.0, child.wall, child.cpu, child.rss_mib, error=child.error)]
    result = child.result
    rows = []
    first = result["syncs"][0]["seconds"]
    for number, sync in enumerate(result["syncs"], 1):
        parts = ", ".join(f"{name} {seconds:.1f}" for name, seconds in sync["cpu_parts"].items())
        note = (f"{sync['units']} partitions, {sync['files']} files, {result['cores']} cores, "
                f"{sync['records']:,} records reported, {result['workers']} Python worker processes; "
                f"CPU s: {parts}")
        wall = sync["ended_at"] - launched  # process start to the end of the first sync, as run-manifest
        row = Row(label, parquet_rows(Path(sync["output"])), expected, result["start"], sync["seconds"], wall,
                  sync["cpu"], sync["driver_mib"], result["jvm_mib"], result["worker_mib"],
                  sync["error"] or child.error, note)
        if number == 2:  # its start-up: Spark's and the whole first sync
            row = replace(row, mode=f"{label}, 2nd sync", start=result["start"] + first, wall=None,
                          note=note + "; same session, Python workers warm")
        rows.append(_checked(row))
    return rows


# -- dlt (in the peers venv) --------------------------------------------------------------------------------


def measure_dlt(python: str, url: str, shards: int, expected: int, folder: Path) -> Row:
    label = "dlt rest_api -> filesystem (Parquet)"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "dlt_bench.py"
    script.write_text(DLT_SCRIPT)
    output, work = folder / "out", folder / "work"
    env = dict(os.environ, RUNTIME__DLTHUB_TELEMETRY="false", DLT_DATA_DIR=str(folder / "data"))
    command = [python, str(script), url, str(shards), str(PAGE_SIZE), str(output), str(work)]
    child = run_child(command, str(folder), env)
    if child.result is None:
        return Row(label, 0, expected, 0.0, 0.0, child.wall, child.cpu, child.rss_mib, error=child.error)
    nested = parquet_rows(output / "bench" / f"{STREAM}__tags")
    note = f"dlt {child.result['version']}; also wrote {nested:,} rows of the nested table {STREAM}__tags"
    return _checked(Row(label, parquet_rows(output / "bench" / STREAM), expected, child.result["start"],
                        child.result["sync"], child.wall, child.cpu, child.rss_mib, error=child.error, note=note))


# -- report -------------------------------------------------------------------------------------------------


def _number(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


COLUMNS = ("mode", "records", "start s", "sync s", "rec/s sync", "wall s", "rec/s wall", "CPU s", "rec/CPU-s",
           "peak MiB", "JVM MiB", "worker MiB")


def _cells(row: Row) -> list[str]:
    return [row.mode, f"{row.records:,}", f"{row.start:.2f}", f"{row.sync:.2f}", _number(row.rate),
            _number(row.wall, 2), _number(row.wall_rate), f"{row.cpu:.1f}", _number(row.cpu_rate),
            _number(row.peak_mib), _number(row.jvm_mib), _number(row.worker_mib)]


def table(rows: Sequence[Row]) -> str:
    cells = [_cells(row) for row in rows]
    widths = [max([len(name)] + [len(line[i]) for line in cells]) for i, name in enumerate(COLUMNS)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

    lines = [line(COLUMNS), "-" * len(line(COLUMNS))]
    for row, values in zip(rows, cells):
        lines.append(line(values))
        if row.error:
            lines.append(f"    FAILED: {row.error}")
    return "\n".join(lines)


def markdown_table(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "| --- |" + " ---: |" * (len(COLUMNS) - 1)]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in rows]
    return "\n".join(lines)


def _ratio(a: float | None, b: float | None) -> float:
    return a / b if a and b else 0.0


def ratios(protocol: Row, spark: Row, warm: Row, spark_small: Row | None, dlt: Row | None) -> list[str]:
    """The lines under the table: the targets' ratios (first sync, then the warm second sync) and memory."""
    lines = [(f"spark / protocol: {_ratio(spark.rate, protocol.rate):.2f}x protocol mode's records/s over the sync "
              f"(target >= 0.50); 2nd sync: {_ratio(warm.rate, protocol.rate):.2f}x; over the wall time "
              f"{_ratio(spark.wall_rate, protocol.wall_rate):.2f}x; records per CPU-second "
              f"{_ratio(spark.cpu_rate, protocol.cpu_rate):.2f}x "
              f"(2nd sync {_ratio(warm.cpu_rate, protocol.cpu_rate):.2f}x)")]
    if dlt is not None:
        lines.append(f"spark / dlt:      {_ratio(spark.rate, dlt.rate):.1f}x dlt's records/s over the sync "
                     f"(target >= 5); 2nd sync: {_ratio(warm.rate, dlt.rate):.1f}x; over the wall time "
                     f"{_ratio(spark.wall_rate, dlt.wall_rate):.1f}x; records per CPU-second "
                     f"{_ratio(spark.cpu_rate, dlt.cpu_rate):.1f}x "
                     f"(2nd sync {_ratio(warm.cpu_rate, dlt.cpu_rate):.1f}x)")
    if spark_small is not None and spark_small.peak_mib:
        lines.append(f"driver peak RSS: {spark_small.peak_mib:.0f} MiB at {spark_small.expected:,} records, "
                     f"{spark.peak_mib:.0f} MiB at {spark.expected:,} "
                     f"({_ratio(spark.peak_mib, spark_small.peak_mib):.2f}x; flat is close to 1.00x); driver JVM "
                     f"{_number(spark_small.jvm_mib)} and {_number(spark.jvm_mib)} MiB; largest Python worker "
                     f"{_number(spark_small.worker_mib)} and {_number(spark.worker_mib)} MiB")
    return lines


LEGEND = """\
start s: Spark: spark_session() (for a 2nd sync: that and the whole 1st sync); protocol: process start to the
  first STREAM_STATUS; dlt: imports and setup. sync s: the rest (Spark: run_pipeline()). wall s: process start
  to the end (Spark: to the end of the 1st sync, imports, manifest and Spark's start-up included).
CPU s: user + system seconds; Spark: of the driver, its JVM and the Python workers during run_pipeline();
  protocol and dlt: the whole process. The API server is not counted anywhere.
peak MiB: the driver's Python process (Spark), the process itself (others); JVM MiB: the Spark driver JVM;
  worker MiB: the largest Spark Python worker (both after both syncs)."""


def task_profile(records: int, shards: int, top: int, sort: str = "tottime") -> int:
    """Profile one task's work in this process (see the module docs); 1 if it landed another number of rows."""
    import cProfile
    import pstats

    sys.path.insert(0, str(REPO))
    import orjson

    from framework.engine.connector import open_connector, read_config
    from framework.engine.plan import open_sync
    from framework.engine.results import from_arrow
    from framework.engine.worker import ConnectorSource
    from framework.models.destination import DestinationSettings
    from framework.spark.tasks import TaskJob, encode_units, run_task

    with tempfile.TemporaryDirectory(prefix="bench-task-") as tmp, ApiServer(records, shards) as api:
        manifest, config = write_inputs(Path(tmp, "inputs"), api.url, shards)
        connector = open_connector(manifest, read_config(config), config_path=config)
        units = list(open_sync(connector, connector.stream(STREAM), None).units())
        settings = DestinationSettings.default_local(str(Path(tmp, "out")))
        job = TaskJob(source=ConnectorSource.of_connector(connector, manifest, Path(manifest).read_text()),
                      stream=STREAM, destination=orjson.loads(settings.model_dump_json(by_alias=True)), sync_id=1,
                      generation_id=0, part_start=0, tasks=len(units) + 1, started_at=time.time())

        def run(lane: int, profile: cProfile.Profile | None = None) -> tuple[int, float]:
            cpu = time.process_time()
            if profile is not None:
                profile.enable()
            done = [r for b in run_task(job, iter(encode_units(units).to_batches()), lane) for r in from_arrow(b)]
            if profile is not None:
                profile.disable()
            return sum(r.records for r in done), time.process_time() - cpu

        list(run_task(job, iter(encode_units(units[:1]).to_batches()), 0))  # the connector built, as in a worker
        count, cpu = run(1)
        profile = cProfile.Profile(time.process_time)
        _, profiled_cpu = run(2, profile)
    print(f"{count:,} records of {shards} shard(s) in one task: {cpu:.2f} CPU-s, {count / cpu:,.0f} records/CPU-s "
          f"({profiled_cpu:.2f} CPU-s under the profiler)")
    stats = pstats.Stats(profile)
    stats.sort_stats(sort).print_stats(top)
    return 0 if count == records else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The Spark pipeline into Parquet vs protocol mode and dlt.")
    parser.add_argument("--records", type=int, default=1_000_000, help="records the API serves (default 1000000)")
    parser.add_argument("--small", type=int, default=200_000,
                        help="records of the second Spark run, for the driver's memory (default 200000; 0: skip)")
    parser.add_argument("--shards", type=int, default=16, help="shards = partitions of the stream (default 16)")
    parser.add_argument("--peers", action="store_true", help="also run dlt's rest_api source into Parquet")
    parser.add_argument("--peers-python", metavar="PATH",
                        help="python with dlt (default: $DLT_PYTHON, then .venv-peers/bin/python)")
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    parser.add_argument("--task-profile", action="store_true",
                        help="no Spark: profile one task's work in this process (default 250000 records, 2 shards)")
    parser.add_argument("--top", type=int, default=25, help="--task-profile: functions shown (default 25)")
    parser.add_argument("--sort", choices=["tottime", "cumulative"], default="tottime",
                        help="--task-profile: order of the functions (default tottime: time in the function itself)")
    parser.add_argument("--spark-child", nargs=3, metavar=("MANIFEST", "CONFIG", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.spark_child:
        return spark_child(*args.spark_child)
    if args.task_profile:
        given = argv if argv is not None else sys.argv[1:]
        return task_profile(args.records if "--records" in given else 250_000,
                            args.shards if "--shards" in given else 2, args.top, args.sort)

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    python = None
    if args.peers:
        python = peers_python(args.peers_python, "DLT_PYTHON")
        if python is None:
            progress("--peers: no python with dlt found; run `bash bench/peers.sh` (makes .venv-peers) "
                     "or pass --peers-python PATH")
            return 2

    total_started = time.perf_counter()
    load_before = os.getloadavg()[0]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp, contextlib.ExitStack() as servers:
        sizes = [args.records] + ([args.small] if args.small and args.small != args.records else [])
        progress(f"starting the API ({' and '.join(f'{n:,}' for n in sizes)} records, {args.shards} shards) ...")
        apis = {n: servers.enter_context(ApiServer(n, args.shards)) for n in sizes}
        api = apis[args.records]
        manifest, config = write_inputs(Path(tmp, "inputs"), api.url, args.shards)

        def done(row: Row) -> Row:
            progress(f"  {row.mode}: {row.records:,} records, {row.sync:.1f} s sync"
                     + (f"  FAILED: {row.error}" if row.error else ""))
            rows.append(row)
            return row

        progress("protocol mode ...")
        protocol = done(measure_protocol(manifest, config, args.records, tmp))
        progress("Spark pipeline ...")
        spark_rows = [done(row) for row in measure_spark(manifest, config, args.records, Path(tmp, "spark"),
                                                         "Spark pipeline -> Parquet")]
        spark_small = None
        if args.small and args.small != args.records:
            small_manifest, small_config = write_inputs(Path(tmp, "inputs-small"), apis[args.small].url, args.shards)
            progress(f"Spark pipeline at {args.small:,} records ...")
            small_rows = [done(row) for row in measure_spark(
                small_manifest, small_config, args.small, Path(tmp, "spark-small"),
                f"Spark pipeline -> Parquet ({args.small:,})")]
            spark_small = small_rows[0]
        dlt = None
        if python:
            progress("dlt ...")
            dlt = done(measure_dlt(python, api.url, args.shards, args.records, Path(tmp, "dlt")))

    print()
    print(f"Pipeline: {args.records:,} records in {args.shards} shards, pages of {PAGE_SIZE:,}, from a local API "
          f"({os.cpu_count()} CPUs, load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after; "
          f"{time.perf_counter() - total_started:.0f} s in all)")
    print()
    print(table(rows))
    print()
    for line in ratios(protocol, spark_rows[0], spark_rows[-1], spark_small, dlt):
        print(line)
    for row in rows:
        if row.note:
            print(f"{row.mode}: {row.note}")
    print(LEGEND)
    if args.markdown:
        print()
        print(markdown_table(rows))
    return 1 if any(row.failed for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
