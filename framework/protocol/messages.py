"""Airbyte protocol messages, encoded with orjson.

Records are the hot path: :class:`RecordEncoder` pre-encodes the part of a
RECORD message that is the same for every record of a stream, so a page of
records is one ``orjson.dumps`` per record (with orjson's defaults, its fastest)
and one byte join that puts the shared parts between them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as a line of JSON (with the newline)."""
    return orjson.dumps(message, option=_OPTIONS | orjson.OPT_APPEND_NEWLINE, default=str)


class RecordEncoder:
    """RECORD messages of one stream."""

    def __init__(self, stream: str, namespace: str | None = None):
        head: dict[str, Any] = {"stream": stream}
        if namespace:
            head["namespace"] = namespace
        prefix = orjson.dumps(head)[:-1]  # `{"stream":"x"` without the closing brace
        self._prefix = b'{"type":"RECORD","record":' + prefix + b',"data":'

    def encode_page(self, records: Sequence[Mapping[str, Any]], emitted_at: int) -> bytes:
        """The RECORD lines of a page of records, all with the same ``emitted_at`` (epoch ms)."""
        if not records:
            return b""
        tail = b',"emitted_at":' + str(emitted_at).encode() + b"}}\n"
        prefix = self._prefix
        try:  # records decoded from JSON: string keys and JSON values, orjson's fast path
            body = (tail + prefix).join(map(orjson.dumps, records))
        except TypeError:  # a key that is not a string, or a value orjson does not know (a Decimal): as text
            body = (tail + prefix).join([_dumps_any(record) for record in records])
        return prefix + body + tail


def _dumps_any(record: Mapping[str, Any]) -> bytes:
    return orjson.dumps(record, option=_OPTIONS, default=str)


def state(stream: str, stream_state: Mapping[str, Any], record_count: int | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "type": "STATE",
        "state": {
            "type": "STREAM",
            "stream": {"stream_descriptor": {"name": stream}, "stream_state": dict(stream_state)},
        },
    }
    if record_count is not None:
        message["state"]["sourceStats"] = {"recordCount": float(record_count)}
    return message


def log(message: str, level: str = "INFO") -> dict[str, Any]:
    return {"type": "LOG", "log": {"level": level, "message": message}}


def stream_status(stream: str, status: str, emitted_at: float) -> dict[str, Any]:
    """``status``: STARTED, RUNNING, COMPLETE or INCOMPLETE."""
    return {
        "type": "TRACE",
        "trace": {
            "type": "STREAM_STATUS",
            "emitted_at": emitted_at,
            "stream_status": {"stream_descriptor": {"name": stream}, "status": status},
        },
    }


def error_trace(message: str, emitted_at: float, *, failure_type: str = "system_error",
                internal_message: str | None = None, stream: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"message": message, "failure_type": failure_type}
    if internal_message:
        error["internal_message"] = internal_message
    if stream:
        error["stream_descriptor"] = {"name": stream}
    return {"type": "TRACE", "trace": {"type": "ERROR", "emitted_at": emitted_at, "error": error}}


def connection_status(ok: bool, message: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"status": "SUCCEEDED" if ok else "FAILED"}
    if message:
        status["message"] = message
    return {"type": "CONNECTION_STATUS", "connectionStatus": status}


def catalog(streams: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"type": "CATALOG", "catalog": {"streams": list(streams)}}


def spec(connector_spec: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "SPEC", "spec": dict(connector_spec)}


__all__ = ["RecordEncoder", "catalog", "connection_status", "encode", "error_trace", "log", "spec", "state",
           "stream_status"]
