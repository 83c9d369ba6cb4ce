"""What planning a substream costs the driver at 10k, 100k and 1M partitions.

    python bench/plan_scale.py [--sizes 10000,100000,1000000] [--timeout 900] [--tasks 4]
                               [--profile 100000] [--markdown]

For each size N, starts ``bench/api_server.py --records N`` (its own process,
pages of 1,000) and, in a fresh child process of this script (so its peak
memory is its own), opens a connector with two streams: ``records`` (the
parent, paged by page number) and ``details``, a substream over it
(``SubstreamPartitionRouter``, ``parent_key: id``) with a
``DatetimeBasedCursor`` of one window, so every parent record is one
partition and one unit. On the driver only (no Spark), through the engine's
own code paths, it measures:

* **plan s**: ``open_sync(connector, details, None).plan()`` (reads the N/1,000
  parent pages one after another, routes, windows and makes the units), and the
  parent pages read per second over it;
* **RSS +MiB**: the growth of peak resident memory over the plan (``ru_maxrss``
  against the resident size just before it), and **B/unit**: that growth over the
  units (what the plan held in memory per unit, parents' records included);
* **pickle B/unit**: ``pickle.dumps`` of one unit (the mean over up to 1,000), and of
  a whole group of ``contiguous_groups(units, --tasks)`` per unit (what a Spark task's
  closure carries);
* **groups ms**: ``contiguous_groups(units, --tasks)``;
* **fold s**, **state B/part**: ``observe()`` then ``done()`` on every unit (as the
  driver does when groups come back), then ``state(final=True)`` as JSON: its size
  over N, the partitions kept in full in ``states`` (at most
  ``MAX_PARTITION_STATES``) and the peak memory after the fold;
* **replan s**, **resumed**: the next sync's plan from that state (parents read
  again, each partition looked up among the kept and the compacted ones), and its
  units that start from a saved value (all of them, or the state lost partitions).

``--timeout`` bounds each size (its child is killed; the row says how far it
got). ``--profile N`` also runs cProfile over the plan at N and prints the 15
functions with the most cumulative time. See bench/README.md ("Planning at scale").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass

import yaml
from harness import PAGE_SIZE, REPO, ApiServer

RESULT_MARK = "bench-result "
STAGE_MARK = "bench-stage "
START = "2024-01-01T00:00:00Z"
END = "2030-01-01T00:00:00Z"


def manifest_text(page_size: int = PAGE_SIZE, shards: int = 1) -> str:
    """The parent ``records`` (all of the API, pages of ``page_size``) and the substream ``details`` over it.

    With ``shards`` > 1 the parent is partitioned (a ``ListPartitionRouter`` over the API's shards), so its
    shards' pages can be read side by side."""
    paginator = {
        "type": "DefaultPaginator",
        "pagination_strategy": {"type": "PageIncrement", "page_size": page_size, "start_from_page": 1},
        "page_token_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "page"},
        "page_size_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "per_page"}}
    selector = {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": ["data"]}}
    schema = {"type": "InlineSchemaLoader", "schema": {"type": "object", "properties": {}}}
    parent = {
        "type": "DeclarativeStream", "name": "records", "primary_key": "id", "schema_loader": schema,
        "retriever": {"type": "SimpleRetriever", "record_selector": selector, "paginator": paginator,
                      "requester": {"type": "HttpRequester", "url_base": "{{ config['base_url'] }}",
                                    "path": "/records", "http_method": "GET"}}}
    if shards > 1:
        parent["retriever"]["requester"]["request_parameters"] = {"shards": str(shards)}
        parent["retriever"]["partition_router"] = {
            "type": "ListPartitionRouter", "cursor_field": "shard", "values": [str(k) for k in range(shards)],
            "request_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "shard"}}
    child = {
        "type": "DeclarativeStream", "name": "details", "primary_key": "id", "schema_loader": schema,
        "retriever": {
            "type": "SimpleRetriever", "record_selector": selector,
            "requester": {"type": "HttpRequester", "url_base": "{{ config['base_url'] }}",
                          "path": "/records/{{ stream_partition.record_id }}/details", "http_method": "GET"},
            "partition_router": {"type": "SubstreamPartitionRouter", "parent_stream_configs": [
                {"type": "ParentStreamConfig", "stream": parent, "parent_key": "id",
                 "partition_field": "record_id"}]}},
        "incremental_sync": {
            "type": "DatetimeBasedCursor", "cursor_field": "updated_at",
            "datetime_format": "%Y-%m-%dT%H:%M:%SZ", "cursor_datetime_formats": ["%Y-%m-%dT%H:%M:%SZ"],
            "start_datetime": START, "end_datetime": END, "step": "P10000D", "cursor_granularity": "PT1S"}}
    manifest = {
        "version": "6.7.0", "type": "DeclarativeSource",
        "check": {"type": "CheckStream", "stream_names": ["records"]},
        "streams": [parent, child],
        "spec": {"type": "Spec", "connection_specification": {
            "type": "object", "required": ["base_url"], "properties": {"base_url": {"type": "string"}}}},
    }
    return yaml.safe_dump(manifest, sort_keys=False)


def _rss_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _stage(name: str) -> None:
    print(STAGE_MARK + name, flush=True)


def child(url: str, records: int, tasks: int, profile: bool, mode: str, shards: int, replan: bool = True) -> None:
    """Measure one size in this process (the parent script reads the printed result line)."""
    import pickle
    from datetime import datetime, timezone

    import orjson

    from framework.engine.connector import open_connector_text
    from framework.engine.plan import contiguous_groups, open_sync
    from framework.engine.results import fold_results  # noqa: F401 - imported before the baseline (pyarrow)
    from framework.engine.sync import MAX_PARTITION_STATES

    connector = open_connector_text(manifest_text(shards=shards), {"base_url": url})
    stream = connector.stream("details")
    sync = open_sync(connector, stream, None)
    latest = datetime(2025, 6, 1, tzinfo=timezone.utc)
    rss_before = _rss_mib()
    extra: dict = {}
    if mode == "lazy":
        _stage("planning and running")
        plan_s, state, units_count, extra = _plan_and_run(sync, tasks, latest)
        peak_plan = _peak_mib()
        fold_s = pickle_unit = pickle_group = groups_ms = 0.0
        del sync
    else:
        _stage("planning")
        started = time.perf_counter()
        if profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            units = profiler.runcall(sync.plan)
            plan_s = time.perf_counter() - started
            print(f"cProfile of plan() at {records:,} parent records (top 15 by cumulative time):", flush=True)
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(15)
        else:
            units = sync.plan()
            plan_s = time.perf_counter() - started
        peak_plan = _peak_mib()
        units_count = len(units)
        _stage("planned")
        sample = units[:: max(1, len(units) // 1000)][:1000]
        pickle_unit = sum(len(pickle.dumps(unit)) for unit in sample) / len(sample)
        started = time.perf_counter()
        groups = contiguous_groups(units, tasks)
        groups_ms = (time.perf_counter() - started) * 1000
        pickle_group = len(pickle.dumps(groups[0])) / max(1, len(groups[0]))
        del groups
        _stage("folding")
        started = time.perf_counter()
        for unit in units:
            sync.observe(unit, latest, 1)
            sync.done(unit)
        state = sync.state(final=True)
        fold_s = time.perf_counter() - started
        del units, sync
    if units_count != records:
        raise SystemExit(f"planned {units_count} units for {records} parent records")
    state_bytes = len(orjson.dumps(state))
    kept = len((state or {}).get("states", ()))
    _stage("planning again from the state")
    started = time.perf_counter()
    resumed = count = 0
    if replan:
        again = open_sync(connector, stream, orjson.loads(orjson.dumps(state)))
        for unit in (again.units() if hasattr(again, "units") and mode == "lazy" else again.plan()):
            count += 1
            resumed += unit.prior is not None
    else:
        count = units_count
    replan_s = time.perf_counter() - started
    print(RESULT_MARK + json.dumps({
        "records": records, "mode": mode, "units": count, "pages": -(-records // PAGE_SIZE), "plan_s": plan_s,
        "rss_before": rss_before, "rss_growth": peak_plan - rss_before, "pickle_unit": pickle_unit,
        "pickle_group": pickle_group, "groups_ms": groups_ms, "fold_s": fold_s, "state_bytes": state_bytes,
        "states_kept": kept, "max_states": MAX_PARTITION_STATES,
        "replan_s": replan_s, "resumed": resumed, "peak_after_fold": _peak_mib(), **extra}), flush=True)


def _plan_and_run(sync, tasks: int, latest) -> tuple[float, dict | None, int, dict]:  # noqa: ANN001
    """What the Spark pipeline's driver does, with the executors' side made instant: ``lazy_groups`` over
    ``sync.units()``, ``tasks`` groups in flight, each group's results folded when it comes back (the oldest
    first) and the state written as JSON as the pipeline saves it (after each of the first ``tasks`` groups,
    then at most every ``STATE_SAVE_SECONDS``). Returns (seconds, final state, units, extra columns)."""
    from collections import deque

    import orjson

    from framework.engine.plan import STATE_SAVE_SECONDS, lazy_groups
    from framework.engine.results import UnitResult, fold_results

    started = time.perf_counter()
    flight: deque[list] = deque()
    units = groups = saves = 0
    save_s = 0.0
    state_peak = 0

    def save() -> None:
        nonlocal saves, save_s, state_peak
        begun = time.perf_counter()
        state_peak = max(state_peak, len(orjson.dumps(sync.state())))
        save_s += time.perf_counter() - begun
        saves += 1

    saved_at = time.perf_counter()
    back_count = 0

    def come_back(group: list) -> None:  # saved as the pipeline saves (framework/spark/pipeline.py)
        nonlocal back_count, saved_at
        fold_results(sync, [UnitResult(unit.index, records=1, pages=1, latest=latest) for unit in group])
        back_count += 1
        if back_count <= tasks or time.perf_counter() - saved_at >= STATE_SAVE_SECONDS:
            save()
            saved_at = time.perf_counter()

    for group in lazy_groups(sync.units(), tasks):
        units += len(group)
        groups += 1
        flight.append(group)
        if len(flight) >= tasks:
            come_back(flight.popleft())
    while flight:
        come_back(flight.popleft())
    state = sync.state(final=True)
    return time.perf_counter() - started, state, units, {"groups": groups, "saves": saves, "save_s": save_s}


@dataclass
class Row:
    records: int
    result: dict | None
    note: str = ""
    label: str = ""


def measure(records: int, tasks: int, timeout: float, profile: bool, mode: str = "lazy", shards: int = 1,
            repo: str = str(REPO), replan: bool = True) -> Row:
    with ApiServer(records, shards=shards if shards > 1 else None) as api:
        command = [sys.executable, __file__, "--child", api.url, str(records), "--tasks", str(tasks),
                   "--mode", "eager" if mode == "before" else mode, "--shards", str(shards)]
        if profile:
            command.append("--child-profile")
        if not replan:
            command.append("--no-replan")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
        timed_out = False
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
            timed_out = True
        stage, result = "starting", None
        for line in output.splitlines():
            if line.startswith(RESULT_MARK):
                result = json.loads(line[len(RESULT_MARK):])
            elif line.startswith(STAGE_MARK):
                stage = line[len(STAGE_MARK):]
            else:
                print(line)
        if timed_out:
            return Row(records, None, f"timed out after {timeout:.0f} s while {stage}", mode)
        if process.returncode != 0 or result is None:
            return Row(records, None, f"failed (exit {process.returncode}) while {stage}", mode)
        return Row(records, result, label=mode)


def table(rows: list[Row], markdown: bool) -> str:
    head = ["partitions", "mode", "plan s", "parent pages/s", "RSS +MiB", "B/part (RSS)", "groups", "saves",
            "save s", "fold s", "state KiB", "state B/part", "states kept", "replan s", "resumed"]
    lines = []
    for row in rows:
        r = row.result
        if r is None:
            lines.append([f"{row.records:,}", row.label, row.note] + [""] * (len(head) - 3))
            continue
        lines.append([
            f"{r['records']:,}", row.label, f"{r['plan_s']:.1f}", f"{r['pages'] / r['plan_s']:.1f}",
            f"{r['rss_growth']:.0f}", f"{r['rss_growth'] * 2**20 / r['units']:,.0f}", f"{r.get('groups', '')}",
            f"{r.get('saves', '')}", f"{r['save_s']:.1f}" if "save_s" in r else "",
            f"{r['fold_s']:.1f}" if r["mode"] != "lazy" else "", f"{r['state_bytes'] / 1024:,.0f}",
            f"{r['state_bytes'] / r['records']:.1f}", f"{r['states_kept']:,}",
            f"{r['replan_s']:.1f}" if r["resumed"] else "", f"{r['resumed']:,}" if r["resumed"] else ""])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
        out += ["| " + " | ".join(line) + " |" for line in lines]
        return "\n".join(out)
    widths = [max(len(head[i]), *(len(line[i]) for line in lines)) for i in range(len(head))]
    out = ["  ".join(cell.rjust(width) for cell, width in zip(head, widths, strict=True))]
    out += ["  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)) for line in lines]
    return "\n".join(out)


def extrapolate(rows: list[Row]) -> str:
    done = [row.result for row in rows if row.result is not None and row.label == "lazy"]
    if len(done) < 2:
        return ""
    small, large = done[-2], done[-1]
    per_unit_s = (large["plan_s"] - small["plan_s"]) / (large["units"] - small["units"])
    per_unit_b = (large["rss_growth"] - small["rss_growth"]) * 2**20 / (large["units"] - small["units"])
    return (f"marginal cost between {small['units']:,} and {large['units']:,} units: {per_unit_s * 1e6:.0f} us and "
            f"{per_unit_b:,.0f} B of driver memory per unit; at 10x the largest ({large['units'] * 10:,} units): "
            f"~{large['plan_s'] + per_unit_s * large['units'] * 9:,.0f} s of planning, "
            f"~{(large['rss_growth'] * 2**20 + per_unit_b * large['units'] * 9) / 2**30:,.1f} GiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="parent records = partitions, comma-separated")
    parser.add_argument("--tasks", type=int, default=4, help="groups for contiguous_groups (cores x tasks per core)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a size may take before it is killed")
    parser.add_argument("--profile", type=int, default=0, help="also profile plan() at this size (cProfile)")
    parser.add_argument("--markdown", action="store_true", help="print the table in Markdown too")
    parser.add_argument("--modes", default="eager,lazy",
                        help="eager: plan() then fold every unit (the list form); lazy: units() in lazy_groups, "
                             "folded as they come back (the pipeline's driver); before: eager with --before's code")
    parser.add_argument("--before", default="", help="a checkout of the code before (for --modes before)")
    parser.add_argument("--shards", type=int, default=1, help="partition the parent into this many API shards")
    parser.add_argument("--no-replan", action="store_true", help="skip planning again from the final state")
    parser.add_argument("--mode", default="lazy", help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=2, metavar=("URL", "RECORDS"), help=argparse.SUPPRESS)
    parser.add_argument("--child-profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]), args.tasks, args.child_profile, args.mode, args.shards,
              not args.no_replan)
        return 0
    sizes = [int(size) for size in args.sizes.split(",") if size]
    with open("/proc/loadavg", encoding="ascii") as handle:
        print("load average before:", " ".join(handle.read().split()[:3]))
    modes = [mode for mode in args.modes.split(",") if mode]
    if "before" in modes and not args.before:
        parser.error("--modes before needs --before PATH (a checkout of the code before)")
    rows = []
    for size in sizes:
        for mode in modes:
            rows.append(measure(size, args.tasks, args.timeout, profile=False, mode=mode, shards=args.shards,
                                repo=args.before if mode == "before" else str(REPO), replan=not args.no_replan))
            print(table(rows[-1:], markdown=False).splitlines()[-1], flush=True)
    if args.profile:
        profiled = measure(args.profile, args.tasks, args.timeout, profile=True, mode="eager", shards=args.shards)
        if profiled.result is None:
            print(f"profile at {args.profile:,}: {profiled.note}")
    with open("/proc/loadavg", encoding="ascii") as handle:
        print("load average after:", " ".join(handle.read().split()[:3]))
    print(table(rows, markdown=False))
    note = extrapolate(rows)
    if note:
        print(note)
    if args.markdown:
        print(table(rows, markdown=True))
    return 1 if any(row.result is None for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
