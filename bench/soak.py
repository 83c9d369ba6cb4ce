"""A soak of one output: a sync every few seconds, starts that overlap, random kills and API faults.

    python bench/soak.py [--minutes 30] [--every 30] [--kill-rate 0.3] [--fault-rate 0.05] [--out DIR]

An API of its own (in this process) serves ``/events``: ten events a second of wall clock, from an hour before
the soak began, spread over four shards (a ListPartitionRouter, one cursor per shard); it answers 5% of the
requests with 500 or 429, holds as many for half a second, and every page for 0.1 s. Every ``--every``
seconds (give or take half of it) a ``run-manifest`` starts into the one output, with or without
``--wait-for-lock``, whether the last one ended or not, and a share of the starts (``--overlap``) brings a
second sync 0 to 5 s later; a share of them (``--kill-rate``) is killed after 0.5 to 10 s, by SIGKILL or
SIGTERM to its process group.

At the end the API stops making events and answering faults, the last syncs end, and one more sync runs
(``--wait-for-lock``); then every event up to that point must be in the output exactly once, no staged file, no
temp file and no publication may be left, and no sync may have ended with an exit code that means a wedged or
refused output (2), only 0, 1 (a fault past its retries), 75 (the output was busy), 130/143/129 or death by
signal. The summary is one JSON line on stdout; the exit code is 0 when every check holds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

REPO = Path(__file__).resolve().parent.parent
SHARDS = 4
PER_SECOND = 10
PAGE_SIZE = 500
FORMAT = "%Y-%m-%dT%H:%M:%SZ"
#: exit codes a sync may end with in the soak (negative: killed by that signal)
FINE = {0, 1, 75, 129, 130, 143, -signal.SIGKILL, -signal.SIGTERM}

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [events]}
streams:
  - type: DeclarativeStream
    name: events
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          shard: {type: string}
          updated_at: {type: string, format: date-time, airbyte_type: timestamp_with_timezone}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime: "{{ config.start }}"
      end_datetime: "{{ now_utc().strftime('%Y-%m-%dT%H:%M:%SZ') }}"
      step: P3650D
      cursor_granularity: PT1S
      start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
      end_time_option: {type: RequestOption, inject_into: request_parameter, field_name: until}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: "{{ config.base_url }}"
        path: /events
        error_handler:
          type: DefaultErrorHandler
          max_retries: 6
          backoff_strategies: [{type: ConstantBackoffStrategy, backoff_time_in_seconds: 0.2}]
      partition_router:
        type: ListPartitionRouter
        values: ["0", "1", "2", "3"]
        cursor_field: shard
        request_option: {type: RequestOption, inject_into: request_parameter, field_name: shard}
      record_selector:
        type: RecordSelector
        extractor: {type: DpathExtractor, field_path: [data]}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement, start_from_page: 1, page_size: 500}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
"""


class Events:
    """Event ``i`` happened at ``origin + 1 + i // PER_SECOND`` seconds; those up to now (or ``frozen``) exist.

    ``since`` is exclusive and ``until`` inclusive, so a sync that starts from its saved cursor value reads
    nothing twice (the soak counts duplicates; an API that repeats the boundary would hide none)."""

    def __init__(self, origin: datetime):
        self.origin = origin
        self.frozen: datetime | None = None
        self.faults = 0.05
        self.answered: Counter[str] = Counter()
        self.lock = threading.Lock()

    def last(self, until: datetime) -> int:
        """The number of events at or before ``until``."""
        limit = min(until, self.frozen) if self.frozen is not None else until
        limit = min(limit, datetime.now(timezone.utc))
        return max(0, int((limit - self.origin).total_seconds()) * PER_SECOND)

    def first_after(self, since: datetime) -> int:
        """The first event after ``since``."""
        return max(0, int((since - self.origin).total_seconds()) * PER_SECOND)

    def at(self, i: int) -> str:
        return (self.origin + timedelta(seconds=1 + i // PER_SECOND)).strftime(FORMAT)

    def page(self, shard: int, since: datetime, until: datetime, page: int, size: int) -> list[dict]:
        first, last = self.first_after(since), self.last(until)
        # the events of one shard: i % SHARDS == shard, in [first, last)
        start = first + (shard - first) % SHARDS
        ids = range(start + (page - 1) * size * SHARDS, last, SHARDS)[:size]
        return [{"id": i, "shard": str(shard), "updated_at": self.at(i)} for i in ids]


def serve(events: Events) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            query = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
            roll = random.random()
            if events.frozen is None and roll < events.faults:
                with events.lock:
                    events.answered["fault"] += 1
                status = random.choice((500, 429))
                self._send(status, {"error": "soak fault"}, {"Retry-After": "0"} if status == 429 else {})
                return
            time.sleep(0.5 if events.frozen is None and roll < 2 * events.faults else 0.1)  # a page takes a while
            since = datetime.strptime(query["since"], FORMAT).replace(tzinfo=timezone.utc)
            until = datetime.strptime(query["until"], FORMAT).replace(tzinfo=timezone.utc)
            data = events.page(int(query["shard"]), since, until, int(query.get("page", 1)),
                               int(query.get("per_page", PAGE_SIZE)))
            with events.lock:
                events.answered["page"] += 1
            self._send(200, {"data": data})

        def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Sync:
    def __init__(self, number: int, process: subprocess.Popen, log: Path, wait: bool):
        self.number, self.process, self.log, self.wait = number, process, log, wait
        self.started = time.monotonic()
        self.kill_at: float | None = None
        self.kill_with = signal.SIGKILL
        self.killed = False
        self.ended: float | None = None

    def signal(self, which: int) -> None:
        try:
            os.killpg(self.process.pid, which)
        except ProcessLookupError:
            pass


def start_sync(number: int, work: Path, out: Path, wait: bool, env: dict[str, str]) -> Sync:
    log = work / f"sync-{number:03d}.log"
    command = [sys.executable, "-m", "framework.cli.run", str(work / "manifest.yaml"), "--config",
               str(work / "config.json"), "--output", str(out), "--no-check"]
    if wait:
        command += ["--wait-for-lock", "600"]
    with open(log, "wb") as handle:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=handle, cwd=work, env=env,
                                   start_new_session=True)
    return Sync(number, process, log, wait)


def overlapping(syncs: list[Sync]) -> int:
    """Syncs started while another still ran."""
    return sum(any(o.started < s.started < (o.ended or float("inf")) for o in syncs if o is not s) for s in syncs)


def landed(out: Path) -> Counter[int]:
    import pyarrow.parquet as pq

    found: Counter[int] = Counter()
    for path in sorted((out / "events").glob("*.parquet")):
        found.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
    return found


def leftovers(out: Path) -> list[str]:
    """Staged files, temp files, a publication or a lease left in the output (none may be, after the last sync)."""
    left = [str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and
            (p.name.endswith(".tmp") or p.name.endswith(".staged") or p.name == "lease.json")]
    state = json.loads((out / "_airbyte_state" / "state.json").read_text())
    if state.get("publishing"):
        left.append(f"publishing: {state['publishing']}")
    return left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--every", type=float, default=30, help="seconds between two starts (jittered by half)")
    parser.add_argument("--kill-rate", type=float, default=0.3)
    parser.add_argument("--overlap", type=float, default=0.4, help="the share of starts that bring a second sync")
    parser.add_argument("--fault-rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default=None, help="the work folder (default: a new temp folder, kept)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(args.out or tempfile.mkdtemp(prefix="soak-"))
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    events = Events((datetime.now(timezone.utc) - timedelta(hours=1)).replace(microsecond=0))
    events.faults = args.fault_rate
    server = serve(events)
    (work / "manifest.yaml").write_text(MANIFEST)
    (work / "config.json").write_text(json.dumps({"base_url": f"http://127.0.0.1:{server.server_port}",
                                                  "start": events.origin.strftime(FORMAT)}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    syncs: list[Sync] = []
    ends = time.monotonic() + args.minutes * 60
    next_start = time.monotonic()
    extra_start: float | None = None  # a second sync, soon after the last start
    began = time.monotonic()
    while time.monotonic() < ends:
        now = time.monotonic()
        if now >= next_start or (extra_start is not None and now >= extra_start):
            if now >= next_start:
                next_start = now + args.every * rng.uniform(0.5, 1.5)
                extra_start = now + rng.uniform(0, 5) if rng.random() < args.overlap else None
            else:
                extra_start = None
            sync = start_sync(len(syncs) + 1, work, out, wait=rng.random() < 0.5, env=env)
            if rng.random() < args.kill_rate:
                sync.kill_at = now + rng.uniform(0.5, 10)
                sync.kill_with = rng.choice((signal.SIGKILL, signal.SIGTERM))
            syncs.append(sync)
        for sync in syncs:
            if sync.ended is None and sync.process.poll() is not None:
                sync.ended = now
            if sync.kill_at is not None and not sync.killed and now >= sync.kill_at and sync.process.poll() is None:
                sync.signal(sync.kill_with)
                sync.killed = True
            if sync.killed and sync.process.poll() is None and now >= (sync.kill_at or now) + 30:
                sync.signal(signal.SIGKILL)  # a SIGTERM not heeded within 30 s
        time.sleep(0.5)
    # the end: no new events, no faults; the syncs still running end; one more sync
    events.frozen = datetime.now(timezone.utc).replace(microsecond=0)
    for sync in syncs:
        try:
            sync.process.wait(timeout=900)
        except subprocess.TimeoutExpired:
            sync.signal(signal.SIGKILL)
            sync.process.wait()
        sync.ended = sync.ended or time.monotonic()
    time.sleep(1.0)  # past the frozen second, so the last sync's `until` covers it
    final = start_sync(len(syncs) + 1, work, out, wait=True, env=env)
    final.process.wait(timeout=1800)
    syncs.append(final)
    codes = Counter(s.process.returncode for s in syncs)
    bad = [(s.number, s.process.returncode, s.log.read_text()[-600:])
           for s in syncs if s.process.returncode not in FINE]
    found = landed(out)
    expected = events.last(events.frozen)
    missing = [i for i in range(expected) if found[i] == 0]
    doubled = sorted(i for i, n in found.items() if n > 1)
    extra = sorted(i for i in found if i >= expected)
    left = leftovers(out)
    ok = final.process.returncode == 0 and not bad and not missing and not doubled and not extra and not left
    print(json.dumps({
        "ok": ok, "minutes": round((time.monotonic() - began) / 60, 1), "syncs": len(syncs),
        "exit_codes": {str(k): v for k, v in sorted(codes.items(), key=lambda kv: str(kv[0]))},
        "killed": {"SIGKILL": sum(s.killed and s.kill_with == signal.SIGKILL for s in syncs),
                   "SIGTERM": sum(s.killed and s.kill_with == signal.SIGTERM for s in syncs)},
        "overlapping_starts": overlapping(syncs),
        "api": dict(events.answered), "events": expected, "landed_rows": sum(found.values()),
        "missing": len(missing), "doubled": len(doubled), "beyond": len(extra), "leftovers": left[:10],
        "unexpected_exits": bad[:5], "final_exit": final.process.returncode, "work": str(work),
    }))
    server.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
