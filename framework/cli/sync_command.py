"""The Spark mode of ``run-manifest``: read the streams on Spark and land typed files.

Where files go: ``--destination DEST.json`` (Airbyte's S3 destination config),
else ``--output DIR|s3://bucket/prefix`` (default ``./output``) with
``--format`` (default Parquet). State is kept next to the output, so running
the same command again reads only what changed.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from framework.errors import ConfigError


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
    from framework.sink.pipeline import PipelineOptions, run_pipeline
    from framework.sink.spark import spark_session

    err = err or sys.stderr
    if args.sync_mode == "overwrite" and getattr(args, "state", None):
        raise ConfigError("--state cannot be used with --sync-mode overwrite: an overwrite reads everything "
                          "again and replaces the older files; drop --state, or use --sync-mode append")
    settings = destination_settings(args)
    quiet = getattr(args, "quiet", False)
    started = time.perf_counter()
    spark = spark_session(args.master)
    spark_seconds = time.perf_counter() - started
    if not quiet:
        print(f"Spark ready in {spark_seconds:.1f} s ({spark.sparkContext.master}); "
              f"writing {settings.format.format_type} to {settings.base_uri}", file=err)

    def progress(event: str, result: Any) -> None:
        if quiet:
            return
        if event == "planned":
            print(f"  {result.name}: {result.units} partition(s) planned", file=err)
        elif event == "done":
            rate = result.records / result.seconds if result.seconds else 0.0
            status = f"FAILED: {result.error}" if result.error else "ok"
            print(f"  {result.name}: {result.records} records, {len(result.files)} file(s), "
                  f"{result.units_done}/{result.units} partitions, {rate:,.0f} records/s, {status}", file=err)

    options = PipelineOptions(sync_mode=args.sync_mode)
    result = run_pipeline(connector, args.manifest, selections, settings, spark, given_states=states or None,
                          options=options, progress=progress)
    if not quiet:
        print(summary_table(result, settings), file=err)
    else:  # quiet hides progress, not failures
        for failed in (s for s in result.streams if s.error):
            print(f"run-manifest: stream `{failed.name}` failed: {failed.error}", file=err)
    return 1 if result.failed else 0


def summary_table(result: Any, settings: Any) -> str:
    rows = [("stream", "records", "files", "bytes", "nulled", "state", "seconds")]
    for s in result.streams:
        state = "not saved" if not s.state_saved else "partial" if s.error else "saved"
        rows.append((s.name, str(s.records), str(len(s.files)), str(s.bytes), str(s.nulled), state,
                     f"{s.seconds:.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(f"sync {result.sync_id} -> {settings.base_uri}")
    return "\n".join(lines)


__all__ = ["destination_settings", "run_sync", "summary_table"]
