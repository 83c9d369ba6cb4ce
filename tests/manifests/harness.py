"""Running a shipped connector of manifests/ in protocol mode against the fake API.

:func:`run_connector` writes the config (and state) to files, calls
``run-manifest --protocol`` in-process and sorts the messages it printed into
a :class:`Sync`: records per stream, the last state per stream, errors and
final statuses. Each connector's test module serves recorded-shape responses
(written from the API's public documentation) from the ``fake_api`` fixture.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from contextlib import redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from framework.cli.run import main

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"


@dataclass
class Sync:
    """What one protocol-mode run printed."""

    code: int
    stderr: str
    messages: list[dict[str, Any]] = field(default_factory=list)

    def records(self, stream: str) -> list[dict[str, Any]]:
        return [m["record"]["data"] for m in self.messages
                if m["type"] == "RECORD" and m["record"]["stream"] == stream]

    def states(self) -> list[dict[str, Any]]:
        """The last STATE message of each stream, in Airbyte's per-stream shape (input for the next run)."""
        last: dict[str, dict[str, Any]] = {}
        for message in self.messages:
            if message["type"] == "STATE":
                state = message["state"]
                last[state["stream"]["stream_descriptor"]["name"]] = state
        return list(last.values())

    def state_of(self, stream: str) -> dict[str, Any]:
        for state in self.states():
            if state["stream"]["stream_descriptor"]["name"] == stream:
                return state["stream"]["stream_state"]
        raise AssertionError(f"no STATE message for stream {stream!r}")

    def errors(self) -> list[dict[str, Any]]:
        return [m["trace"]["error"] for m in self.messages
                if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]

    def statuses(self) -> dict[str, str]:
        """The last stream status of each stream."""
        found: dict[str, str] = {}
        for m in self.messages:
            if m["type"] == "TRACE" and m["trace"]["type"] == "STREAM_STATUS":
                status = m["trace"]["stream_status"]
                found[status["stream_descriptor"]["name"]] = status["status"]
        return found


def run_connector(name: str, config: Mapping[str, Any], folder: Path, *, mode: str = "--protocol",
                  state: Sequence[Mapping[str, Any]] | None = None, streams: Sequence[str] = (),
                  label: str = "run") -> Sync:
    """Run ``manifests/<name>.yaml`` with ``config`` in ``mode`` and collect what it printed."""
    config_file = folder / f"{label}-config.json"
    config_file.write_text(json.dumps(config))
    argv = [str(MANIFESTS / f"{name}.yaml"), "--config", str(config_file), mode]
    if state is not None:
        state_file = folder / f"{label}-state.json"
        state_file.write_text(json.dumps(list(state)))
        argv += ["--state", str(state_file)]
    if streams:
        argv += ["--streams", ",".join(streams)]
    out = io.BytesIO()
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(argv, out=out)
    messages = [orjson.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    return Sync(code, err.getvalue(), messages)


def assert_clean(sync: Sync, *streams: str) -> None:
    """The run succeeded and every named stream completed."""
    assert sync.code == 0, (sync.stderr, sync.errors())
    assert sync.errors() == []
    statuses = sync.statuses()
    for stream in streams:
        assert statuses.get(stream) == "COMPLETE", (stream, statuses)
