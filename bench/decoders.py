"""How much a record costs in each response format, next to JSON (the hot path).

    python bench/decoders.py [--records 200000] [--runs 3] [--big-mb 1024]

Makes N synthetic records (the shape bench/api_server.py serves) and writes them
once per format: JSON pages of 1,000 (``{"data": [...]}``, how the JSON path runs
in a sync), JSON lines, CSV, and gzip'd JSON lines. Each body is then read
through the same path a sync takes: the record selector built from the manifest
models (DpathExtractor, the retriever's ``decoder``), from a streamed response,
every batch counted. Prints records/s per format and its ratio to JSON; the best
of ``--runs`` is kept.

``--big-mb`` then streams a generated JSON-lines body of that many MiB (made
while it is read, never held) through the JSON-lines path and prints the peak
RSS before and after: a flat peak is the bounded-memory claim. ``--http-mb``
does it end to end: a local HTTP server (a thread here) sends that many MiB
of JSON lines, made as they are sent, to ``run-manifest --protocol`` (its own
process, stdout counted and dropped); its peak RSS is its ``VmHWM`` in /proc.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from requests.structures import CaseInsensitiveDict  # noqa: E402

from framework.components.context import BuildContext  # noqa: E402
from framework.components.http.request import HttpRequest  # noqa: E402
from framework.components.http.transport import HttpResponse  # noqa: E402
from framework.components.records import RecordSelector  # noqa: E402
from framework.components.records.extraction import DpathExtractor  # noqa: E402
from framework.models import decoders as models  # noqa: E402

PAGE = 1000
HEADERS: CaseInsensitiveDict[str] = CaseInsensitiveDict({"Content-Type": "application/octet-stream"})
REQUEST = HttpRequest("GET", "http://bench/records", stream=True)


def make_records(count: int) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"record-{i}", "amount": i * 1.5, "active": i % 3 == 0,
             "updated_at": f"2024-01-{1 + i % 28:02d}T00:00:00Z", "category": f"c{i % 17}"} for i in range(count)]


def streamed(body: bytes) -> HttpResponse:
    return HttpResponse(200, HEADERS, None, REQUEST, stream=io.BufferedReader(io.BytesIO(body)))  # type: ignore[arg-type]


def read_json_pages(pages: list[bytes]) -> int:
    selector = RecordSelector(DpathExtractor(("data",)))
    count = 0
    for body in pages:
        count += len(selector.select_page(HttpResponse(200, HEADERS, body, REQUEST), {})[1])
    return count


def reader(model: Any) -> Callable[[bytes], int]:
    selector = RecordSelector(DpathExtractor((), decoder=BuildContext({}).build(model, ())))

    def read(body: bytes) -> int:
        return sum(len(records) for _page, records in selector.select_batches(streamed(body), {}))

    return read


def best(runs: int, call: Callable[[], int]) -> tuple[int, float]:
    seconds = float("inf")
    count = 0
    for _ in range(runs):
        started = time.perf_counter()
        count = call()
        seconds = min(seconds, time.perf_counter() - started)
    return count, seconds


def csv_body(records: list[dict[str, Any]]) -> bytes:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return text.getvalue().encode()


class _Repeated(io.RawIOBase):
    """``size`` bytes of JSON lines made by repeating one block as they are read."""

    def __init__(self, block: bytes, size: int):
        self.block, self.left, self.at = block, size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.left <= 0:
            return 0
        size = min(len(buffer), len(self.block) - self.at, self.left)
        buffer[:size] = self.block[self.at:self.at + size]
        self.at = (self.at + size) % len(self.block)
        self.left -= size
        return size


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def big_body(megabytes: int) -> None:
    block = b"".join(orjson.dumps(r) + b"\n" for r in make_records(10_000))
    size = megabytes << 20
    size -= size % len(block)  # whole lines only
    selector = RecordSelector(DpathExtractor((), decoder=BuildContext({}).build(models.JsonlDecoder(), ())))
    before = peak_rss_mib()
    started = time.perf_counter()
    response = HttpResponse(200, HEADERS, None, REQUEST, stream=io.BufferedReader(_Repeated(block, size), 1 << 16))
    count = sum(len(records) for _page, records in selector.select_batches(response, {}))
    seconds = time.perf_counter() - started
    print(f"\n{size / (1 << 20):,.0f} MiB of JSON lines streamed: {count:,} records in {seconds:.1f} s "
          f"({count / seconds:,.0f} records/s); peak RSS {before:.0f} MiB before, {peak_rss_mib():.0f} MiB after")


MANIFEST = {
    "version": "6.7.0", "type": "DeclarativeSource",
    "check": {"type": "CheckStream", "stream_names": ["export"]},
    "streams": [{
        "type": "DeclarativeStream", "name": "export", "primary_key": "id",
        "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object", "properties": {}}},
        "retriever": {
            "type": "SimpleRetriever", "decoder": {"type": "JsonlDecoder"},
            "requester": {"type": "HttpRequester", "url_base": "{{ config['base_url'] }}", "path": "/export.jsonl"},
            "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": []}},
        },
    }],
    "spec": {"type": "Spec", "connection_specification": {"type": "object", "properties": {}}},
}


def http_body(megabytes: int) -> bool:
    block = b"".join(orjson.dumps(r) + b"\n" for r in make_records(10_000))
    blocks = max(1, (megabytes << 20) // len(block))

    class Export(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(blocks * len(block)))
            self.end_headers()
            for _ in range(blocks):
                self.wfile.write(block)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Export)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            manifest, config = os.path.join(folder, "manifest.json"), os.path.join(folder, "config.json")
            with open(manifest, "w") as handle:
                json.dump(MANIFEST, handle)
            with open(config, "w") as handle:
                json.dump({"base_url": f"http://127.0.0.1:{server.server_address[1]}"}, handle)
            started = time.perf_counter()
            process = subprocess.Popen([sys.executable, "-m", "framework.cli.run", manifest, "--config", config,
                                        "--protocol"], stdout=subprocess.PIPE, cwd=folder)
            assert process.stdout is not None
            peak = [0]
            watcher = threading.Thread(target=_watch_hwm, args=(process.pid, peak), daemon=True)
            watcher.start()
            stdout, records = process.stdout, 0
            while lines := stdout.readlines(1 << 20):
                records += sum(line.startswith(b'{"type":"RECORD"') for line in lines)
            status = process.wait()
            seconds = time.perf_counter() - started
    finally:
        server.shutdown()
    expected = blocks * 10_000
    print(f"\nrun-manifest --protocol over HTTP, {blocks * len(block) / (1 << 20):,.0f} MiB of JSON lines: "
          f"{records:,} records (of {expected:,}) in {seconds:.1f} s ({records / seconds:,.0f} records/s), "
          f"exit {status}, peak RSS {peak[0] / 1024:.0f} MiB")
    return status == 0 and records == expected


def _watch_hwm(pid: int, peak: list[int]) -> None:
    """The child's peak RSS (``VmHWM``, kB) as /proc shows it, until it exits (``wait4``'s would count the
    memory of this process, which the child was forked from)."""
    path = f"/proc/{pid}/status"
    while True:
        try:
            with open(path) as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            return
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--big-mb", type=int, default=0, help="then stream a JSON-lines body of this many MiB")
    parser.add_argument("--http-mb", type=int, nargs="*", default=[],
                        help="then read JSON-lines bodies of these many MiB over HTTP with run-manifest --protocol")
    args = parser.parse_args(argv)

    records = make_records(args.records)
    pages = [orjson.dumps({"data": records[i:i + PAGE]}) for i in range(0, len(records), PAGE)]
    lines = b"".join(orjson.dumps(r) + b"\n" for r in records)
    table = csv_body(records)
    packed = gzip.compress(lines, compresslevel=6)
    cases: list[tuple[str, int, Callable[[], int]]] = [
        ("JSON (pages of 1,000)", sum(map(len, pages)), lambda: read_json_pages(pages)),
        ("JsonlDecoder", len(lines), lambda: reader(models.JsonlDecoder())(lines)),
        ("CsvDecoder", len(table), lambda: reader(models.CsvDecoder())(table)),
        ("GzipDecoder(JsonlDecoder)", len(packed),
         lambda: reader(models.GzipDecoder(decoder=models.JsonlDecoder()))(packed)),
    ]
    print(f"{args.records:,} records, best of {args.runs}; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    print(f"{'format':<28}{'body MiB':>10}{'seconds':>10}{'records/s':>14}{'vs JSON':>9}")
    base = None
    for name, size, call in cases:
        count, seconds = best(args.runs, call)
        if count != args.records:
            print(f"{name}: read {count} records, expected {args.records}", file=sys.stderr)
            return 1
        rate = count / seconds
        base = base or rate
        print(f"{name:<28}{size / (1 << 20):>10.1f}{seconds:>10.3f}{rate:>14,.0f}{rate / base:>9.2f}")
    if args.big_mb:
        big_body(args.big_mb)
    failed = [megabytes for megabytes in args.http_mb if not http_body(megabytes)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
