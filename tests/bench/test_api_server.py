"""bench/api_server.py as a real API is: pages answered after a latency, a cap on requests in flight, counted."""

from __future__ import annotations

import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import orjson
import requests

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # the bench scripts import their neighbours by name

import api_server  # noqa: E402 - after the path above


def _serve(latency_s: float, limit: int) -> tuple[ThreadingHTTPServer, str]:
    pages = api_server.Pages(50)
    handler = api_server.handler_for(pages, 10, latency_s, api_server.InFlight(limit))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}"


def test_requests_past_the_cap_are_refused_with_retry_after_and_counted():
    server, url = _serve(latency_s=1.0, limit=2)
    try:
        start = threading.Barrier(4)
        answers: list[requests.Response] = []

        def ask(page: int) -> None:
            start.wait()
            answers.append(requests.get(f"{url}/records", params={"page": page}, timeout=10))

        threads = [threading.Thread(target=ask, args=(page,)) for page in range(1, 5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [200, 200, 429, 429]
        assert all(answer.headers["Retry-After"] == "1" for answer in answers if answer.status_code == 429)
        assert all(len(answer.json()["data"]) == 10 for answer in answers if answer.status_code == 200)
        stats = orjson.loads(requests.get(f"{url}/_stats", timeout=10).content)
        assert stats == {"requests": 4, "refused": 2, "most_in_flight": 2, "max_concurrent": 2}
    finally:
        server.shutdown()
        server.server_close()


def test_without_a_cap_every_request_is_answered_and_the_most_in_flight_is_seen():
    server, url = _serve(latency_s=1.0, limit=0)
    try:
        start = threading.Barrier(3)
        statuses: list[int] = []

        def ask() -> None:
            start.wait()
            statuses.append(requests.get(f"{url}/records", timeout=10).status_code)

        threads = [threading.Thread(target=ask) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert statuses == [200, 200, 200]
        stats = orjson.loads(requests.get(f"{url}/_stats", timeout=10).content)
        assert stats["refused"] == 0 and stats["most_in_flight"] == 3 and stats["requests"] == 3
    finally:
        server.shutdown()
        server.server_close()
