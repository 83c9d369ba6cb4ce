"""The read loop of protocol mode: streams in, Airbyte messages out.

For each selected stream: a STARTED status, the records (RUNNING once the
first arrives), STATE checkpoints as units finish, then COMPLETE; or, when the
stream fails, the state that is safe, an ERROR trace and INCOMPLETE, and the
other streams carry on. The exit code is 1 when any stream failed.

Checkpoints go by time: state moves only when a unit (a partition's window)
is finished, after all its RECORD lines, and a STATE is written at most once
per ``checkpoint_seconds``; a unit that finishes sooner has its state written
with the next page or unit end once that time is up, not held until a later
unit finishes. Each STATE is flushed to the output at once, with the records
before it, so what a consumer has received is never older than the last
checkpoint: after a kill, only what was read since then is read again.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import IO, Any

from msgspec import Struct, field

from framework import collector
from framework.components.http.in_flight import Pace
from framework.components.retriever import PAGE_WATCH
from framework.components.stream import Stream
from framework.engine.connector import Connector
from framework.engine.plan import Sync, open_sync
from framework.engine.report import StreamReport, any_failed
from framework.engine.scheduler import Page, read_units
from framework.engine.selection import Selection
from framework.engine.signals import FirstPages, ReadFacts, UnitWatch, pagination_strategy, stream_definition
from framework.errors import FrameworkError, ReadError
from framework.protocol import messages


class ReadReport(Struct):
    streams: list[StreamReport] = field(default_factory=list)
    #: the requests in flight of the read: the limit, the most at once, the 429s and the level they left
    pace: Pace | None = None

    @property
    def failed(self) -> bool:
        return any_failed(self.streams)


#: The state Airbyte's sources emit at the end of a full-refresh stream, so a destination knows it ended.
NO_CURSOR_STATE = {"__ab_no_cursor_state_message": True}


def _now_ms(connector: Connector) -> int:
    return int(connector.context.clock.now().timestamp() * 1000)


def read(connector: Connector, selections: Sequence[Selection], states: Mapping[str, Mapping[str, Any]],
         out: IO[bytes], err: IO[str] | None = None, *, concurrency: int | str | None = None,
         checkpoint_seconds: float = 1.0) -> ReadReport:
    """Read ``selections`` and write their messages to ``out``; failures also go to ``err`` (stderr)."""
    err = err if err is not None else sys.stderr  # looked up now, so a redirected stderr is used
    # Pages make many short-lived objects: with the collector's default threshold it ran about 1,000 times and
    # took 0.1 s per 200,000 records; as reading wants it (framework.collector.reading), a few times per sync.
    with collector.reading():
        return _read(connector, selections, states, out, err, concurrency, checkpoint_seconds)


def _read(connector: Connector, selections: Sequence[Selection], states: Mapping[str, Mapping[str, Any]],
          out: IO[bytes], err: IO[str], concurrency: int | str | None, checkpoint_seconds: float) -> ReadReport:
    """Units are read by as many threads as the sync may keep requests in flight; the permits of the
    connector's ledger (:mod:`framework.components.http.in_flight`) hold the requests to its level."""
    report = ReadReport()
    limit = connector.in_flight_limit(concurrency)
    connector.limit_in_flight(limit)
    for selection in selections:
        with connector.groups.reading(selection.name):  # its stream groups: never two members at once
            report.streams.append(_read_stream(connector, selection, states, out, err, limit.ceiling,
                                               checkpoint_seconds))
        out.flush()
    report.pace = connector.pace()
    if report.pace is not None and report.pace.requests:
        out.write(messages.encode(messages.log(report.pace.describe())))
        out.flush()
    return report


def _read_stream(connector: Connector, selection: Selection, states: Mapping[str, Mapping[str, Any]],
                 out: IO[bytes], err: IO[str], level: int, checkpoint_seconds: float) -> StreamReport:
    """One stream's messages; its failure is reported (ERROR trace, INCOMPLETE, stderr), not raised."""
    write = out.write
    stream = selected_stream(connector, selection)
    result = StreamReport(stream.name)
    started = time.perf_counter()
    write(messages.encode(messages.stream_status(stream.name, "STARTED", float(_now_ms(connector)))))
    encoder = messages.RecordEncoder(stream.name)
    # the first pages, for the warnings of a normal run (framework.engine.signals)
    watch = FirstPages(stream.name, stream.primary_key, stream.cursor_field,
                       pagination_strategy(connector.manifest, stream.name))
    bodies = UnitWatch(stream.name, ReadFacts.of(stream_definition(connector.manifest, stream.name)), (), None)
    sync: Sync | None = None
    last_state: Any = None
    last_checkpoint = float("-inf")  # the first finished unit checkpoints at once, then throttled
    watching = PAGE_WATCH.set(bodies)  # the first response's body, for the checks that read it

    due = False  # a finished unit's state is waiting for checkpoint_seconds to pass

    def checkpoint(final: bool = False) -> None:
        nonlocal last_state, last_checkpoint, due
        value = sync.state(final=final) if sync is not None else None
        # an empty state says nothing until the end (a stream that failed before any progress has none)
        if value is not None and value != last_state and (value or final):
            write(messages.encode(messages.state(stream.name, value, result.records)))
            out.flush()  # the records it covers and the STATE reach the consumer now, not when a buffer fills
            last_state = value
        last_checkpoint = time.monotonic()
        due = False

    try:
        sync = open_sync(connector, stream, states.get(stream.name), incremental=selection.incremental)
        units = sync.plan()
        for event in read_units(sync, units, level):
            if isinstance(event, Page):
                records = event.records
                if result.records == 0:
                    write(messages.encode(messages.stream_status(stream.name, "RUNNING",
                                                                 float(_now_ms(connector)))))
                write(encoder.encode_page(records, _now_ms(connector)))
                if len(watch.pages) < watch.limit:
                    watch.page(event.unit, records)
                result.records += len(records)
                result.pages += 1
                if due and time.monotonic() - last_checkpoint >= checkpoint_seconds:
                    checkpoint()  # a unit finished earlier: its state goes out now, not at the next unit's end
            else:
                sync.done(event.unit)
                result.units += 1
                due = True
                if time.monotonic() - last_checkpoint >= checkpoint_seconds:
                    checkpoint()
        checkpoint(final=True)
        for signal in [*bodies.body_signals(), *watch.signals()]:  # wrong-looking data says so, with the fix
            text = connector.mask(f"{signal.stream}: {signal.message}; fix: {signal.fix}")
            write(messages.encode(messages.log(text, "WARN")))
            print(f"run-manifest: warning: {text}", file=err)
        if not selection.incremental:  # as Airbyte ends a full refresh: a STATE that carries no cursor
            write(messages.encode(messages.state(stream.name, NO_CURSOR_STATE, result.records)))
        result.seconds = time.perf_counter() - started
        write(messages.encode(messages.log(
            f"Read {result.records} records from stream {stream.name} in {result.seconds:.2f} s")))
        write(messages.encode(messages.stream_status(stream.name, "COMPLETE", float(_now_ms(connector)))))
    except Exception as exc:  # noqa: BLE001 - one stream's failure does not stop the others
        result.seconds = time.perf_counter() - started
        text = connector.mask(describe_failure(exc, stream.name))
        result.error = text
        internal = None if isinstance(exc, FrameworkError) else connector.mask(traceback.format_exc())
        failure = exc.failure_type if isinstance(exc, ReadError) else (
            "config_error" if isinstance(exc, FrameworkError) else "system_error")
        try:
            checkpoint()
        except Exception:  # noqa: BLE001 - state of a broken sync is not worth a second failure
            pass
        write(messages.encode(messages.error_trace(text, float(_now_ms(connector)), failure_type=failure,
                                                   internal_message=internal, stream=stream.name)))
        write(messages.encode(messages.stream_status(stream.name, "INCOMPLETE", float(_now_ms(connector)))))
        print(f"run-manifest: {text}", file=err)
    PAGE_WATCH.reset(watching)
    return result


def check_states(connector: Connector, selections: Sequence[Selection],
                 states: Mapping[str, Mapping[str, Any]]) -> None:
    """Raise :class:`~framework.errors.StateError` when a selected stream's saved state is unreadable.

    Called before anything is read, so a bad state file stops the run with
    one message (exit 2) instead of failing its stream halfway through.
    """
    for selection in selections:
        saved = states.get(selection.name)
        if saved and selection.incremental:
            open_sync(connector, selected_stream(connector, selection), saved, incremental=True)


def selected_stream(connector: Connector, selection: Selection) -> Stream:
    """The selection's stream, with the cursor field the catalog chose where the stream lets it choose."""
    return connector.stream(selection.name).with_cursor_field(selection.cursor_field)


def describe_failure(exc: BaseException, stream: str) -> str:
    """One line saying why ``stream`` failed: the stream first, then the reason, request and place."""
    if isinstance(exc, ReadError):
        if exc.stream and exc.stream != stream:  # a parent stream (partition router) failed
            return f"stream `{stream}`: reading its parent {exc}"
        return str(exc.with_context(stream=stream))
    if isinstance(exc, FrameworkError):
        return f"stream `{stream}`: {exc}"
    return f"stream `{stream}`: unexpected {type(exc).__name__}: {exc}"


__all__ = ["NO_CURSOR_STATE", "ReadReport", "StreamReport", "check_states", "describe_failure", "read",
           "selected_stream"]
