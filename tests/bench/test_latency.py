"""bench/latency.py and the API shapes it reads: windows of events, parents and children, the counters.

Nothing here starts Spark or a peer: the API runs in a thread of this
process, and one tiny protocol-mode run reads it without latency.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "bench"))  # the bench scripts import their neighbours by name

import api_server  # noqa: E402 - after the path above
import latency  # noqa: E402

from framework import check_manifest  # noqa: E402

SMALL = latency.Shape(api_server.Events(windows=3, pages=2, page_size=4),
                      api_server.Accounts(count=7, page_size=3, order_pages=2, orders_per_page=2))


@pytest.fixture
def api():
    """The API of :data:`SMALL` in a thread, no latency, at most 4 in flight: its base URL."""
    handler = api_server.handler_for(api_server.Pages(0), 10, 0.0, api_server.InFlight(4),
                                     api_server.Shapes(SMALL.events, SMALL.accounts))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}"
    server.shutdown()
    server.server_close()


def _pages(url: str, **params: str) -> list[dict]:
    """Every page from ``url`` on, following ``next_cursor`` (sent back as ``cursor``)."""
    pages = []
    while True:
        answer = requests.get(url, params=params, timeout=10)
        assert answer.status_code == 200, answer.text
        pages.append(answer.json())
        if not pages[-1]["next_cursor"]:
            return pages
        params = {**params, "cursor": pages[-1]["next_cursor"]}


def test_a_daily_window_holds_its_pages_of_events_updated_in_it(api):
    ids = []
    for day in range(1, 4):
        start, end = f"2024-01-0{day}T00:00:00Z", f"2024-01-0{day}T23:59:59Z"
        pages = _pages(f"{api}/events", start_time=start, end_time=end)
        records = [record for page in pages for record in page["data"]]
        assert [len(page["data"]) for page in pages] == [4, 4]  # 2 pages of 4, no empty page after
        assert all(start <= record["updated_at"] <= end for record in records)
        ids += [record["id"] for record in records]
    assert ids == list(range(1, 25))  # every event once, in order
    whole = _pages(f"{api}/events")  # no window: all of them
    assert sum(len(page["data"]) for page in whole) == 24 and len(whole) == 6
    offset = requests.get(f"{api}/events", params={"start_time": "2024-01-02T01:00:00+01:00"}, timeout=10).json()
    assert offset["data"][0]["id"] == 9  # 00:00 UTC: the second day's first event
    bad = requests.get(f"{api}/events", params={"start_time": "yesterday"}, timeout=10)
    assert bad.status_code == 400
    assert requests.get(f"{api}/events", params={"cursor": "9-1"}, timeout=10).status_code == 400


def test_accounts_by_cursor_and_each_accounts_orders(api):
    accounts = [record for page in _pages(f"{api}/accounts") for record in page["data"]]
    assert [a["id"] for a in accounts] == list(range(1, 8))
    orders = []
    for account in accounts:
        pages = _pages(f"{api}/accounts/{account['id']}/orders")
        assert [len(page["data"]) for page in pages] == [2, 2]
        orders += [order for page in pages for order in page["data"]]
    assert sorted(order["id"] for order in orders) == list(range(1, SMALL.accounts.orders + 1))
    assert all(order["account_id"] in range(1, 8) for order in orders)
    assert requests.get(f"{api}/accounts/8/orders", timeout=10).status_code == 404


def test_the_counters_are_read_and_reset(api):
    for _ in range(3):
        requests.get(f"{api}/events", timeout=10)
    stats = orjson.loads(requests.get(f"{api}/_stats", timeout=10).content)
    assert stats == {"requests": 3, "refused": 0, "most_in_flight": 1, "max_concurrent": 4}
    before = orjson.loads(requests.post(f"{api}/_stats/reset", timeout=10).content)
    assert before == stats  # what they were, then zero
    assert latency.api_stats(api) == {"requests": 0, "refused": 0, "most_in_flight": 0, "max_concurrent": 4}
    requests.get(f"{api}/accounts", timeout=10)
    assert latency.api_stats(api, reset=True)["requests"] == 1
    assert orjson.loads(requests.get(f"{api}/_stats/reset", timeout=10).content)["requests"] == 0


def test_the_allowed_time_is_the_sequential_pages_and_the_rest_over_the_cap():
    default = latency.Shape()
    assert default.pages("events") == (0, 300, 10)
    assert default.pages("orders") == (10, 2000, 12)
    assert latency.allowed_seconds(0, 300, 10, 0.2, 8) == pytest.approx(7.5)  # events: 300 / 8 x 0.2
    assert latency.allowed_seconds(10, 2000, 12, 0.05, 64) == pytest.approx(10 * 0.05 + 2000 / 64 * 0.05)
    assert latency.allowed_seconds(0, 30, 10, 0.2, 8) == pytest.approx(2.0)  # a window's 10 pages in a chain
    events = latency.SCENARIOS["events"]
    assert latency.formula(default, events, 200, 8).endswith("= 7.50 s")


@pytest.mark.parametrize("stream, named", [("events", 8), ("events", None), ("orders", 64)])
def test_the_manifests_written_are_valid(tmp_path, stream, named):
    manifest, _ = latency.write_inputs(tmp_path, stream, latency.Shape(), named, "http://127.0.0.1:1")
    checked = check_manifest(manifest, strict=True)
    assert checked.ok, checked.diagnostics
    source = checked.source
    assert [s.name for s in source.streams] == [stream]
    if named is None:
        assert source.concurrency_level is None
    else:
        assert source.concurrency_level.default_concurrency == named
    document = latency.manifest(stream, latency.Shape(), named)
    if stream == "events":
        cursor = document["streams"][0]["incremental_sync"]
        assert (cursor["step"], cursor["cursor_granularity"]) == ("P1D", "PT1S")
        assert cursor["end_datetime"]["datetime"] == "2024-01-30T23:59:59Z"  # 30 windows exactly


def _protocol_records(tmp_path: Path, url: str, stream: str) -> list[bytes]:
    manifest, config = latency.write_inputs(tmp_path, stream, SMALL, 4, url)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "framework.cli.run", manifest, "--config", config, "--protocol"],
                          capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return [line for line in done.stdout.splitlines() if line.startswith(b'{"type":"RECORD"')]


def test_a_protocol_run_reads_every_window_and_every_child_once(tmp_path, api):
    events = _protocol_records(tmp_path / "events", api, "events")
    assert len(events) == SMALL.records("events") == 24
    assert sorted(orjson.loads(line)["record"]["data"]["id"] for line in events) == list(range(1, 25))
    assert latency.api_stats(api, reset=True)["requests"] == 3 * 2  # 3 windows of 2 pages, nothing more
    orders = _protocol_records(tmp_path / "orders", api, "orders")
    assert len(orders) == SMALL.records("orders") == 28
    assert latency.api_stats(api)["requests"] == 3 + 7 * 2  # 3 pages of accounts, 2 pages of orders each


def _row(records: int) -> latency.Row:
    run = latency.Run(latency.SCENARIOS["events"], SMALL, "http://api", "m.yaml", "c.json", 200, 8, 8, (), None,
                      None, None, 60)
    return latency._row(latency.PROTOCOL, run, wall=4.0, records=records)


def test_a_wrong_number_of_records_fails_the_mode_and_a_missing_peer_says_so():
    good, wrong = _row(24), _row(23)
    assert good.ok and good.share == pytest.approx(2 * 0.2 / 4.0)  # a window's 2 pages in a chain, over 4 s
    assert wrong.failed and "delivered 23 records, expected 24" in wrong.error
    missing = latency.Row("dlt", 24, 1.0, 0.0, missing="dlt not installed")
    text = latency.plain_table([good, wrong, missing])
    assert "FAILED: delivered 23" in text and "not run: dlt not installed" in text
    assert "| run-manifest --protocol | 4.00 | 10% |" in latency.markdown_table([good])


def test_run_args_may_start_with_dashes():
    args = latency._checked_args(latency._parser(), ["--scenario", "events", "--run-args", "--quiet", "--windows", "2"])
    assert args.run_args == "--quiet" and args.windows == 2
    args = latency._checked_args(latency._parser(), ["--run-args", "--concurrency auto"])
    assert args.run_args == "--concurrency auto" and args.scenarios == list(latency.SCENARIOS)
