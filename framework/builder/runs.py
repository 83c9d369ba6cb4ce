"""A test read running in the background: its pages as they arrive, stoppable, polled by the page.

:class:`Run` opens the connector in its own thread (opening may send requests: dynamic streams), reads the
chosen stream's first pages with :func:`framework.engine.test_read.test_read_stream`, and keeps what the page
shows as JSON-ready values: each exchange's request and response (bodies pretty-printed, cut at
:data:`~framework.engine.test_read.BODY_LIMIT`), the records, the state after each page, the warnings.
:meth:`Run.stop` ends it before its next request (a backoff's wait too).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from framework.engine.selection import select_streams
from framework.engine.test_read import BODY_LIMIT, Exchange, PageSeen, RecordingTransport, Stopped, test_read_stream
from framework.errors import FrameworkError
from framework.masking import Masker

Opener = Callable[[RecordingTransport, Callable[[float], None]], Any]  # (transport, sleep) -> Connector


def _pretty(exchange: Exchange) -> tuple[str, bool]:
    if exchange.body is not None:
        text = json.dumps(exchange.body, indent=2, ensure_ascii=False, default=str)
        return text[:BODY_LIMIT], len(text) > BODY_LIMIT
    return exchange.text or "", exchange.truncated


def exchange_json(exchange: Exchange, mask: Callable[[str], str]) -> dict[str, Any]:
    """An exchange as the API shows it (a failed request's response: no status, the error as its body)."""
    if exchange.status is None:
        response: dict[str, Any] = {"status": None, "headers": {}, "body": mask(exchange.error or ""),
                                    "truncated": False}
    else:
        body, cut = _pretty(exchange)
        response = {"status": exchange.status, "headers": dict(exchange.response_headers), "body": mask(body),
                    "truncated": cut}
    return {"request": {"method": exchange.method, "url": exchange.url, "headers": dict(exchange.request_headers),
                        "body": exchange.request_body}, "response": response}


def masked(value: Any, mask: Callable[[str], str]) -> Any:
    """``value`` (records, a state) with every text in it masked, keys too."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {masked(key, mask) if isinstance(key, str) else key: masked(item, mask) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [masked(item, mask) for item in value]
    return value


class Run:
    """One test read of one stream (see the module docs)."""

    def __init__(self, run_id: str, open_connector: Opener, stream: str, *, partition: int | None, pages: int,
                 mask: Masker, inner_transport: Any) -> None:
        self.id = run_id
        self.stream = stream
        self.stop_event = threading.Event()
        self.status = "running"
        self.unit = ""
        self.partitions = 0
        self.pages: list[dict[str, Any]] = []
        self.records: list[dict] = []
        self.warnings: list[dict[str, str]] = []
        self.error: str | None = None
        self._mask: Callable[[str], str] = mask
        self._lock = threading.Lock()
        self._open = open_connector
        self._partition = partition
        self._pages = pages
        self._recorder = RecordingTransport(inner_transport, mask, stop=self.stop_event)
        self._thread = threading.Thread(target=self._run, name=f"test-read-{run_id}", daemon=True)

    def start(self) -> Run:
        self._thread.start()
        return self

    def stop(self) -> str:
        self.stop_event.set()
        return self.status

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _sleep(self, seconds: float) -> None:
        if self.stop_event.wait(max(0.0, seconds)):
            raise Stopped("the test read was stopped")

    def _on_page(self, page: PageSeen) -> None:
        shown = {"number": page.number, "exchanges": [exchange_json(e, self._mask) for e in page.exchanges],
                 "records": masked(page.records, self._mask), "state": masked(page.state, self._mask)}
        with self._lock:
            self.pages.append(shown)
            self.records.extend(page.records)  # as read: the schema is inferred from them, never shown

    def _run(self) -> None:
        try:
            connector = self._open(self._recorder, self._sleep)
            self._mask = self._recorder.mask = connector.mask
            selection = select_streams(connector.streams, None, [self.stream])[0]
            seen = test_read_stream(connector, self._recorder, selection, pages=self._pages,
                                    partition=self._partition, stop=self.stop_event, on_page=self._on_page)
        except FrameworkError as exc:
            with self._lock:
                self.status = "stopped" if self.stop_event.is_set() else "failed"
                self.error = None if self.stop_event.is_set() else self._mask(str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bug shows on the page rather than killing the thread silently
            with self._lock:
                self.status, self.error = "failed", self._mask(f"{type(exc).__name__}: {exc}")
            return
        with self._lock:
            self.unit, self.partitions = seen.unit, seen.partitions
            self.warnings = [{"message": self._mask(s.message), "fix": self._mask(s.fix)} for s in seen.signals]
            self.error = seen.error
            self.status = "stopped" if seen.stopped else "failed" if seen.error else "done"

    def records_read(self) -> list[Mapping[str, Any]]:
        with self._lock:
            return list(self.records)

    def as_json(self, since: int = 0) -> dict[str, Any]:
        """What the page polls; ``since``: only the pages after that page number (the page has the others)."""
        with self._lock:
            return {"status": self.status, "unit": self.unit, "partitions": self.partitions,
                    "pages": self.pages[since:] if since > 0 else list(self.pages), "warnings": list(self.warnings),
                    "error": self.error}


__all__ = ["Run", "exchange_json", "masked"]
