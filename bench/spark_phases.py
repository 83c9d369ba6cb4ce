"""Where the time of a Spark-mode sync goes: its phases from the JSON log, and a cProfile of the driver.

    python bench/spark_phases.py [--records 200000] [--shards 16] [--runs 1] [--top 12]

Starts ``bench/api_server.py`` with N records (``bench/pipeline.py``'s
manifest: 16 shards, pages of 1,000, a typed schema) and runs ``run-manifest
MANIFEST --config CFG --output DIR --log-format json`` twice per run, each
under ``python -m cProfile``: as it runs by default (a local session starting
in the background while the driver reads) and with ``--wait-for-spark`` (the
driver waits for Spark, every group runs on it: the pipeline as it was before
the driver read). For each it prints when, counted from the process start,
the JSON log said ``started``, ``stream_planned``, each ``stream_progress``
and ``summary``, the process's exit, and the driver's functions with the most
cumulative time (cProfile: the driver's main thread only, so time spent
waiting on Spark shows as the call that waited). See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ApiServer, run_manifest_command
from pipeline import STREAM, parquet_rows, write_inputs

VARIANTS = {"driver reads while Spark starts (default)": [], "--wait-for-spark (before)": ["--wait-for-spark"]}


def profile_run(manifest: str, config: str, folder: Path, more: list[str], top: int) -> tuple[list[str], float]:
    """One profiled sync: the lines to print and the wall seconds."""
    output, stats = folder / "output", folder / "driver.prof"
    command = run_manifest_command()
    module = ["-m", "framework.cli.run"] if command[0] == sys.executable else [command[0]]
    command = [sys.executable, "-m", "cProfile", "-o", str(stats), *module, manifest, "--config", config,
               "--output", str(output), "--log-format", "json", *more]
    began = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=folder,
                               env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    assert process.stderr is not None
    marks: list[tuple[float, str]] = []
    for raw in process.stderr:
        now = time.perf_counter() - began
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        kind = event.get("event")
        if kind == "stream_progress":
            kind = f"progress {event['records']:,} records, {event['partitions_done']}/{event['partitions']} done"
        elif kind == "started":
            kind = f"started ({event['master']})"
        marks.append((now, kind))
    code = process.wait()
    wall = time.perf_counter() - began
    lines = [f"  {at:6.2f} s  {kind}" for at, kind in marks] + [f"  {wall:6.2f} s  exit {code}"]
    rows = parquet_rows(output / STREAM)
    lines.append(f"  {rows:,} rows in the Parquet files")
    profile = pstats.Stats(str(stats))
    entries = sorted(profile.stats.items(), key=lambda item: item[1][3], reverse=True)  # type: ignore[attr-defined]
    lines.append(f"  driver, cumulative seconds (top {top} below the entry point):")
    shown = 0
    for (file, line, name), (_, calls, _, cumulative, _) in entries:
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}({name})" if file != "~" else name
        if name in ("<module>", "exec", "run_module", "_run_module_as_main", "_run_code", "runctx", "run", "main",
                    "<built-in method builtins.exec>") or "cProfile" in file or "runpy" in file:
            continue
        lines.append(f"    {cumulative:7.2f}  {calls:>8}  {where}")
        shown += 1
        if shown >= top:
            break
    return lines, wall


def main() -> int:
    parser = argparse.ArgumentParser(description="Phases and a driver profile of a Spark-mode sync.")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-phases-") as tmp, ApiServer(args.records, args.shards) as api:
        manifest, config = write_inputs(Path(tmp, "inputs"), api.url, args.shards)
        for number in range(1, args.runs + 1):
            for label, more in VARIANTS.items():
                folder = Path(tmp, f"{number}-{len(more)}")
                folder.mkdir()
                lines, wall = profile_run(manifest, config, folder, more, args.top)
                print(f"\n{label}, {args.records:,} records, run {number}: {wall:.2f} s wall")
                print("\n".join(lines))
    print(f"\n{os.cpu_count()} CPUs, load average {load:.1f} before and {os.getloadavg()[0]:.1f} after "
          "(cProfile slows the driver's Python by about a third)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
