"""The Spark mode of ``run-manifest``: read the streams on Spark and land typed files.

Where files go: ``--destination DEST.json`` (Airbyte's S3 destination config),
else ``--output DIR|s3://bucket/prefix`` (default ``./output``) with
``--format`` (default Parquet). State is kept next to the output, so running
the same command again reads only what changed. Progress, the summary and
failures go to stderr: text for people, JSON lines with ``--log-format json``
(:mod:`framework.cli.progress`).

pyspark is imported only once a sync starts, so the other modes of
``run-manifest`` never load it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, Literal

from msgspec import Struct

from framework.cli.progress import JsonReporter, Reporter, reporter_for
from framework.cli.settings import (
    FormatName,
    check_shared_output,
    destination_settings,
    normalization_settings,
    with_schema_drift,
)
from framework.errors import ConfigError, FrameworkError
from framework.models.destination import DestinationSettings
from framework.output_names import check_stream_folders
from framework.storage.layout import stream_folders
from framework.storage.local import LocalStorage
from framework.tables.factory import is_table_format

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.engine.connector import Connector
    from framework.engine.selection import Selection
    from framework.spark.pipeline import PipelineResult
    from framework.spark.session import SessionStart


class SyncOptions(Struct, frozen=True):
    """What a Spark-mode ``run-manifest`` was asked to do (its flags, parsed)."""

    manifest: str  # the manifest's path (executors read it)
    destination: str | None = None  # --destination DEST.json
    output: str | None = None  # --output
    format: FormatName | None = None  # --format
    master: str | None = None  # --master: Spark's master URL
    remote: str | None = None  # --remote: a Spark Connect server (sc://host:port); SPARK_REMOTE too
    services_host: str | None = None  # --services-host: where the tasks reach this process's sync-wide services
    allow_plaintext: bool = False  # --allow-plaintext: secrets may go to a Connect server without TLS (a warning)
    sync_mode: Literal["append", "overwrite", "append_dedup"] | None = None  # --sync-mode (None: per stream)
    given_state: bool = False  # --state was given (its states come to run_sync as ``states``)
    normalize: bool = False  # --normalize
    normalized_output: str | None = None  # --normalized-output: the Parquet tables' root (framework.normalization.root)
    check_first: bool = True  # read the check streams' first page before Spark starts (--no-check: don't)
    quiet: bool = False
    log_format: Literal["text", "json"] = "text"
    conf: tuple[tuple[str, str], ...] = ()  # --conf key=value, in order (a later key wins)
    shared_path: bool = False  # --shared-path: a local --output every node mounts at the same path
    early_reads: bool = True  # a local master starts in the background while the driver reads (--wait-for-spark: no)
    concurrency: int | str | None = None  # --concurrency: the most requests in flight (a number or "auto")
    compact: bool = False  # --compact: merge each stream's small files after its sync
    schema_drift: tuple[tuple[str | None, str], ...] = ()  # --schema-drift [STREAM=]POLICY, in order
    wait_for_lock: float | None = None  # --wait-for-lock: seconds to wait for a sync holding the output


def run_sync(options: SyncOptions, connector: Connector, selections: Sequence[Selection],
             states: Mapping[str, Any], err: IO[str] | None = None) -> int:
    """Sync ``selections`` on Spark; progress and the summary go to ``err`` (stderr) as
    :mod:`framework.cli.progress` says for ``--quiet`` and ``--log-format``."""
    err = err or sys.stderr
    reporter = reporter_for(err, options.log_format, options.quiet)
    try:
        return sync_selections(options, connector, selections, states, reporter).exit_code
    except CheckFailed as exc:  # the API refused before Spark started: a failed sync, not bad input
        reporter.failure(connector.mask(str(exc)))
        return 1
    except FrameworkError as exc:
        if not isinstance(reporter, JsonReporter):
            raise  # run-manifest prints it as text
        reporter.failure(connector.mask(str(exc)))  # a script reading JSON lines gets JSON lines only
        from framework.storage.lease import EXIT_BUSY, OutputBusy

        return EXIT_BUSY if isinstance(exc, OutputBusy) else 2


class SyncDone(Struct, frozen=True):
    """What :func:`sync_selections` did: the pipeline's result, the destination it wrote, the exit code (0, or 1
    when a stream or its normalization failed) and the seconds it took."""

    result: PipelineResult
    settings: DestinationSettings
    exit_code: int
    seconds: float


def sync_selections(options: SyncOptions, connector: Connector, selections: Sequence[Selection],
                    states: Mapping[str, Any], reporter: Reporter, *,
                    session: SparkSession | None = None) -> SyncDone:
    """The one Spark-mode sync: ``run-manifest`` and :func:`framework.sync` both run it.

    Checks the destination and the connection before Spark starts, starts (or takes ``session``), runs the
    pipeline, tells ``reporter`` everything (its summary too), then normalizes when asked. Raises the
    framework's errors for bad input (:class:`CheckFailed` when the connection check failed)."""
    began = time.perf_counter()
    starting: list[SessionStart] = []  # the session starting in the background, if any (see _sync)
    try:
        result, settings = _sync(options, connector, selections, states, reporter, starting, session)
    except BaseException:
        _abandon(starting)
        raise
    seconds = time.perf_counter() - began
    reporter.summary(result, settings.base_uri, seconds)
    if session is None:
        _class_archive_for_next(options, starting)
    if _normalizes(options, settings) and not result.failed:  # normalization runs after a successful sync
        from framework.normalization.runner import normalize
        from framework.spark.session import spark_session

        target = normalization_settings(settings, output=options.normalized_output)
        spark = session if session is not None else starting[0].session() if starting else spark_session(
            options.master, full_jit=True, jdbc=target.target == "postgres", remote=options.remote,
            **dict(options.conf))
        done = normalize(spark, settings, target, progress=reporter.normalized)
        return SyncDone(result, settings, 1 if done.failed else 0, time.perf_counter() - began)
    # everything was read before Spark was ready for groups: it is not waited for, nor stopped in order
    _abandon(starting, unused=not any(stream.spark_ready_at for stream in result.streams))
    return SyncDone(result, settings, 1 if result.failed else 0, seconds)


def _class_archive_for_next(options: SyncOptions, starting: Sequence[SessionStart]) -> None:
    """A local driver JVM started without a class-data archive of Spark's classes: one is made in the
    background for the next sync (framework.spark.class_archive), which starts its JVM quicker."""
    from framework.spark.connect import remote_url
    from framework.spark.session import session_plan

    if remote_url(options.remote, options.master) or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    plan = starting[0].plan if starting else session_plan(options.master, dict(options.conf))
    if not plan.local or plan.archive is not None:
        return
    from framework.spark.class_archive import build_in_background, class_archive

    archive = class_archive()
    if archive is not None:
        build_in_background(archive)


def _abandon(starting: Sequence[SessionStart], unused: bool = False) -> None:
    """Stop a session still starting (quietly); one that is up stays for the process's end, as before, unless
    ``unused`` (no group of the sync went to it): its JVM is then killed as quietly, sparing its orderly stop,
    which holds the command's stdout open 0.4 to 1.3 s past its exit (a pipe's reader waits for that)."""
    for start in starting:
        if not start.future.done() or (unused and start.future.exception() is None):
            start.abandon()


def _sync(options: SyncOptions, connector: Connector, selections: Sequence[Selection], states: Mapping[str, Any],
          reporter: Reporter, starting: list[SessionStart],
          session: SparkSession | None = None) -> tuple[PipelineResult, DestinationSettings]:
    from framework.spark import require_spark_extra

    require_spark_extra()  # before anything else: the fix, not an ImportError
    if not connector.runs_own_code:  # only the framework's code here: pyarrow need not import pandas
        from framework.typed.pandas_lookup import settle_without_pandas

        settle_without_pandas()
    from framework.spark.connect import describe, remote_url
    from framework.spark.pause import LAUNCH_HOLD_S
    from framework.spark.pipeline import PipelineOptions, run_pipeline
    from framework.spark.session import SessionStart, known_master, quiet_conf, spark_session

    if options.sync_mode == "overwrite" and options.given_state:
        raise ConfigError("--state cannot be used with --sync-mode overwrite: an overwrite reads everything "
                          "again and replaces the older files; drop --state, or use --sync-mode append")
    settings = destination_settings(options.destination, options.output, options.format)  # resolved here
    check_stream_folders(stream_folders(settings, [s.name for s in selections]))  # before Spark starts
    settings = with_schema_drift(settings, options.schema_drift, connector.streams)
    conf = quiet_conf(dict(options.conf), options.quiet)  # --quiet under spark-submit: Spark's INFO lines too
    check_shared_output(settings, known_master(options.master, conf), options.shared_path)  # before Spark starts
    if settings.target == "local":  # before Spark starts: a folder that cannot take files fails at once
        LocalStorage(settings.base_uri).check_writable()
    # The session normalizes too when asked: that work runs in the JVM and wants its full JIT.
    normalizes = _normalizes(options, settings)
    if is_table_format(settings):  # before Spark starts and before any request (framework.tables.preflight)
        _check_tables(settings, connector, selections, options, normalizes)
    postgres = normalizes and normalization_settings(settings).target == "postgres"
    if normalizes and not postgres:  # the tables' root, outside the output: refused now rather than after the sync
        from framework.normalization.root import normalized_root

        normalized_root(settings, normalization_settings(settings, output=options.normalized_output))
    url = remote_url(options.remote, options.master)
    if url:  # before any request: no plaintext channel to another machine's Connect server for secrets
        from framework.cli.connect_secrets import check_connect_channel, sync_secrets

        check_connect_channel(url, sync_secrets(connector, settings), allow_plaintext=options.allow_plaintext,
                              warn=_warner(reporter))
    started = time.perf_counter()
    spark: SparkSession | SessionStart
    if session is not None:  # the caller's session (framework.sync(spark=...)): used as it is
        if options.check_first:
            _check_first(connector)
        spark = session
        check_shared_output(settings, spark.conf.get("spark.master", None), options.shared_path)
        reporter.started(describe(spark), settings.base_uri, settings.format.format_type, 0.0)
    elif _starts_early(options, conf):
        # A local session starts in the background (about 6 s on 2 cores) while the check runs and the driver
        # reads the first groups itself (framework.spark.scheduling); the JVM is stopped if never needed.
        # Held a moment first (framework.spark.pause), unless the run normalizes and so needs it whatever comes.
        spark = SessionStart(options.master, full_jit=normalizes, jdbc=postgres,
                             hold=0.0 if normalizes else LAUNCH_HOLD_S, **conf)
        starting.append(spark)
        if options.check_first:
            _check_first(connector)
        reporter.started(spark.plan.master or "local[*]", settings.base_uri, settings.format.format_type,
                         time.perf_counter() - started, background=True)
    else:
        if options.check_first:  # a bad token or a wrong url_base fails in a second, not after Spark's start
            _check_first(connector)
        started = time.perf_counter()
        spark = spark_session(options.master, full_jit=normalizes, jdbc=postgres, remote=options.remote, **conf)
        # under spark-submit (or a master from the settings) the session knows it first: still before any request
        check_shared_output(settings, spark.conf.get("spark.master", None), options.shared_path)
        reporter.started(describe(spark), settings.base_uri, settings.format.format_type,
                         time.perf_counter() - started)
    result = run_pipeline(connector, options.manifest, selections, settings, spark, given_states=states or None,
                          options=PipelineOptions(sync_mode=options.sync_mode or "append",
                                                  services_host=options.services_host,
                                                  driver_reads=options.early_reads,
                                                  concurrency=options.concurrency, compact=options.compact,
                                                  wait_for_lock=options.wait_for_lock),
                          progress=reporter.progress, warn=_warner(reporter))
    _spark_did_not_start(starting, result, _warner(reporter))
    return result, settings


def _spark_did_not_start(starting: Sequence[SessionStart], result: PipelineResult,
                         warn: Callable[[str], None]) -> None:
    """A session that failed to start while the driver read every group: the sync is complete and stands
    (exit 0; a retry would read nothing new), but the next, larger sync would fail, so the user is told
    once, with the reason and the fix. A stream that needed Spark has failed with that message already."""
    error = next((s.future.exception() for s in starting if s.future.done() and s.future.exception()), None)
    if error is None or any(s.error and str(error) in s.error for s in result.streams):
        return
    warn(f"{error}. This sync is complete: the driver read every group itself while Spark was starting; a "
         "sync too large for that needs Spark")


def _starts_early(options: SyncOptions, conf: Mapping[str, str]) -> bool:
    """Whether the session starts in the background: a classic local master that this process starts itself
    (not Spark Connect, not under spark-submit, whose JVM is up already), unless --wait-for-spark."""
    from framework.spark.connect import remote_url
    from framework.spark.session import session_plan

    if not options.early_reads or remote_url(options.remote, options.master) or "PYSPARK_GATEWAY_PORT" in os.environ:
        return False
    return session_plan(options.master, conf).local


class CheckFailed(FrameworkError):
    """The connection check that runs before Spark starts failed."""


def _check_first(connector: Connector) -> None:
    """Read the first page of the check streams that take one request (no parent stream to read first, not
    read through airbyte-cdk); raise :class:`CheckFailed` when one fails."""
    from framework.protocol.check import check_connection

    try:
        names = [name for name in connector.check_streams if name in connector.streams  # (validate-manifest warns)
                 and connector.stream(name).router is None and connector.stream(name).bridge is None]
    except FrameworkError:
        return  # the sync reports it, with its context
    if not names:
        return
    ok, message = check_connection(connector, names)
    if not ok:
        raise CheckFailed(f"the connection check failed, so nothing was read: {message} (run-manifest --check "
                          "tells the same; --no-check skips it)")


def _warner(reporter: Reporter) -> Callable[[str], None]:
    """How a warning reaches the user: a ``warning`` event in JSON lines, else a line on stderr (even quiet)."""

    def warn(text: str) -> None:
        warning = getattr(reporter, "warning", None)  # the JSON log's, and framework.sync's
        if warning is not None:
            warning(text)
        else:
            err = getattr(reporter, "err", sys.stderr)
            err.write(f"run-manifest: warning: {text}\n")
            err.flush()

    return warn


def _check_tables(settings: DestinationSettings, connector: Connector, selections: Sequence[Selection],
                  options: SyncOptions, normalizes: bool) -> None:
    """Each stream's table can take its records (framework.tables.preflight), else a ConfigError (exit 2)."""
    from framework.storage import storage_for
    from framework.tables.columns import stored_schema
    from framework.tables.factory import open_table, table_key
    from framework.tables.preflight import check_table
    from framework.typed import RecordConverter, parse_schema

    fmt = settings.format.format_type
    if normalizes:
        raise ConfigError(f"--normalize (or `normalization.enabled`) with the `{fmt}` format is not done yet: "
                          "normalization reads the landed files, not tables; run without --normalize, or land "
                          "Parquet (--format parquet) to normalize")
    setting = "--output" if options.output or not options.destination else f"{options.destination}'s location"
    storage = storage_for(settings)
    for selection in selections:
        stream = connector.stream(selection.name)
        converter = RecordConverter(parse_schema(stream.json_schema, stream=stream.name), stream=stream.name)
        table = open_table(settings, stream.name)
        # the data folder's files are this framework's own (a sync killed before its table's first commit left
        # them: orphans, removed later); anything else beside them is another format's
        folder = table_key(stream.name) + "/"
        holds = any(not info.key.startswith(folder + "data/")
                    for info in storage.list(folder, with_metadata=False)) if not _exists(table, setting) else False
        check_table(table, stored_schema(converter.schema, fmt), stream=stream.name, format_name=fmt,
                    setting=setting, holds_files=holds,
                    key_columns=[path[0] for path in stream.primary_key if path])


def _exists(table: Any, setting: str) -> bool:
    """Whether the table is there; a place that cannot be read is bad input naming the setting."""
    try:
        return bool(table.exists())
    except FrameworkError as exc:
        raise ConfigError(f"{exc} (from {setting})") from None


def _normalizes(options: SyncOptions, settings: DestinationSettings) -> bool:
    return options.normalize or bool(settings.normalization and settings.normalization.enabled)


__all__ = ["CheckFailed", "SyncDone", "SyncOptions", "run_sync", "sync_selections"]
