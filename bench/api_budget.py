"""An API budget held across Spark tasks: the rate a sync achieves against an API that allows less.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python bench/api_budget.py [--tasks 4] [--limit 40] [--period 2]
        [--partitions 8] [--pages 20]

Serves the fake API of the tests (``tests/fakes/api_server.py``) with a rate limit of ``--limit`` requests
per ``--period`` seconds (windows of the server's clock; a request above the limit is answered 429), and
runs ``run-manifest`` in Spark mode (``--master local[TASKS]``) on a manifest whose ``api_budget`` allows
the same rate (a MovingWindowCallRatePolicy): ``--partitions`` partitions of ``--pages`` pages each, far
more than the budget lets the tasks send. Prints the requests counted per window by the API, the 429
answers, and the achieved rate as a fraction of the allowed rate (the mean of the steady windows: see
:attr:`Measurement.steady`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT / "tests"))

from fakes.api_server import FakeApi, RecordedRequest, paged  # noqa: E402 - after the path above

MANIFEST = """\
version: 7.0.0
type: DeclarativeSource
api_budget:
  type: HTTPAPIBudget
  policies:
    - type: MovingWindowCallRatePolicy
      rates: [{{limit: "{{{{ config.calls }}}}", interval: "{interval}"}}]
      matchers: [{{method: GET, url_path_pattern: "^/items"}}]
streams:
  - type: DeclarativeStream
    name: items
    primary_key: [region, id]
    schema_loader: {{type: InlineSchemaLoader, schema: {{type: object, properties: {{id: {{type: integer}},
                    region: {{type: string}}}}}}}}
    retriever:
      type: SimpleRetriever
      requester: {{type: HttpRequester, url_base: "{{{{ config.base_url }}}}", path: /items}}
      record_selector: {{type: RecordSelector, extractor: {{type: DpathExtractor, field_path: [data]}}}}
      partition_router:
        type: ListPartitionRouter
        values: {regions}
        cursor_field: region
        request_option: {{type: RequestOption, inject_into: request_parameter, field_name: region}}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {{type: PageIncrement, start_from_page: 1, page_size: 5}}
        page_size_option: {{type: RequestOption, inject_into: request_parameter, field_name: per_page}}
        page_token_option: {{type: RequestOption, inject_into: request_parameter, field_name: page}}
check: {{type: CheckStream, stream_names: [items]}}
"""


@dataclass(frozen=True)
class Measurement:
    tasks: int
    limit: int
    period: float
    requests: int
    refused: int
    windows: tuple[int, ...]  # requests per whole window, as the API counted them
    records: int
    seconds: float
    exit_code: int
    stderr: str

    @property
    def steady(self) -> tuple[int, ...]:
        """The whole windows from the first to the last that saw at least half the limit: leaves out
        Spark's start (tasks starting one by one) and the end (partitions running out), where the
        tasks, not the budget, set the rate."""
        busy = [i for i, count in enumerate(self.windows) if count * 2 >= self.limit]
        return self.windows[busy[0]:busy[-1] + 1] if busy else ()

    @property
    def fraction(self) -> float:
        """The achieved rate over the steady windows, as a fraction of the allowed rate."""
        return sum(self.steady) / (len(self.steady) * self.limit) if self.steady else 0.0

    def report(self) -> str:
        return (f"tasks {self.tasks}, allowed {self.limit} per {self.period:g} s; {self.requests} requests in "
                f"{self.seconds:.1f} s, {self.records} records, exit {self.exit_code}\n"
                f"requests per whole window (API's count): {list(self.windows)}\n"
                f"429 answers: {self.refused}\n"
                f"achieved rate: {self.fraction:.1%} of the allowed rate over {len(self.steady)} steady windows "
                f"({sum(self.windows) / max(1, len(self.windows) * self.limit):.1%} over all whole windows)")


def measure(tasks: int = 4, limit: int = 40, period: float = 2.0, partitions: int = 8, pages: int = 20,
            work: Path | None = None) -> Measurement:
    """Run the sync in a subprocess (a SparkSession of its own) against a rate-limited fake API."""
    regions = [f"r{i}" for i in range(partitions)]
    items = {region: [{"id": i, "region": region} for i in range(pages * 5 - 2)] for region in regions}
    with tempfile.TemporaryDirectory(dir=work) as folder, FakeApi() as api:
        api.route("GET", "/items", lambda r: paged(items[r.param("region") or ""], r))
        counter = api.limit(limit, period, path="/items")
        base = Path(folder)
        interval = f"PT{period:g}S"
        (base / "manifest.yaml").write_text(MANIFEST.format(interval=interval, regions=json.dumps(regions)))
        (base / "config.json").write_text(json.dumps({"base_url": api.url, "calls": limit}))
        command = [sys.executable, "-c", "import sys; from framework.cli.run import main; sys.exit(main())",
                   str(base / "manifest.yaml"), "--config", str(base / "config.json"), "--output",
                   str(base / "out"), "--format", "jsonl", "--master", f"local[{tasks}]", "--quiet"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
        started = time.monotonic()
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        seconds = time.monotonic() - started
        records = sum(sum(1 for line in path.read_text().splitlines() if line.strip())
                      for path in (base / "out").rglob("*.jsonl"))
        requests: list[RecordedRequest] = api.received("/items")
        return Measurement(tasks, limit, period, len(requests), counter.refused, tuple(counter.full_windows()),
                           records, seconds, done.returncode, done.stderr[-4000:])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--limit", type=int, default=40, help="requests allowed per period")
    parser.add_argument("--period", type=float, default=2.0, help="seconds")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--pages", type=int, default=20, help="pages per partition (one request each)")
    args = parser.parse_args(argv)
    found = measure(args.tasks, args.limit, args.period, args.partitions, args.pages)
    print(found.report())
    if found.exit_code:
        print(found.stderr, file=sys.stderr)
    return found.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
