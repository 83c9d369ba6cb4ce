"""What a Spark-mode ``run-manifest`` tells the person or script watching it, on stderr.

Three reporters, one interface (:class:`Reporter`), picked by
:func:`reporter_for` from ``--quiet`` and ``--log-format``:

* :class:`TextReporter` (``--log-format text``, the default): a line when
  Spark is ready, then per stream its planned partitions, its progress while
  its groups of partitions run (records, pages, partitions done of total,
  records/s, the share done and the time left) and a closing line; then the
  summary table. The running groups' tasks tell the driver what they read as
  they read (:mod:`framework.engine.live_progress`), so the progress moves
  every second or two even while the first groups run. On a terminal the
  progress of the running stream is one line redrawn in place, with a bar;
  otherwise (a pipe, a log file) each update is its own line, one every
  ``interval`` seconds (1.5) to 2 s per stream, besides the planned and closing lines.
* :class:`QuietReporter` (``--quiet``): nothing but failures and warnings.
* :class:`JsonReporter` (``--log-format json``): one JSON object per line for
  every event, and nothing else from us. ``--quiet`` keeps only ``failure``
  events. The keys are stable; a key may be added, none removed or renamed.

JSON events (every object has ``event`` and ``time``, an ISO 8601 UTC instant
with milliseconds, such as ``"2026-11-03T10:15:02.418Z"``):

``started``
    ``master`` (Spark's master URL; over Spark Connect
    ``sc://host (the server's master)``), ``output`` (the destination's base URI),
    ``format`` (``Parquet``, ``Avro``, ``CSV`` or ``JSONL``),
    ``spark_seconds`` (Spark's start-up), ``background`` (true: a local Spark
    still starting while the driver reads the first groups; ``spark_seconds``
    is then the time until that start began).
``spark_ready``
    a local Spark started in the background is ready for groups (its JVM up and
    its Python workers warm): ``stream`` (the stream being read then),
    ``ready_at`` (when, ISO 8601 like ``time``), ``records`` (the records of the
    groups done by then, all read on the driver). Sent with the next group's
    ``stream_progress``; never when the driver read everything first.
``stream_planned``
    ``stream``, ``partitions`` (partitions to read).
``stream_progress``
    ``stream``, ``records``, ``pages``, ``empty_pages`` (responses that held
    no record, not in ``pages``), ``partitions_done``, ``partitions``,
    ``records_per_second`` (since the stream was planned), ``fraction_done``
    (0 to 1: the work of the partitions done, a datetime window weighing the
    time it spans; ``null`` while the plan still grows), ``time_left_s``
    (seconds, at the pace so far; ``null`` until a partition is done or while
    the plan still grows: :mod:`framework.engine.time_left`). Sent when a
    group of partitions returns and, while groups run, every ``interval``
    seconds (2) to 2.5 s, with what their tasks read so far.
``stream_done``
    the keys of ``stream_progress`` and ``files``, ``bytes``, ``nulled``
    (values that did not fit their type), ``state_saved`` (boolean),
    ``seconds``, ``error`` (the failure's message, or ``null``), ``folder``
    (the stream's Parquet folder after the sync: ``files_before``,
    ``files_after``, ``unified``: files rewritten into the folder's one schema,
    ``merged``: files merged away by ``--compact``; zeros for other formats),
    ``schema_drift`` (fields the records had that the schema does not
    declare: ``policy`` (``drop``, ``keep`` or ``evolve``), ``records`` (how
    many records had one), ``fields`` (each field's path, such as
    ``priority`` or ``address.zip``, and how many values had it),
    ``evolved`` (the columns the ``evolve`` policy added, by kind);
    :mod:`framework.cli.drift_report`), ``table`` (``--format delta|iceberg``:
    ``commits``, ``added_columns``, ``orphans_removed``; ``null`` for files).
``failure``
    ``stream`` (or ``null`` when the failure is not a stream's), ``error``.
    Sent right after a failed stream's ``stream_done``, and for a failure
    that stops the sync (a bad destination, Spark not starting).
``summary``
    ``sync_id``, ``output``, ``ok`` (no stream failed), ``records`` (all
    streams), ``seconds`` (the whole command), ``streams`` (a list of objects
    with the keys of ``stream_done`` but ``event`` and ``time``), ``in_flight``
    (the requests in flight: ``concurrency`` (``manifest``, ``flag``, ``auto``
    or ``default``: no ``concurrency_level`` and no flag, airbyte-cdk's 2),
    ``concurrency_level`` and ``concurrency_ceiling`` (where it started and
    the most it may reach), ``requests``, ``rate_limited`` (answered 429),
    ``most_in_flight``, ``level`` (at the end), ``lowest_level``,
    ``highest_level``; :mod:`framework.components.http.in_flight`).
``config_migrated``
    before Spark starts, when the manifest's config migrations changed the
    config: ``config`` (the file rewritten), ``backup`` (the previous file),
    ``error`` (why it could not be rewritten, or ``null``). Sent even with
    ``--quiet``.
``config_saved``
    during the sync, each time a config changed by the run was saved (an OAuth
    refresh token rotated): ``config`` (the file rewritten), ``backup``,
    ``reason`` (``oauth_tokens_rotated``). Sent even with ``--quiet``.
``warning``
    ``message``: something to know that does not stop the sync (a Spark
    Connect sync without the driver's sync-wide services; data that looks
    wrong, with the fix). A stream's data adds ``stream`` and ``kind`` (what
    :mod:`framework.engine.signals` found: ``extractor-empty``,
    ``pagination-stopped``, ``repeated-page``, ``missing-key``,
    ``missing-cursor``); each kind once per stream. Sent even with ``--quiet``.
``stream_normalized``
    after the summary, with ``--normalize``: ``stream``, ``mode``
    (``overwrite``, ``append`` or ``append_dedup``), ``incremental``
    (boolean), ``tables`` (the tables written), ``seconds``, ``error``;
    a failed one is followed by a ``failure``.

Protocol mode (``--protocol``) does not use these reporters: its stdout is the
Airbyte protocol, whose TRACE and LOG messages already are the structured
log, so ``--log-format`` is accepted there and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, Any, Protocol

import orjson
from msgspec import Struct, field

from framework.cli.drift_report import drift_fields, drift_line
from framework.engine.time_left import fraction_done, time_left

if TYPE_CHECKING:  # the pipeline and normalization need pyspark to run; only their result types are used here
    from framework.engine.report import StreamReport
    from framework.engine.signals import Signal
    from framework.normalization.runner import StreamOutcome
    from framework.spark.pipeline import PipelineResult, StreamResult


class Reporter(Protocol):
    """What :func:`framework.cli.sync_command.run_sync` tells about a sync."""

    def started(self, master: str, output: str, format_type: str, spark_seconds: float, *,
                background: bool = False) -> None:
        """Spark is ready after ``spark_seconds``, or (``background``) still starting while the driver reads."""

    def progress(self, event: str, result: StreamResult) -> None:
        """``run_pipeline``'s callback: ``event`` is ``planned``, ``group``, ``tick``, ``spark_ready`` or ``done``."""

    def summary(self, result: PipelineResult, output: str, seconds: float) -> None: ...

    def failure(self, error: str, stream: str | None = None) -> None: ...

    def normalized(self, outcome: StreamOutcome) -> None:
        """A stream's normalization ended."""


class Clocks(Struct, frozen=True):
    """Where reporters read the time: ``wall`` (epoch seconds, for ``time``) and ``monotonic`` (for rates)."""

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic


def _rate(records: int, seconds: float) -> float:
    return records / seconds if seconds > 0 else 0.0


def estimate(result: StreamResult, elapsed: float) -> tuple[float | None, float | None]:
    """The share of ``result``'s work done and the seconds left, ``elapsed`` seconds after it was planned (each
    None when it cannot be told yet: :mod:`framework.engine.time_left`)."""
    whole = result.planned_all
    return (fraction_done(result.work_done, result.work, planned_all=whole),
            time_left(result.work_done, result.work, elapsed, planned_all=whole))


def duration_text(seconds: float) -> str:
    """A time left in words: ``45 s``, ``3 min 05 s``, ``2 h 04 min``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def bar(fraction: float, width: int = 20) -> str:
    """A progress bar: ``[#######-------------]``."""
    filled = min(width, max(0, int(fraction * width)))
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def _records_text(result: StreamReport, *, running: bool) -> str:
    """How many records (and pages) a stream read, in words: pages that held no record are said as such."""
    empty = result.empty_pages
    if not result.records:
        if empty:
            return f"no records ({empty:,} empty page{'s' * (empty != 1)})"
        return "no records yet" if running else "0 records"
    text = f"{result.records:,} records"
    if running:
        text += f", {result.pages:,} page{'s' * (result.pages != 1)}"
    return text


def _new_warnings(result: StreamReport, shown: dict[str, int]) -> list[Signal]:
    """The stream's warnings not shown yet (each is shown once)."""
    start = shown.get(result.name, 0)
    shown[result.name] = len(result.warnings)
    return result.warnings[start:]


def _state_word(result: StreamResult) -> str:
    return "not saved" if not result.state_saved else "partial" if result.error else "saved"


def normalized_line(outcome: StreamOutcome) -> str:
    """One line about a stream's normalization."""
    how = "incremental" if outcome.incremental else "full"
    status = f"FAILED: {outcome.error}" if outcome.error else "ok"
    return (f"{outcome.stream}: {outcome.mode}, {how}, {len(outcome.tables)} table(s) in "
            f"{outcome.seconds:.1f} s, {status}")


def summary_table(result: PipelineResult, output: str) -> str:
    """The table printed at the end of a sync: one row per stream, the requests in flight (the most at once, the
    limit and who set it, the 429s), then the sync id and where it went."""
    rows = [("stream", "records", "files", "bytes", "nulled", "state", "seconds")]
    for s in result.streams:
        rows.append((s.name, str(s.records), str(len(s.files)), str(s.bytes), str(s.nulled), _state_word(s),
                     f"{s.seconds:.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += [_folder_line(s) for s in result.streams if s.folder.unified or s.folder.merged]
    lines += [_table_line(s) for s in result.streams if s.table_added or s.orphans_removed]
    lines.extend(line for line in map(drift_line, result.streams) if line)
    if result.pace is not None and result.pace.requests:
        lines.append(result.pace.describe())
    lines.append(f"sync {result.sync_id} -> {output}")
    return "\n".join(lines)


def _table_line(result: StreamResult) -> str:
    """What a table format's commits changed beyond the records (framework.spark.table_output), in words."""
    done = []
    if result.table_added:
        done.append(f"columns added to the table: {', '.join(result.table_added)}")
    if result.orphans_removed:
        done.append(f"{result.orphans_removed} orphan file{'s' * (result.orphans_removed != 1)} of a killed sync "
                    "removed")
    return f"{result.name}: " + ", ".join(done)


def _folder_line(result: StreamResult) -> str:
    """What the step after a stream's sync did to its folder (framework.formats.rewrite), in words."""
    name, folder, done = result.name, result.folder, []
    if folder.unified:
        done.append(f"{folder.unified} file{'s' * (folder.unified != 1)} rewritten into the folder's one schema")
    if folder.merged:
        done.append(f"{folder.files_before} files merged into {folder.files_after}")
    return f"{name}: " + ", ".join(done)


# -- text -------------------------------------------------------------------------------------------------------


class TextReporter(Struct):
    """Lines for a person; see the module docs. ``tty`` redraws the running stream's line in place."""

    err: IO[str]
    tty: bool = False
    # least seconds between two progress lines of a stream when not on a terminal: with the pipeline's ticks
    # (framework.spark.pipeline.TICK_SECONDS) a line comes at least every 2 s while the stream runs
    interval: float = 1.5
    clocks: Clocks = field(default_factory=Clocks)
    _planned_at: dict[str, float] = field(default_factory=dict)
    _shown_at: dict[str, float] = field(default_factory=dict)
    _open_line: bool = False  # a redrawn line is on screen (tty) and needs a newline before other text
    _warned: dict[str, int] = field(default_factory=dict)

    def started(self, master: str, output: str, format_type: str, spark_seconds: float, *,
                background: bool = False) -> None:
        if background:
            self._write(f"Spark starting in the background ({master}), the driver reads meanwhile; "
                        f"writing {format_type} to {output}")
        else:
            self._write(f"Spark ready in {spark_seconds:.1f} s ({master}); writing {format_type} to {output}")

    def progress(self, event: str, result: StreamResult) -> None:
        now = self.clocks.monotonic()
        for signal in _new_warnings(result, self._warned):  # data that looks wrong: its fix, once
            self._write(f"run-manifest: warning: {signal.line()}")
        if event == "planned":
            self._planned_at[result.name] = now
            self._write(f"  {result.name}: {result.units} partition(s) planned")
            if self.tty:
                self._redraw(self._running_line(result, now))
        elif event in ("group", "tick"):
            if self.tty:
                self._redraw(self._running_line(result, now))
            elif now - self._shown_at.get(result.name, float("-inf")) >= self.interval:
                self._shown_at[result.name] = now
                self._write(self._running_line(result, now))
        elif event == "done":
            status = f"FAILED: {result.error}" if result.error else "ok"
            self._write(f"  {result.name}: {_records_text(result, running=False)}, {len(result.files)} file(s), "
                        f"{result.units_done}/{result.units} partitions, "
                        f"{_rate(result.records, result.seconds):,.0f} records/s, {status}")

    def summary(self, result: PipelineResult, output: str, seconds: float) -> None:
        self._write(summary_table(result, output))

    def failure(self, error: str, stream: str | None = None) -> None:
        self._write(f"run-manifest: {error}")

    def normalized(self, outcome: StreamOutcome) -> None:
        self._write(f"  normalized {normalized_line(outcome)}")

    def _running_line(self, result: StreamResult, now: float) -> str:
        elapsed = now - self._planned_at.get(result.name, now)
        share, left = estimate(result, elapsed)
        line = (f"  {result.name}: {_records_text(result, running=True)}, "
                f"{result.units_done}/{result.units} partitions, {_rate(result.records, elapsed):,.0f} records/s")
        if share is not None:
            line += f", {share:.0%} done"
        if left is not None:
            line += f", about {duration_text(left)} left"
        if self.tty and share is not None:
            line = f"  {bar(share)}{line}"
        return line

    def _redraw(self, line: str) -> None:
        self.err.write("\r\x1b[2K" + line)  # back to the line's start, clear it, draw
        self.err.flush()
        self._open_line = True

    def _write(self, text: str) -> None:
        if self._open_line:
            self.err.write("\r\x1b[2K")  # the redrawn line gives way to the lasting one
            self._open_line = False
        self.err.write(text + "\n")
        self.err.flush()


class QuietReporter(Struct):
    """``--quiet``: failures and warnings only, one line each."""

    err: IO[str]
    _warned: dict[str, int] = field(default_factory=dict)

    def started(self, master: str, output: str, format_type: str, spark_seconds: float, *,
                background: bool = False) -> None:
        return None

    def progress(self, event: str, result: StreamResult) -> None:
        for signal in _new_warnings(result, self._warned):
            self.err.write(f"run-manifest: warning: {signal.line()}\n")
            self.err.flush()

    def summary(self, result: PipelineResult, output: str, seconds: float) -> None:
        for failed in (s for s in result.streams if s.error):
            self.err.write(f"run-manifest: stream `{failed.name}` failed: {failed.error}\n")
        for dropped in (s for s in result.streams if s.drift_policy == "drop"):  # data left out: a warning
            line = drift_line(dropped)
            if line:
                self.err.write(f"run-manifest: warning: {line}\n")
        self.err.flush()

    def failure(self, error: str, stream: str | None = None) -> None:
        self.err.write(f"run-manifest: {error}\n")
        self.err.flush()

    def normalized(self, outcome: StreamOutcome) -> None:
        if outcome.error:
            self.failure(f"normalization of stream `{outcome.stream}` failed: {outcome.error}")


# -- JSON lines -------------------------------------------------------------------------------------------------


def stream_fields(result: StreamResult) -> dict[str, Any]:
    """A finished stream's numbers under the keys of ``stream_done`` (without ``event`` and ``time``)."""
    return {
        "stream": result.name, "records": result.records, "pages": result.pages,
        "empty_pages": result.empty_pages, "partitions_done": result.units_done, "partitions": result.units,
        "records_per_second": round(_rate(result.records, result.seconds), 1),
        "files": len(result.files), "bytes": result.bytes, "nulled": result.nulled,
        "state_saved": bool(result.state_saved), "seconds": round(result.seconds, 3), "error": result.error,
        "folder": result.folder.as_dict(),  # the stream's folder after the sync (framework.formats.rewrite)
        "schema_drift": drift_fields(result),
        # a table format's stream (docs/tables.md): its commits, the columns they added, the orphans removed
        "table": {"commits": result.table_commits, "added_columns": list(result.table_added),
                  "orphans_removed": result.orphans_removed} if result.table_commits else None,
    }


class JsonReporter(Struct):
    """One JSON object per line for every event; see the module docs for the keys. ``quiet``: failures only."""

    err: IO[str]
    quiet: bool = False
    clocks: Clocks = field(default_factory=Clocks)
    interval: float = 2.0  # least seconds between two ``stream_progress`` the ticks of a running stream send
    _planned_at: dict[str, float] = field(default_factory=dict)
    _shown_at: dict[str, float] = field(default_factory=dict)
    _warned: dict[str, int] = field(default_factory=dict)

    def started(self, master: str, output: str, format_type: str, spark_seconds: float, *,
                background: bool = False) -> None:
        self._emit("started", master=master, output=output, format=format_type,
                   spark_seconds=round(spark_seconds, 3), background=background)

    def progress(self, event: str, result: StreamResult) -> None:
        now = self.clocks.monotonic()
        for signal in _new_warnings(result, self._warned):
            self._emit("warning", always=True, message=signal.line(), stream=result.name, kind=signal.kind)
        if event == "planned":
            self._planned_at[result.name] = now
            self._emit("stream_planned", stream=result.name, partitions=result.units)
        elif event == "group" or (event == "tick"
                                  and now - self._shown_at.get(result.name, float("-inf")) >= self.interval):
            self._shown_at[result.name] = now
            elapsed = now - self._planned_at.get(result.name, now)
            share, left = estimate(result, elapsed)
            self._emit("stream_progress", stream=result.name, records=result.records, pages=result.pages,
                       empty_pages=result.empty_pages, partitions_done=result.units_done, partitions=result.units,
                       records_per_second=round(_rate(result.records, elapsed), 1),
                       fraction_done=None if share is None else round(share, 4),
                       time_left_s=None if left is None else round(left, 1))
        elif event == "spark_ready" and result.spark_ready_at is not None:
            ready = datetime.fromtimestamp(result.spark_ready_at, timezone.utc).isoformat(timespec="milliseconds")
            self._emit("spark_ready", stream=result.name, ready_at=ready.replace("+00:00", "Z"),
                       records=result.records_before_spark)
        elif event == "done":
            self._emit("stream_done", **stream_fields(result))
            if result.error:
                self.failure(result.error, result.name)

    def summary(self, result: PipelineResult, output: str, seconds: float) -> None:
        streams = [stream_fields(s) for s in result.streams]
        pace = result.pace.as_dict() if result.pace is not None else None
        self._emit("summary", sync_id=result.sync_id, output=output, ok=not any(s.error for s in result.streams),
                   records=sum(s.records for s in result.streams), seconds=round(seconds, 3), streams=streams,
                   in_flight=pace)

    def failure(self, error: str, stream: str | None = None) -> None:
        self._emit("failure", always=True, stream=stream, error=error)

    def warning(self, message: str) -> None:
        """Something the user should know that does not stop the sync (shown even when quiet)."""
        self._emit("warning", always=True, message=message)

    def config_migrated(self, config: str, backup: str | None, error: str | None = None) -> None:
        """The manifest's config migrations changed the config: rewritten (its ``backup``), or not (``error``)."""
        self._emit("config_migrated", always=True, config=config, backup=backup, error=error)

    def config_saved(self, config: str, backup: str, reason: str) -> None:
        """A config changed during the run (rotated OAuth tokens) was saved to ``config``, the old one in ``backup``."""
        self._emit("config_saved", always=True, config=config, backup=backup, reason=reason)

    def normalized(self, outcome: StreamOutcome) -> None:
        self._emit("stream_normalized", stream=outcome.stream, mode=outcome.mode,
                   incremental=bool(outcome.incremental), tables=list(outcome.tables),
                   seconds=round(outcome.seconds, 3), error=outcome.error)
        if outcome.error:
            self.failure(f"normalization failed: {outcome.error}", outcome.stream)

    def _emit(self, event: str, always: bool = False, **fields: Any) -> None:
        if self.quiet and not always:
            return
        stamp = datetime.fromtimestamp(self.clocks.wall(), timezone.utc).isoformat(timespec="milliseconds")
        line = orjson.dumps({"event": event, "time": stamp.replace("+00:00", "Z"), **fields})
        self.err.write(line.decode() + "\n")
        self.err.flush()


def reporter_for(err: IO[str], log_format: str = "text", quiet: bool = False) -> Reporter:
    """The reporter for ``--log-format`` and ``--quiet``, writing to ``err``."""
    if log_format == "json":
        return JsonReporter(err, quiet=quiet)
    if quiet:
        return QuietReporter(err)
    isatty = getattr(err, "isatty", None)
    return TextReporter(err, tty=bool(isatty and isatty()))


__all__ = ["Clocks", "JsonReporter", "QuietReporter", "Reporter", "TextReporter", "bar", "duration_text", "estimate",
           "normalized_line", "reporter_for", "stream_fields", "summary_table"]
