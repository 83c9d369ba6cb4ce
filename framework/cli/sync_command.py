"""The Spark mode of ``run-manifest``: read the streams on Spark and land typed files.

Where files go: ``--destination DEST.json`` (Airbyte's S3 destination config),
else ``--output DIR|s3://bucket/prefix`` (default ``./output``) with
``--format`` (default Parquet). State is kept next to the output, so running
the same command again reads only what changed. Progress, the summary and
failures go to stderr: text for people, JSON lines with ``--log-format json``
(:mod:`framework.cli.progress`).
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from framework.cli.progress import JsonReporter, Reporter, reporter_for
from framework.cli.progress import summary_table as progress_summary_table
from framework.errors import ConfigError, FrameworkError


def destination_settings(args: Any) -> Any:
    from framework.models.destination import DestinationSettings

    if args.destination:
        from framework.manifest.yaml_source import read_document

        doc = read_document(args.destination)
        if doc.problems or not isinstance(doc.data, dict):
            raise ConfigError(f"{args.destination}: not a JSON object; give Airbyte's S3 destination config")
        data = dict(doc.data)
        if args.output:
            data.pop("s3_bucket_name", None)
            data["output"] = args.output
        if args.format:
            data["format"] = {"format_type": _FORMATS[args.format]}
        try:
            return DestinationSettings.model_validate(data)
        except Exception as exc:  # pydantic's error lists every problem
            raise ConfigError(f"{args.destination}: {_plain(exc)}") from None
    data = {"output": args.output or "./output",
            "format": {"format_type": _FORMATS[args.format or "parquet"]}}
    if (args.format or "parquet") == "parquet":
        data["format"]["compression_codec"] = "SNAPPY"
    try:
        return DestinationSettings.model_validate(data)
    except Exception as exc:
        raise ConfigError(f"--output {args.output!r}: {_plain(exc)}") from None


_FORMATS = {"parquet": "Parquet", "avro": "Avro", "csv": "CSV", "jsonl": "JSONL"}


def _plain(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in errors())
    return str(exc)


def run_sync(args: Any, connector: Any, selections: list, states: dict, err: IO[str] | None = None) -> int:
    """Sync ``selections`` on Spark; progress and the summary go to ``err`` (stderr) as
    :mod:`framework.cli.progress` says for ``--quiet`` and ``--log-format``."""
    err = err or sys.stderr
    reporter = reporter_for(err, getattr(args, "log_format", None) or "text", getattr(args, "quiet", False))
    began = time.perf_counter()
    try:
        result, settings = _sync(args, connector, selections, states, reporter)
    except FrameworkError as exc:
        if not isinstance(reporter, JsonReporter):
            raise  # run-manifest prints it as text
        reporter.failure(connector.mask(str(exc)))  # a script reading JSON lines gets JSON lines only
        return 2
    reporter.summary(result, settings.base_uri, time.perf_counter() - began)
    if _normalizes(args, settings) and not result.failed:  # normalization (framework.normalization) runs after a successful sync
        from framework.cli.normalize import normalization_settings
        from framework.normalization.runner import normalize
        from framework.spark.session import spark_session

        done = normalize(spark_session(args.master, full_jit=True), settings, normalization_settings(settings),
                         progress=reporter.normalized)
        return 1 if done.failed else 0
    return 1 if result.failed else 0


def _sync(args: Any, connector: Any, selections: list, states: dict, reporter: Reporter) -> tuple[Any, Any]:
    from framework.spark.pipeline import PipelineOptions, run_pipeline
    from framework.spark.session import spark_session

    if args.sync_mode == "overwrite" and getattr(args, "state", None):
        raise ConfigError("--state cannot be used with --sync-mode overwrite: an overwrite reads everything "
                          "again and replaces the older files; drop --state, or use --sync-mode append")
    settings = destination_settings(args)
    started = time.perf_counter()
    # The session normalizes too when asked: that work runs in the JVM and wants its full JIT.
    spark = spark_session(args.master, full_jit=_normalizes(args, settings))
    reporter.started(spark.sparkContext.master, settings.base_uri, settings.format.format_type,
                     time.perf_counter() - started)
    options = PipelineOptions(sync_mode=args.sync_mode)
    result = run_pipeline(connector, args.manifest, selections, settings, spark, given_states=states or None,
                          options=options, progress=reporter.progress)
    return result, settings


def _normalizes(args: Any, settings: Any) -> bool:
    return bool(getattr(args, "normalize", False) or (settings.normalization and settings.normalization.enabled))


def summary_table(result: Any, settings: Any) -> str:
    """The summary printed at the end of a sync (see :func:`framework.cli.progress.summary_table`)."""
    return progress_summary_table(result, settings.base_uri)


__all__ = ["destination_settings", "run_sync", "summary_table"]
