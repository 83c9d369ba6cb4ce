"""How close each tool comes to what a slow API with a cap on requests in flight allows (issue 34).

    python bench/latency.py [--scenario events,substream,auto,default] [--modes protocol,spark,cdk,dlt]
                            [--windows 30] [--pages 10] [--page-size 100]
                            [--accounts 1000] [--account-page-size 100] [--order-pages 2] [--orders-per-page 5]
                            [--latency-ms MS] [--max-concurrent N] [--manifest-concurrency N|none]
                            [--run-args "--concurrency auto"] [--master URL] [--peers-python PATH]
                            [--timeout 600] [--markdown]

Real APIs answer a page in 100 to 500 ms and refuse requests past a number
in flight; a sync of such an API waits, and its speed is how many requests
it keeps in flight, not its CPU. For each scenario this script starts
``bench/api_server.py`` (its own process) with ``--latency-ms`` and
``--max-concurrent`` (a ``429`` with ``Retry-After: 1`` past the cap),
writes a manifest for it into a temp folder and runs each mode, one after
the other, as a child process, the API's counters reset before each
(``/_stats/reset``) and read after (``/_stats``).

Scenarios (``--scenario``, comma-separated; ``--latency-ms``,
``--max-concurrent`` and ``--manifest-concurrency`` override theirs):

* ``events``: the ``events`` stream, 200 ms a page, 8 in flight allowed, the
  manifest's ``concurrency_level`` names 8;
* ``substream``: the ``orders`` stream, 50 ms a page, 64 allowed, the
  manifest names 64;
* ``auto``: ``events``, 200 ms, 8 allowed, the manifest silent,
  run-manifest given ``--concurrency auto`` (airbyte-cdk and dlt as they are);
* ``default``: ``events``, 200 ms, 8 allowed, the manifest silent, nothing
  passed: what each tool does by itself.

The streams (the API's shapes: ``bench/api_server.py``'s docstring):

* ``events``: a ``DatetimeBasedCursor`` on ``updated_at`` (``step: P1D``,
  ``cursor_granularity: PT1S``, ``start_datetime`` from the config, the end
  fixed at the last second of the last day: exactly ``--windows`` windows),
  the window sent as ``start_time`` / ``end_time``, ``CursorPagination`` on
  ``next_cursor`` sent back as ``cursor``: by default 30 windows x 10 pages
  x 100 records = 30,000 records in 300 pages;
* ``orders``: a ``SubstreamPartitionRouter`` over ``accounts`` (a parent
  defined under ``definitions``, not a stream of its own), each account's
  ``/accounts/{id}/orders`` paged by cursor: by default 1,000 accounts in 10
  pages, 2 pages of 5 orders each = 10,000 records in 2,000 pages.

Both ask the requester to wait what ``Retry-After`` says on a 429
(``WaitTimeFromHeader``), as a connector for such an API does; with
``--manifest-concurrency N`` (or the scenario's number) the manifest has a
top-level ``concurrency_level: {type: ConcurrencyLevel,
default_concurrency: N}``.

Modes (``--modes``):

* ``protocol``: ``run-manifest MANIFEST --config CFG --protocol``, RECORD
  lines counted;
* ``spark``: ``run-manifest MANIFEST --config CFG --output DIR --log-format
  json`` (``--master URL`` when given: a standalone cluster; then pass
  ``--shared-path`` in ``--run-args`` for a local ``--output``), the records
  of its ``summary`` event, which must equal the rows of its Parquet files;
* ``cdk``: airbyte-cdk's ``source-declarative-manifest read`` from the peers
  venv, as bench/peers.py runs it, the same manifest (its
  ``concurrency_level`` too) injected into the config, the stream in the
  catalog (``events`` incremental, ``orders`` full refresh), RECORD lines
  counted;
* ``dlt``: dlt's ``rest_api`` from the peers venv into the ``filesystem``
  destination (Parquet), its rows counted. Events: dlt's own incremental
  (``start_param`` / ``end_param`` from ``initial_value`` to ``end_value``),
  so *one* window of all the days, its pages one after another (dlt has no
  datetime windows of its own). Orders: ``accounts`` (not loaded,
  ``selected: false``), ``orders`` on ``accounts/{resources.accounts.id}/orders``
  with ``parallelized: true``, dlt's way to fetch the children of many
  parents at once, in its pool of ``extract.workers`` threads: the
  manifest's number when it names one (``EXTRACT__WORKERS`` and
  ``EXTRACT__MAX_PARALLEL_ITEMS``), else dlt's default (5 workers).

``--run-args`` adds arguments to both run-manifest modes (the scenario's,
like ``auto``'s ``--concurrency auto``, come first).

**What the API allows.** The shortest time a client can take against the
API is

    allowed = S x L + R / C x L,   at least  P x L

where ``L`` is the latency (seconds a page), ``C`` the cap on requests in
flight, ``S`` the sequential part (pages that must be read one after the
other: the parent pages of ``orders``, each cursor needing the page before;
0 for ``events``), ``R`` the rest of the pages (every window's pages; every
account's order pages), and ``P`` the longest chain of pages that must follow
one another (a window's pages; the parent pages and then one account's
pages), which bounds a run whose pages are fewer than the cap could hold.
By default: events 0 x 0.2 + 300 / 8 x 0.2 = 7.5 s; orders 10 x 0.05 +
2,000 / 64 x 0.05 = 2.06 s. A client that reads children while it still
pages through the parents can beat it a little, so a share above 100% is
possible in ``substream``.

The table (plain, and with ``--markdown`` also in Markdown), per scenario:
**wall s** (the child process, start to exit: start-up included),
**of allowed** (allowed / wall s), **requests** (as the API counted them,
429s and the framework's check request included), **most in flight**, **429s**,
**records** delivered, and **load** (the machine's 1-minute load average
when the mode started). A mode that fails or delivers another number of
records than the API holds is marked FAILED and the exit code is 1; a peer
not installed gets a row saying so. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from api_server import EVENTS_EPOCH, Accounts, Events, iso
from harness import ApiServer, aligned, compile_framework, peers_python, prepare_class_archive, run_manifest_command
from peers import CDK, DLT, PROTOCOL, SPARK, JsonLog, RecordLines, ResultLine, Watcher, _has_module, measure
from pipeline import parquet_rows

EVENTS, ORDERS = "events", "orders"
MODES = (PROTOCOL, SPARK, CDK, DLT)
DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
PEERS_HINT = "run `bash bench/peers.sh` or pass --peers-python"


# -- the scenarios ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """One API set-up and what the tools are told of it."""

    name: str
    stream: str  # EVENTS or ORDERS
    latency_ms: float  # each page answered this long after it is asked
    cap: int  # requests in flight the API allows (429 past it)
    named: int | None  # the manifest's concurrency_level (None: the manifest says nothing)
    run_args: tuple[str, ...] = ()  # what run-manifest is given besides
    about: str = ""


SCENARIOS = {
    "events": Scenario("events", EVENTS, 200, 8, 8, about="datetime windows, the manifest names the cap"),
    "substream": Scenario("substream", ORDERS, 50, 64, 64, about="parents and children, the manifest names the cap"),
    "auto": Scenario("auto", EVENTS, 200, 8, None, ("--concurrency", "auto"),
                     about="the manifest silent, run-manifest --concurrency auto"),
    "default": Scenario("default", EVENTS, 200, 8, None, about="the manifest silent, nothing passed"),
}


@dataclass(frozen=True)
class Shape:
    """What the API holds: its events and its accounts with their orders."""

    events: Events = field(default_factory=Events)
    accounts: Accounts = field(default_factory=Accounts)

    def records(self, stream: str) -> int:
        """The records a full read of ``stream`` delivers."""
        return self.events.total if stream == EVENTS else self.accounts.orders

    def pages(self, stream: str) -> tuple[int, int, int]:
        """The pages of a read of ``stream``: (sequential, rest, longest chain), as the module docs say."""
        if stream == EVENTS:
            return 0, self.events.windows * self.events.pages, self.events.pages
        parents = self.accounts.parent_pages
        return parents, self.accounts.count * self.accounts.order_pages, parents + self.accounts.order_pages

    def server_options(self) -> list[str]:
        """``bench/api_server.py``'s flags for this shape."""
        events, accounts = self.events, self.accounts
        return ["--event-windows", str(events.windows), "--event-pages", str(events.pages),
                "--event-page-size", str(events.page_size), "--accounts", str(accounts.count),
                "--account-page-size", str(accounts.page_size), "--order-pages", str(accounts.order_pages),
                "--orders-per-page", str(accounts.orders_per_page)]

    def describe(self, stream: str) -> str:
        if stream == EVENTS:
            e = self.events
            return f"{e.windows} windows x {e.pages} pages x {e.page_size} records = {e.total:,} events"
        a = self.accounts
        return (f"{a.count:,} accounts in {a.parent_pages} pages, {a.order_pages} pages x {a.orders_per_page} "
                f"orders each = {a.orders:,} orders")


def allowed_seconds(sequential: int, rest: int, chain: int, latency_s: float, cap: int) -> float:
    """The shortest time the API allows: ``sequential x L + rest / cap x L``, at least ``chain x L``."""
    return max(sequential * latency_s + rest / cap * latency_s, chain * latency_s)


def formula(shape: Shape, scenario: Scenario, latency_ms: float, cap: int) -> str:
    """The allowed time of a scenario, its terms written out."""
    sequential, rest, chain = shape.pages(scenario.stream)
    latency = latency_ms / 1000
    total = allowed_seconds(sequential, rest, chain, latency, cap)
    text = f"{sequential} sequential pages x {latency:g} s + {rest:,} pages / {cap} x {latency:g} s"
    floor = chain * latency
    return f"{text} = {total:.2f} s" if total > floor else f"{text}, at least {chain} pages in a chain: {total:.2f} s"


# -- the manifests ---------------------------------------------------------------------------------------------


def _requester(path: str) -> dict[str, Any]:
    return {"type": "HttpRequester", "url_base": "{{ config['base_url'] }}", "path": path, "http_method": "GET",
            "error_handler": {"type": "DefaultErrorHandler",
                              "backoff_strategies": [{"type": "WaitTimeFromHeader", "header": "Retry-After"}]}}


def _retriever(path: str) -> dict[str, Any]:
    """A SimpleRetriever of ``path``: records under ``data``, pages by ``next_cursor`` sent back as ``cursor``."""
    return {
        "type": "SimpleRetriever",
        "requester": _requester(path),
        "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": ["data"]}},
        "paginator": {
            "type": "DefaultPaginator",
            "pagination_strategy": {"type": "CursorPagination", "cursor_value": "{{ response.next_cursor }}",
                                    "stop_condition": "{{ not response.next_cursor }}"},
            "page_token_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "cursor"},
        },
    }


def _schema(properties: dict[str, str]) -> dict[str, Any]:
    def typed(kind: str) -> dict[str, str]:
        return {"type": "string", "format": "date-time"} if kind == "date-time" else {"type": kind}

    return {"type": "InlineSchemaLoader",
            "schema": {"type": "object", "properties": {name: typed(kind) for name, kind in properties.items()}}}


def _instant(template: str) -> dict[str, Any]:
    return {"type": "MinMaxDatetime", "datetime": template, "datetime_format": DATETIME_FORMAT}


def events_stream(events: Events) -> dict[str, Any]:
    """``events``: daily windows from the config's ``start_date`` to the API's last second, paged by cursor."""
    return {
        "type": "DeclarativeStream", "name": EVENTS, "primary_key": "id",
        "schema_loader": _schema({"id": "integer", "updated_at": "date-time", "kind": "string",
                                  "account_id": "integer", "amount": "number"}),
        "incremental_sync": {
            "type": "DatetimeBasedCursor", "cursor_field": "updated_at", "datetime_format": DATETIME_FORMAT,
            "start_datetime": _instant("{{ config['start_date'] }}"), "end_datetime": _instant(iso(events.end)),
            "step": "P1D", "cursor_granularity": "PT1S",
            "start_time_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                  "field_name": "start_time"},
            "end_time_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "end_time"},
        },
        "retriever": _retriever("/events"),
    }


def accounts_stream() -> dict[str, Any]:
    """``accounts``, the parent: pages of accounts by cursor."""
    return {"type": "DeclarativeStream", "name": "accounts", "primary_key": "id",
            "schema_loader": _schema({"id": "integer", "name": "string", "tier": "string",
                                      "created_at": "date-time"}),
            "retriever": _retriever("/accounts")}


def orders_stream() -> dict[str, Any]:
    """``orders``: each account's orders, a SubstreamPartitionRouter over ``#/definitions/accounts``."""
    retriever = _retriever("/accounts/{{ stream_partition.account_id }}/orders")
    retriever["partition_router"] = {
        "type": "SubstreamPartitionRouter",
        "parent_stream_configs": [{"type": "ParentStreamConfig", "stream": {"$ref": "#/definitions/accounts"},
                                   "parent_key": "id", "partition_field": "account_id"}]}
    return {"type": "DeclarativeStream", "name": ORDERS, "primary_key": "id",
            "schema_loader": _schema({"id": "integer", "account_id": "integer", "status": "string",
                                      "amount": "number", "currency": "string"}),
            "retriever": retriever}


def manifest(stream: str, shape: Shape, named: int | None) -> dict[str, Any]:
    """The manifest of ``stream`` (EVENTS or ORDERS), with ``concurrency_level`` ``named`` unless None."""
    document: dict[str, Any] = {"version": "6.7.0", "type": "DeclarativeSource",
                                "check": {"type": "CheckStream", "stream_names": [stream]}}
    if named is not None:
        document["concurrency_level"] = {"type": "ConcurrencyLevel", "default_concurrency": named}
    if stream == ORDERS:
        document["definitions"] = {"accounts": accounts_stream()}
    document["streams"] = [events_stream(shape.events) if stream == EVENTS else orders_stream()]
    document["spec"] = {"type": "Spec", "connection_specification": {
        "type": "object", "required": ["base_url", "start_date"],
        "properties": {"base_url": {"type": "string"}, "start_date": {"type": "string", "format": "date-time"}}}}
    return document


def write_inputs(folder: Path, stream: str, shape: Shape, named: int | None, url: str) -> tuple[str, str]:
    """The manifest (YAML) and config (JSON) of a run against the API at ``url``; their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path, config_path = folder / "manifest.yaml", folder / "config.json"
    manifest_path.write_text(yaml.safe_dump(manifest(stream, shape, named), sort_keys=False))
    config_path.write_text(json.dumps({"base_url": url, "start_date": iso(EVENTS_EPOCH)}))
    return str(manifest_path), str(config_path)


# -- dlt (run by the peers venv's Python; argv: one JSON object) ----------------------------------------------

DLT_SCRIPT = """\
import json, os, sys, time
setup = json.loads(sys.argv[1])
os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
if setup["workers"]:
    os.environ["EXTRACT__WORKERS"] = os.environ["EXTRACT__MAX_PARALLEL_ITEMS"] = str(setup["workers"])
started = time.perf_counter()
import dlt
from dlt.sources.rest_api import rest_api_source

if setup["stream"] == "events":
    resources = [{"name": "events", "primary_key": "id", "endpoint": {
        "path": "events", "data_selector": "data",
        "incremental": {"start_param": "start_time", "end_param": "end_time", "cursor_path": "updated_at",
                        "initial_value": setup["start"], "end_value": setup["end"]}}}]
else:
    resources = [
        {"name": "accounts", "selected": False, "endpoint": {"path": "accounts", "data_selector": "data"}},
        {"name": "orders", "primary_key": "id", "parallelized": True,
         "endpoint": {"path": "accounts/{resources.accounts.id}/orders", "data_selector": "data"}},
    ]
source = rest_api_source({
    "client": {"base_url": setup["url"],
               "paginator": {"type": "cursor", "cursor_path": "next_cursor", "cursor_param": "cursor"}},
    "resources": resources,
})
pipeline = dlt.pipeline(pipeline_name="bench", dataset_name="bench", pipelines_dir=setup["work"],
                        destination=dlt.destinations.filesystem(bucket_url="file://" + setup["output"]))
ready = time.perf_counter()
pipeline.run(source, loader_file_format="parquet")
ended = time.perf_counter()
print("bench-result " + json.dumps({"start": ready - started, "sync": ended - ready,
                                    "version": dlt.__version__}), flush=True)
"""


# -- one run of one mode ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One mode's run: its times and records, and what the API counted meanwhile."""

    mode: str
    expected: int  # the records the API holds
    allowed: float  # seconds the API allows (the module docs)
    load: float  # 1-minute load average when the mode started
    wall: float = 0.0
    records: int = 0
    requests: int = 0
    most_in_flight: int = 0
    refused: int = 0  # the 429s
    error: str | None = None
    missing: str | None = None  # why the mode did not run (a peer not installed)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None and self.missing is None

    @property
    def failed(self) -> bool:
        return self.missing is None and self.error is not None

    @property
    def share(self) -> float:
        """allowed / wall: 1.0 is all the API allows."""
        return self.allowed / self.wall if self.wall > 0 else 0.0


@dataclass(frozen=True)
class Run:
    """What every mode of one scenario shares."""

    scenario: Scenario
    shape: Shape
    url: str
    manifest: str
    config: str
    latency_ms: float  # the API's latency
    cap: int  # the API's cap on requests in flight
    named: int | None  # the manifest's concurrency_level
    run_args: tuple[str, ...]  # the scenario's and --run-args
    master: str | None
    cdk_python: str | None
    dlt_python: str | None
    timeout: float

    @property
    def stream(self) -> str:
        return self.scenario.stream

    @property
    def expected(self) -> int:
        return self.shape.records(self.stream)

    @property
    def allowed(self) -> float:
        """Seconds the API allows a read of the stream (the module docs)."""
        sequential, rest, chain = self.shape.pages(self.stream)
        return allowed_seconds(sequential, rest, chain, self.latency_ms / 1000, self.cap)


LABELS = {PROTOCOL: "run-manifest --protocol", SPARK: "run-manifest (Spark)",
          CDK: "airbyte-cdk source-declarative-manifest", DLT: "dlt rest_api -> Parquet"}


def _measured(mode: str, run: Run, folder: Path, command: Sequence[str], watcher: Watcher,
              env: dict[str, str] | None = None, watch_stderr: bool = False) -> tuple[int, float, str | None]:
    """Run ``command`` through bench/peers.py's ``measure``: the records its watcher counted, wall seconds, error."""
    result = measure(mode, command, watcher, run.expected, str(folder), run.timeout, env, watch_stderr)
    return result.records, result.wall, result.error


def run_protocol(run: Run, folder: Path) -> Row:
    command = run_manifest_command() + [run.manifest, "--config", run.config, "--protocol", *run.run_args]
    records, wall, error = _measured(PROTOCOL, run, folder, command, RecordLines())
    return _row(PROTOCOL, run, wall=wall, records=records, error=error)


def run_spark(run: Run, folder: Path) -> Row:
    output = folder / "output"
    command = run_manifest_command() + [run.manifest, "--config", run.config, "--output", str(output),
                                        "--log-format", "json", *run.run_args]
    if run.master:
        command += ["--master", run.master]
    watcher = JsonLog()
    env = dict(os.environ, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
    records, wall, error = _measured(SPARK, run, folder, command, watcher, env, watch_stderr=True)
    rows = parquet_rows(output / run.stream)
    if error is None and watcher.result is None:
        error = "no summary event on stderr"
    elif error is None and rows != records:
        error = f"the summary says {records:,} records, the Parquet files hold {rows:,} rows"
    return _row(SPARK, run, wall=wall, records=records, error=error, note=f"--master {run.master or 'local[*]'}")


def cdk_catalog(stream: str) -> dict[str, Any]:
    """The configured catalog of ``stream``: events incremental on ``updated_at``, orders full refresh."""
    if stream == EVENTS:
        entry = {"stream": {"name": EVENTS, "json_schema": {}, "supported_sync_modes": ["full_refresh", "incremental"],
                            "source_defined_cursor": True, "default_cursor_field": ["updated_at"]},
                 "sync_mode": "incremental", "cursor_field": ["updated_at"], "destination_sync_mode": "append"}
    else:
        entry = {"stream": {"name": stream, "json_schema": {}, "supported_sync_modes": ["full_refresh"]},
                 "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}
    return {"streams": [entry]}


def run_cdk(run: Run, folder: Path) -> Row:
    if not _has_module(run.cdk_python, "airbyte_cdk"):
        return _row(CDK, run, missing=f"airbyte-cdk not installed: {PEERS_HINT}")
    assert run.cdk_python is not None
    document = yaml.safe_load(Path(run.manifest).read_text())
    config = dict(json.loads(Path(run.config).read_text()), __injected_declarative_manifest=document)
    (folder / "cdk_config.json").write_text(json.dumps(config))
    (folder / "catalog.json").write_text(json.dumps(cdk_catalog(run.stream)))
    script = Path(run.cdk_python).parent / "source-declarative-manifest"
    launcher = ("import sys; from airbyte_cdk.cli.source_declarative_manifest import run; "
                "sys.argv[0] = 'source-declarative-manifest'; run()")
    command = [str(script)] if script.exists() else [run.cdk_python, "-c", launcher]
    command += ["read", "--config", str(folder / "cdk_config.json"), "--catalog", str(folder / "catalog.json")]
    records, wall, error = _measured(CDK, run, folder, command, RecordLines())
    return _row(CDK, run, wall=wall, records=records, error=error)


def run_dlt(run: Run, folder: Path) -> Row:
    if not _has_module(run.dlt_python, "dlt"):
        return _row(DLT, run, missing=f"dlt not installed: {PEERS_HINT}")
    assert run.dlt_python is not None
    script, output = folder / "dlt_latency.py", folder / "out"
    script.write_text(DLT_SCRIPT)
    setup = {"url": run.url, "stream": run.stream, "start": iso(EVENTS_EPOCH), "end": iso(run.shape.events.end),
             "workers": run.named, "output": str(output), "work": str(folder / "work")}
    env = dict(os.environ, RUNTIME__DLTHUB_TELEMETRY="false", DLT_DATA_DIR=str(folder / "data"))
    watcher = ResultLine()
    _, wall, error = _measured(DLT, run, folder, [run.dlt_python, str(script), json.dumps(setup)], watcher, env)
    if error is None and watcher.result is None:
        error = "no bench-result line"
    version = f"dlt {watcher.result['version']}" if watcher.result else ""
    workers = f"{run.named} extract workers" if run.named else "dlt's default workers"
    note = f"{version}; " + ("one window, pages in turn" if run.stream == EVENTS else f"parallelized, {workers}")
    return _row(DLT, run, wall=wall, records=parquet_rows(output / "bench" / run.stream), error=error, note=note)


def _row(mode: str, run: Run, **values: Any) -> Row:
    """A mode's row (the API's counters and the load are filled in by :func:`measured_mode`), checked: another
    number of records than the API holds is an error."""
    if values.get("error"):
        values["error"] = " ".join(values["error"].split())  # a usage message's indented lines, on one line
    row = Row(LABELS[mode], run.expected, run.allowed, 0.0, **values)
    if row.ok and row.records != row.expected:
        row = replace(row, error=f"delivered {row.records:,} records, expected {row.expected:,}")
    return row


RUNNERS: dict[str, Callable[[Run, Path], Row]] = {PROTOCOL: run_protocol, SPARK: run_spark, CDK: run_cdk,
                                                  DLT: run_dlt}


# -- the API's counters ----------------------------------------------------------------------------------------


def api_stats(url: str, reset: bool = False) -> dict[str, int]:
    """The API's counters (``/_stats``); with ``reset``, set to zero after they are read (``/_stats/reset``)."""
    request = urllib.request.Request(f"{url}/_stats/reset", data=b"", method="POST") if reset else f"{url}/_stats"
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def measured_mode(mode: str, run: Run, folder: Path) -> Row:
    """One mode's run, the API's counters reset before and read after; the load average as it starts."""
    folder.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    api_stats(run.url, reset=True)
    row = RUNNERS[mode](run, folder)
    stats = api_stats(run.url)
    return replace(row, load=load, requests=stats["requests"], most_in_flight=stats["most_in_flight"],
                   refused=stats["refused"])


# -- a scenario ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """One scenario's results: what it was, and a row a mode."""

    scenario: Scenario
    lines: tuple[str, ...]  # the set-up in words
    rows: tuple[Row, ...]


def describe(run: Run, load: float) -> tuple[str, ...]:
    """The set-up of a scenario's runs in a few lines (over its table)."""
    scenario = run.scenario
    named = f"concurrency_level {run.named}" if run.named is not None else "no concurrency_level"
    extra = " ".join(run.run_args) or "nothing more"
    terms = formula(run.shape, scenario, run.latency_ms, run.cap)
    return (f"{scenario.name} ({scenario.about}): {run.shape.describe(scenario.stream)}",
            f"API: {run.latency_ms:g} ms a page, {run.cap} in flight (429 past it); manifest: {named}; "
            f"run-manifest gets: {extra}",
            f"allowed: {terms}; load average {load:.2f} at the start")


def run_scenario(scenario: Scenario, shape: Shape, modes: Sequence[str], folder: Path, args: argparse.Namespace,
                 say: Callable[[str], None]) -> Table:
    """Start the API of ``scenario``, write its manifest, run every mode against it in turn."""
    latency = scenario.latency_ms if args.latency_ms is None else args.latency_ms
    cap = scenario.cap if args.max_concurrent is None else args.max_concurrent
    named = scenario.named if args.manifest_concurrency is None else _named(args.manifest_concurrency)
    options = ["--latency-ms", f"{latency:g}", "--max-concurrent", str(cap), *shape.server_options()]
    load = os.getloadavg()[0]
    with ApiServer(0, options=options) as api:
        manifest_path, config_path = write_inputs(folder / "inputs", scenario.stream, shape, named, api.url)
        run = Run(scenario, shape, api.url, manifest_path, config_path, latency, cap, named,
                  (*scenario.run_args, *shlex.split(args.run_args)), args.master, args.cdk_python, args.dlt_python,
                  args.timeout)
        lines = describe(run, load)
        say("\n".join(lines))
        rows = []
        for mode in modes:
            if mode == SPARK:
                state = prepare_class_archive()  # every Spark run starts with the driver's archive made
                if not state.startswith(("there", "off")):
                    say(f"  Spark's class-data archive: {state}")
            row = measured_mode(mode, run, folder / mode)
            say(f"  {row.mode}: " + (f"{row.wall:.2f} s, {row.share:.0%} of allowed, {row.most_in_flight} in flight, "
                                     f"{row.refused} 429s" if row.ok else _why(row)))
            rows.append(row)
    return Table(scenario, lines, tuple(rows))


def _named(text: str) -> int | None:
    """``--manifest-concurrency``: a number, or ``none`` (the manifest says nothing)."""
    return None if text.strip().lower() == "none" else int(text)


# -- the report ------------------------------------------------------------------------------------------------

COLUMNS = ("mode", "wall s", "of allowed", "requests", "most in flight", "429s", "records", "load")


def _why(row: Row) -> str:
    return f"not run: {row.missing}" if row.missing else f"FAILED: {row.error}"


def cells(row: Row) -> list[str]:
    """A row's cells, as :data:`COLUMNS` names them (dashes for a mode that did not run)."""
    if row.missing:
        return [row.mode, *["-"] * (len(COLUMNS) - 2), f"{row.load:.2f}"]
    return [row.mode, f"{row.wall:.2f}", f"{row.share:.0%}" if row.ok else "-", f"{row.requests:,}",
            f"{row.most_in_flight:,}", f"{row.refused:,}", f"{row.records:,}", f"{row.load:.2f}"]


def plain_table(rows: Sequence[Row]) -> str:
    """The rows as aligned text, a failed or missing mode's reason on the line under it."""
    return aligned(COLUMNS, [cells(row) for row in rows], [_why(row) if not row.ok else row.note for row in rows])


def markdown_table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table; a failed or missing mode says why in its last cell."""
    out = ["| " + " | ".join(COLUMNS) + " | note |", "| --- |" + " ---: |" * (len(COLUMNS) - 1) + " --- |"]
    for row in rows:
        note = _why(row) if not row.ok else row.note
        out.append("| " + " | ".join([*cells(row), note.replace("|", "/")]) + " |")
    return "\n".join(out)


def report(tables: Sequence[Table], markdown: bool) -> str:
    """Every scenario's set-up and table (and again in Markdown)."""
    parts = []
    for table in tables:
        parts += ["", *table.lines, plain_table(table.rows)]
    parts += ["", "of allowed: the seconds the API allows (above) over the wall seconds; requests, most in flight "
                  "and 429s as the API counted them during the mode's run; load: the 1-minute load average as it "
                  "started."]
    if markdown:
        for table in tables:
            parts += ["", f"**{table.scenario.name}**", "", *[f"- {line}" for line in table.lines], "",
                      markdown_table(table.rows)]
    return "\n".join(parts)


# -- the command line ------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--scenario", default=",".join(SCENARIOS),
                        help=f"scenarios, comma-separated, of {','.join(SCENARIOS)} (default: all)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"modes, comma-separated (default {','.join(MODES)})")
    shape = parser.add_argument_group("the API's data")
    shape.add_argument("--windows", type=int, default=Events.windows, help="daily windows of events (30)")
    shape.add_argument("--pages", type=int, default=Events.pages, help="pages a window (10)")
    shape.add_argument("--page-size", type=int, default=Events.page_size, help="events a page (100)")
    shape.add_argument("--accounts", type=int, default=Accounts.count, help="accounts, the parents (1000)")
    shape.add_argument("--account-page-size", type=int, default=Accounts.page_size, help="accounts a page (100)")
    shape.add_argument("--order-pages", type=int, default=Accounts.order_pages, help="pages of orders an account (2)")
    shape.add_argument("--orders-per-page", type=int, default=Accounts.orders_per_page, help="orders a page (5)")
    api = parser.add_argument_group("instead of the scenario's")
    api.add_argument("--latency-ms", type=float, help="milliseconds the API takes for a page")
    api.add_argument("--max-concurrent", type=int, help="requests in flight the API allows (at least 1)")
    api.add_argument("--manifest-concurrency", metavar="N|none",
                     help="the manifest's concurrency_level (none: the manifest names no limit)")
    parser.add_argument("--run-args", default="", metavar="ARGS",
                        help='more arguments for run-manifest (both modes), e.g. "--concurrency auto"')
    parser.add_argument("--master", metavar="URL", help="Spark master for the spark mode (default local[*])")
    parser.add_argument("--peers-python", metavar="PATH",
                        help="python with airbyte-cdk and dlt (default: $AIRBYTE_CDK_PYTHON / $DLT_PYTHON, "
                             "then .venv-peers/bin/python)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a mode may take (default 600)")
    parser.add_argument("--markdown", action="store_true", help="also print the tables in Markdown")
    return parser


def _run_args_joined(argv: Sequence[str]) -> list[str]:
    """``--run-args VALUE`` as ``--run-args=VALUE``: argparse would take a VALUE such as ``--quiet`` for an option."""
    out: list[str] = []
    pending = False
    for arg in argv:
        if pending:
            out[-1] += arg
            pending = False
        elif arg == "--run-args":
            out.append("--run-args=")
            pending = True
        else:
            out.append(arg)
    return out


def _checked_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    args = parser.parse_args(_run_args_joined(sys.argv[1:] if argv is None else argv))
    args.scenarios = [name.strip() for name in args.scenario.split(",") if name.strip()]
    args.mode_list = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = [n for n in args.scenarios if n not in SCENARIOS] + [m for m in args.mode_list if m not in RUNNERS]
    if unknown or not args.scenarios or not args.mode_list:
        parser.error(f"unknown or none: {', '.join(unknown) or 'give a scenario and a mode'}; scenarios "
                     f"{', '.join(SCENARIOS)}; modes {', '.join(RUNNERS)}")
    counts = (args.windows, args.pages, args.page_size, args.accounts, args.account_page_size, args.order_pages,
              args.orders_per_page)
    if min(counts) < 1 or (args.max_concurrent is not None and args.max_concurrent < 1):
        parser.error("the counts, page sizes and --max-concurrent must be at least 1")
    if args.manifest_concurrency is not None:
        try:
            _named(args.manifest_concurrency)
        except ValueError:
            parser.error(f"--manifest-concurrency {args.manifest_concurrency!r}: a number or none")
    args.cdk_python = peers_python(args.peers_python, "AIRBYTE_CDK_PYTHON")
    args.dlt_python = peers_python(args.peers_python, "DLT_PYTHON")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _checked_args(_parser(), argv)
    shape = Shape(Events(args.windows, args.pages, args.page_size),
                  Accounts(args.accounts, args.account_page_size, args.order_pages, args.orders_per_page))

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    if {PROTOCOL, SPARK} & set(args.mode_list):
        say(f"compiled the framework at {compile_framework()} (as pip does at install)")
    say(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    tables = []
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        for name in args.scenarios:
            tables.append(run_scenario(SCENARIOS[name], shape, args.mode_list, Path(tmp, name), args, say))
    print(report(tables, args.markdown))
    return 1 if any(row.failed for table in tables for row in table.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
