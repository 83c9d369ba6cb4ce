"""``framework.sync(...)``: run a connector from Python, as ``run-manifest`` does, and get a typed report.

The sync is the one ``run-manifest`` runs
(:func:`framework.cli.sync_command.sync_selections`): the same checks before
Spark starts, the same pipeline, state and files. What the command prints,
this hands to ``on_progress`` (:class:`~framework.api.report.Progress`
values) and answers as a :class:`~framework.api.report.SyncReport`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from framework.api.report import Drift, Progress, StreamSummary, SyncReport
from framework.cli.progress import estimate
from framework.cli.sync_command import SyncOptions, sync_selections
from framework.engine.config_migration import describe_rewrite, rewrite_config_file
from framework.engine.config_sink import config_file_sink
from framework.engine.connector import open_connector
from framework.engine.selection import parse_state, read_json_file, select_streams
from framework.errors import ConfigError, SyncFailed
from framework.manifest.config_check import ConfigFile, read_config_file
from framework.protocol.read import check_states
from framework.storage import storage_for
from framework.storage.state_store import StateStore
from framework.sync_modes import with_destination_modes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.components.config_sink import ConfigSink
    from framework.engine.config_migration import NormalizedConfig
    from framework.engine.connector import Connector
    from framework.engine.selection import Selection
    from framework.normalization.runner import StreamOutcome
    from framework.spark.pipeline import PipelineResult, StreamResult

__all__ = ["open_for_sync", "sync"]

PathOrData = str | os.PathLike[str] | Mapping[str, Any]
FormatName = Literal["parquet", "avro", "csv", "jsonl"]


def sync(manifest: str | os.PathLike[str], config: PathOrData, *, output: str | os.PathLike[str] | None = None,
         format: FormatName | None = None, spark: SparkSession | None = None,
         state: PathOrData | None = None, streams: Sequence[str] | None = None,
         on_progress: Callable[[Progress], None] | None = None, destination: str | os.PathLike[str] | None = None,
         sync_mode: Literal["append", "overwrite", "append_dedup"] | None = None, dedup: bool = False,
         normalize: bool = False, concurrency: int | Literal["auto"] | None = None,
         allow_custom_code: bool = False, check_first: bool = True,
         raise_on_failure: bool = True) -> SyncReport:
    """Sync ``manifest``'s streams for ``config`` into ``output`` (a folder or ``s3://bucket/prefix``; default
    ``./output``) as ``format`` files (default Parquet), on ``spark`` (default: a local session, started as
    ``run-manifest`` starts one). See docs/python-api.md.

    ``config`` and ``state`` are a JSON file's path or the data itself (a config file is rewritten when the
    manifest's config migrations change it, and keeps rotated OAuth tokens; a dict is not). ``streams``
    narrows the streams; ``on_progress`` gets a :class:`Progress` per stream event, from the calling thread or
    the sync's progress thread, one at a time.

    Raises :class:`~framework.errors.ManifestError`, :class:`~framework.errors.ConfigError` and the other
    :class:`~framework.errors.FrameworkError` s for bad input before anything is read; when a stream failed,
    :class:`~framework.errors.SyncFailed` carrying the report (``raise_on_failure=False``: the report instead).
    """
    notes: list[str] = []
    connector, selections, states = open_for_sync(manifest, config, state=state, streams=streams,
                                                  allow_custom_code=allow_custom_code, note=notes.append)
    selections = with_destination_modes(selections, connector.streams, None, forced=sync_mode, dedup=dedup)
    options = SyncOptions(manifest=os.fspath(manifest), destination=_path(destination), output=_path(output),
                          format=format, sync_mode=sync_mode, given_state=state is not None, normalize=normalize,
                          check_first=check_first, concurrency=concurrency, quiet=True)
    reporter = _ApiReporter(on_progress, notes)
    began = time.perf_counter()
    done = sync_selections(options, connector, selections, states, reporter, session=spark)
    report = _report(done.result, done.settings.base_uri, done.settings.format.format_type,
                     time.perf_counter() - began, notes, normalization_failed=reporter.normalization_failed,
                     states=_saved_states(done.settings))
    if raise_on_failure and not report.ok:
        failed = [s for s in report.streams if s.error]
        what = "; ".join(f"stream `{s.name}`: {s.error}" for s in failed) or "normalization failed"
        raise SyncFailed(f"the sync {report.sync_id} failed: {what} (what was committed stands; running again "
                         "continues from the saved state)", report)
    return report


def open_for_sync(manifest: str | os.PathLike[str], config: PathOrData, *, state: PathOrData | None = None,
                  streams: Sequence[str] | None = None, allow_custom_code: bool = False,
                  note: Callable[[str], None] = lambda text: None) -> tuple[Connector, list[Selection], dict]:
    """The connector of ``manifest`` for ``config``, the streams to read and their given states; raises the
    framework's errors for bad input. A config file changed by the manifest's config migrations is rewritten
    (with a backup; ``note`` is told)."""
    manifest_path = os.fspath(manifest)
    config_file: ConfigFile | None = None
    sink: ConfigSink | None = None
    if isinstance(config, Mapping):
        data, config_path = dict(config), None
    else:
        config_path = os.fspath(config)
        config_file = read_config_file(config_path)
        data = config_file.data
        sink = config_file_sink(data, config_path, note)

    def on_config(found: NormalizedConfig) -> None:
        if not found.migrated_changed or config_path is None:
            return
        if sink is not None:
            sink.rebase(found.migrated)
        try:
            note(describe_rewrite(config_path, rewrite_config_file(config_path, found.migrated)))
        except OSError as exc:
            note(f"the config migrations changed the config, but {config_path} could not be rewritten: {exc}; "
                 "the migrated config is used for this run")

    connector = open_connector(manifest_path, data, config_path=config_file,
                               allow_custom_code=True if allow_custom_code else None, on_config=on_config,
                               config_sink=sink)
    states = parse_state(_json(state, "state")) if state is not None else {}
    selections = select_streams(connector.streams, None, list(streams) if streams is not None else None)
    if not selections:
        raise ConfigError(f"nothing to read: streams={list(streams or [])!r} selects no stream of the manifest "
                          f"({', '.join(connector.streams)}); name streams it has")
    check_states(connector, selections, states)
    return connector, selections, states


def _json(value: PathOrData, what: str) -> Any:
    if isinstance(value, Mapping):
        return value
    return read_json_file(os.fspath(value), what)


def _path(value: str | os.PathLike[str] | None) -> str | None:
    return os.fspath(value) if value is not None else None


class _ApiReporter:
    """The :class:`~framework.cli.progress.Reporter` of a Python sync: events to ``on_progress`` as
    :class:`Progress` values, failures and warnings into the report's notes."""

    def __init__(self, on_progress: Callable[[Progress], None] | None, notes: list[str],
                 clock: Callable[[], float] = time.monotonic):
        self._on_progress = on_progress
        self._notes = notes
        self._clock = clock
        self._planned_at: dict[str, float] = {}
        self.normalization_failed = False

    def started(self, master: str, output: str, format_type: str, spark_seconds: float, *,
                background: bool = False) -> None:
        return None

    def progress(self, event: str, result: StreamResult) -> None:
        now = self._clock()
        if event == "planned":
            self._planned_at[result.name] = now
        kind = {"planned": "planned", "group": "progress", "tick": "progress", "done": "done"}.get(event)
        if kind is None or self._on_progress is None:
            return
        elapsed = result.seconds if kind == "done" else now - self._planned_at.get(result.name, now)
        share, left = estimate(result, elapsed)
        progress = Progress(
            event=kind, stream=result.name, records=result.records, pages=result.pages,  # type: ignore[arg-type]
            partitions_done=result.units_done, partitions=result.units,
            records_per_second=result.records / elapsed if elapsed > 0 else 0.0, fraction_done=share,
            time_left_s=left, error=result.error if kind == "done" else None)
        try:
            self._on_progress(progress)
        except Exception as exc:  # noqa: BLE001 - the caller's callback never breaks the sync
            self._on_progress = None
            self._notes.append(f"on_progress raised {type(exc).__name__}: {exc}; it is not called again in this "
                               "sync (the sync went on)")

    def summary(self, result: PipelineResult, output: str, seconds: float) -> None:
        return None

    def failure(self, error: str, stream: str | None = None) -> None:
        self._notes.append(error if stream is None else f"stream `{stream}`: {error}")

    def normalized(self, outcome: StreamOutcome) -> None:
        if outcome.error:
            self.normalization_failed = True
            self._notes.append(f"normalization of stream `{outcome.stream}` failed: {outcome.error}")

    def warning(self, message: str) -> None:
        self._notes.append(message)


def _saved_states(settings: Any) -> Callable[[str], Mapping[str, Any] | None]:
    """Each stream's state as saved next to the output after the sync."""
    saved = StateStore(storage_for(settings)).load()
    return saved.stream_state


def _report(result: PipelineResult, output: str, format_type: str, seconds: float, notes: Sequence[str], *,
            normalization_failed: bool, states: Callable[[str], Mapping[str, Any] | None]) -> SyncReport:
    streams = tuple(StreamSummary(
        name=s.name, records=s.records, pages=s.pages, partitions=s.units, partitions_done=s.units_done,
        files=tuple(str(f.get("key", "")) for f in s.files), bytes=s.bytes, nulled=s.nulled, seconds=s.seconds,
        state=states(s.name), state_saved=bool(s.state_saved), error=s.error,
        warnings=tuple(signal.line() for signal in s.warnings),
        drift=Drift(policy=s.drift_policy, records=s.drifted, fields=dict(s.undeclared), evolved=dict(s.evolved)),
    ) for s in result.streams)
    return SyncReport(sync_id=result.sync_id, output=output, format=format_type, seconds=seconds, streams=streams,
                      warnings=tuple(notes), normalization_failed=normalization_failed)
