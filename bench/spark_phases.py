"""Where the time of a Spark-mode sync goes: its phases from the JSON log, and a cProfile of the driver.

    python bench/spark_phases.py [--records 200000] [--shards 16] [--runs 1] [--top 12]
    python bench/spark_phases.py --cpu [--records 2000000] [--timeline 0.5] [--option=--conf=KEY=VALUE ...]

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
waiting on Spark shows as the call that waited).

``--cpu``: no profiler, the default variant only (with ``--option`` arguments
added to run-manifest): the CPU seconds of the driver, of its JVM (split by
thread: JIT compilers, GC, task threads, the rest with their busiest names)
and of Spark's Python daemon and workers, sampled from /proc every 0.1 s, and
the API server's. CPU seconds move much less than wall seconds with the load.
``--timeline S`` adds the CPU seconds each of them took in each S seconds of
the sync: when the JVM starts, when the workers do, what runs at the end.
See bench/README.md.
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


def read_marks(process: subprocess.Popen, began: float, marks: list[tuple[float, str]],
               kinds: tuple[str, ...] = ("",)) -> None:
    """The events of run-manifest's JSON log (its stderr) as (seconds since ``began``, a few words) into ``marks``,
    those whose words start with one of ``kinds`` (default: all), until the log ends."""
    assert process.stderr is not None
    for raw in process.stderr:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        kind = str(event.get("event"))
        if kind == "stream_progress":
            kind = f"progress {event['records']:,} records, {event['partitions_done']}/{event['partitions']} done"
        elif kind == "started":
            kind = f"started ({event['master']})"
        if kind.startswith(kinds):
            marks.append((time.perf_counter() - began, kind))


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
    marks: list[tuple[float, str]] = []
    read_marks(process, began, marks)
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


#: A Spark-mode sync's processes and the JVM's threads by kind, from the start of their names (``comm``).
_THREAD_KINDS = (("Executor task", "JVM task threads"), ("C2 Compiler", "JVM JIT C2"), ("C1 Compiler", "JVM JIT C1"),
                 ("GC Thread", "JVM GC"), ("G1 ", "JVM GC"))


def _stat(path: str) -> tuple[int, str, float] | None:
    """A process's or thread's ``stat`` in /proc: its parent, command name and CPU seconds (user + system, its
    own); None when it is gone."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[1]), text[text.index("(") + 1:text.rindex(")")],
            (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))


def _proc_stats() -> dict[int, tuple[int, str, float]]:
    """Every process's parent, command name and CPU seconds, from /proc."""
    found = {int(entry): _stat(f"/proc/{entry}/stat") for entry in os.listdir("/proc") if entry.isdigit()}
    return {pid: stat for pid, stat in found.items() if stat is not None}


def _thread_seconds(pid: int) -> dict[int, tuple[str, float]]:
    """The threads of process ``pid``: their names and CPU seconds."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    found = {int(tid): _stat(f"/proc/{pid}/task/{tid}/stat") for tid in tids}
    return {tid: (stat[1], stat[2]) for tid, stat in found.items() if stat is not None}


def cpu_run(manifest: str, config: str, folder: Path, more: list[str], api_pid: int,
            step: float = 0.0) -> tuple[list[str], float]:
    """One sync (no profiler) with the CPU seconds of each of its processes, and of the JVM's threads by
    kind, sampled from /proc every 0.1 s (the last sample of a process that ended counts). ``step`` > 0: a
    timeline too, the CPU seconds each role took in each ``step`` seconds of the wall clock."""
    output = folder / "output"
    command = [*run_manifest_command(), manifest, "--config", config, "--output", str(output),
               "--log-format", "json", *more]
    began = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=folder,
                               env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    marks: list[tuple[float, str]] = []

    import threading

    reader = threading.Thread(target=read_marks, args=(process, began, marks, ("started", "spark_ready", "summary",
                                                                                 "progress")), daemon=True)
    reader.start()
    seen: dict[int, tuple[str, float]] = {}  # pid -> role, CPU seconds
    threads: dict[int, tuple[str, float]] = {}  # the JVM's tid -> name, CPU seconds
    api_before = _proc_stats().get(api_pid, (0, "", 0.0))[2]
    api_after = api_before
    timeline: list[tuple[float, dict[str, float]]] = []  # (seconds since began, CPU seconds by role so far)
    while process.poll() is None:
        stats = _proc_stats()
        api_after = stats.get(api_pid, (0, "", api_after))[2]
        family = {process.pid}
        grew = True
        while grew:
            grew = False
            for pid, (parent, _, _) in stats.items():
                if parent in family and pid not in family:
                    family.add(pid)
                    grew = True
        for pid in family:
            parent, name, cpu = stats[pid]
            if pid == process.pid:
                role = "driver (Python)"
            elif name == "java":
                role = "JVM"
                threads.update((tid, value) for tid, value in _thread_seconds(pid).items())
            elif name.startswith("python"):
                role = "Python daemon and workers"
            else:
                role = f"other ({name})"
            if cpu >= seen.get(pid, ("", -1.0))[1]:
                seen[pid] = (role, cpu)
        if step > 0:
            totals: dict[str, float] = {"API server": api_after - api_before}
            for role, cpu in seen.values():
                totals[role] = totals.get(role, 0.0) + cpu
            timeline.append((time.perf_counter() - began, totals))
        time.sleep(0.1)
    wall = time.perf_counter() - began
    reader.join(timeout=5)
    by_role: dict[str, float] = {}
    for role, cpu in seen.values():
        by_role[role] = by_role.get(role, 0.0) + cpu
    jvm: dict[str, float] = {}
    for name, cpu in threads.values():
        kind = next((kind for start, kind in _THREAD_KINDS if name.startswith(start)), "JVM other threads")
        jvm[kind] = jvm.get(kind, 0.0) + cpu
    lines = [f"  {at:6.2f} s  {kind}" for at, kind in marks] + [f"  {wall:6.2f} s  exit {process.returncode}"]
    lines.append(f"  {parquet_rows(output / STREAM):,} rows in the Parquet files; CPU seconds (last sample):")
    lines += [f"    {cpu:7.2f}  {role}" for role, cpu in sorted(by_role.items(), key=lambda item: -item[1])]
    lines += [f"    {cpu:7.2f}    {kind}" for kind, cpu in sorted(jvm.items(), key=lambda item: -item[1])]
    others: dict[str, float] = {}
    for name, cpu in threads.values():
        if not any(name.startswith(start) for start, _ in _THREAD_KINDS):
            others[name.rstrip("0123456789")] = others.get(name.rstrip("0123456789"), 0.0) + cpu
    lines += [f"    {cpu:7.2f}      {name}" for name, cpu in sorted(others.items(), key=lambda item: -item[1])[:6]]
    lines.append(f"    {api_after - api_before:7.2f}  the API server")
    lines.append(f"    {sum(by_role.values()):7.2f}  in all (the sync's processes)")
    if step > 0:
        lines += _timeline(timeline, step)
    return lines, wall


_SHORT = {"driver (Python)": "driver", "JVM": "JVM", "Python daemon and workers": "workers", "API server": "API"}


def _timeline(samples: list[tuple[float, dict[str, float]]], step: float) -> list[str]:
    """The CPU seconds each role took in each ``step`` seconds (from cumulative samples)."""
    roles = [role for role in _SHORT if any(role in totals for _, totals in samples)]
    lines = ["  CPU seconds in each interval:" + "".join(f"  {_SHORT[role]:>7}" for role in roles)]
    before: dict[str, float] = {}
    edge = step
    for at, totals in samples:
        if at < edge and (at, totals) != samples[-1]:
            continue
        lines.append(f"    {edge - step:5.1f}-{min(edge, at):5.1f} s" + "".join(
            f"  {totals.get(role, 0.0) - before.get(role, 0.0):7.2f}" for role in roles))
        before = dict(totals)
        while edge <= at:
            edge += step
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description="Phases and a driver profile of a Spark-mode sync.")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--cpu", action="store_true",
                        help="no profiler: each run's CPU seconds by process (driver, JVM by kind of thread, "
                             "Python workers, the API server), default variant only")
    parser.add_argument("--timeline", type=float, default=0.0, metavar="SECONDS",
                        help="--cpu: also the CPU seconds of each role (driver, JVM, workers, API) every SECONDS")
    parser.add_argument("--option", action="append", default=[], metavar="ARG",
                        help="--cpu: another argument for run-manifest (repeatable), e.g. --option=--conf=K=V")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-phases-") as tmp, ApiServer(args.records, args.shards) as api:
        manifest, config = write_inputs(Path(tmp, "inputs"), api.url, args.shards)
        for number in range(1, args.runs + 1):
            if args.cpu:
                folder = Path(tmp, f"{number}-cpu")
                folder.mkdir()
                api_pid = api.process.pid if api.process else 0
                lines, wall = cpu_run(manifest, config, folder, list(args.option), api_pid, args.timeline)
                print(f"\n{' '.join(args.option) or 'default'}, {args.records:,} records, run {number}: "
                      f"{wall:.2f} s wall")
                print("\n".join(lines))
                continue
            for label, more in VARIANTS.items():
                folder = Path(tmp, f"{number}-{len(more)}")
                folder.mkdir()
                lines, wall = profile_run(manifest, config, folder, more, args.top)
                print(f"\n{label}, {args.records:,} records, run {number}: {wall:.2f} s wall")
                print("\n".join(lines))
    print(f"\n{os.cpu_count()} CPUs, load average {load:.1f} before and {os.getloadavg()[0]:.1f} after"
          + ("" if args.cpu else " (cProfile slows the driver's Python by about a third)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
