"""Retries as lines on stderr while a CLI runs: text for people, one JSON object each for scripts.

The HTTP client logs each retry on :data:`framework.components.http.client.RETRY_LOG`
(stream, request with secrets masked, status or error, attempt n of m, the wait);
:func:`showing_retries` shows them for the duration of a command. Spark executors
log on their own stderr (in local mode, the console's).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

import orjson

from framework.components.http.client import RETRY_LOG


class _StderrLines(logging.Handler):
    def __init__(self, prog: str, as_json: bool):
        super().__init__(logging.WARNING)
        self.prog = prog
        self.as_json = as_json

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if self.as_json:
                stamp = datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")
                line = orjson.dumps({"event": "retry", "time": stamp.replace("+00:00", "Z"),
                                     "message": message}).decode()
            else:
                line = f"{self.prog}: {message}"
            sys.stderr.write(line + "\n")  # looked up now: tests and callers may swap stderr
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - a log line must never break a sync
            self.handleError(record)


@contextmanager
def showing_retries(prog: str, as_json: bool = False) -> Iterator[None]:
    """Show every retry on stderr while the block runs (``prog: stream `x`: retrying GET ...``)."""
    handler = _StderrLines(prog, as_json)
    before = (RETRY_LOG.level, RETRY_LOG.propagate)
    RETRY_LOG.addHandler(handler)
    RETRY_LOG.setLevel(logging.WARNING)
    RETRY_LOG.propagate = False
    try:
        yield
    finally:
        RETRY_LOG.removeHandler(handler)
        RETRY_LOG.setLevel(before[0])
        RETRY_LOG.propagate = before[1]


__all__ = ["showing_retries"]
