"""``run-manifest MANIFEST --config CONFIG.json``: run a connector.

Modes:

* default (Spark): read the streams on Spark and land typed files in
  ``--output`` (``./output`` by default) or where ``--destination`` says; state
  is kept next to the output, so the next run is incremental
  (:mod:`framework.cli.sync_command`). A local output is made absolute here,
  on the driver, and refused on a cluster master unless ``--shared-path``
  says every node mounts it; ``--conf key=value`` passes Spark settings
  (:mod:`framework.spark.session`).
* ``--protocol``: read the streams and print Airbyte protocol messages (one
  JSON object per line) on stdout, as Airbyte's ``source-declarative-manifest``
  does. Takes ``--catalog``, ``--state`` and ``--streams``. Never starts Spark.
* ``--check``: print a CONNECTION_STATUS message (reads one page of the
  manifest's check streams).
* ``--discover``: print a CATALOG message with each stream's schema (from the
  schemas alone: nothing is read, no retriever is built;
  :mod:`framework.protocol.discover`).
* ``--spec``: print the SPEC message (no config needed).
* ``--test-read``: read the first pages (``--pages``) of each stream's first
  unit and show the requests, the records and what looks wrong, with the fix
  (:mod:`framework.cli.test_read`). Nothing is written; Spark never starts.

Custom components whose code is shipped with the manifest (``components.py``
beside it, a ``source_<name>/`` package folder) run only with
``--allow-custom-code`` or ``FRAMEWORK_ALLOW_CUSTOM_CODE=true`` (Airbyte's
``AIRBYTE_ENABLE_UNSAFE_CODE=true`` too); refused, the command exits 2 before
anything is read.

When the manifest's ``spec.config_normalization_rules`` migrate the config,
the migrated config is announced (protocol modes: a CONTROL message of type
CONNECTOR_CONFIG, first; Spark mode: a line on stderr) and the ``--config``
file is rewritten atomically, the previous one kept as ``<file>.bak``. A config
the rules' validations reject exits 2 before anything is read.

Exit codes: 0 success; 1 a stream failed (the failure is in a TRACE message
or the summary, and on stderr); 2 bad command line, manifest, config, catalog
or state.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from framework import collector
from framework.cli.lean import lean_start
from framework.cli.response_flags import add_response_flags, apply_response_flags
from framework.cli.termination import exit_code, interruption, terminating_as_interrupt
from framework.cli.version_flag import add_version_flag
from framework.errors import ConfigError, FrameworkError, ManifestError, StorageError

# The framework's modules are imported in the functions that use them, once main has turned the collector off:
# imported here, by the script's ``from framework.cli.run import main``, they were made with the collector on
# (about 120 collections over pydantic's models and the components: some 30 ms of a start). Spark mode,
# --test-read and the JSON log are imported only where they run: protocol mode starts without them.
if TYPE_CHECKING:
    from framework.cli.progress import JsonReporter
    from framework.cli.sync_command import SyncOptions
    from framework.components.config_sink import ConfigSink
    from framework.engine.config_migration import NormalizedConfig


def _json_reporter() -> type[JsonReporter]:
    from framework.cli.progress import JsonReporter

    return JsonReporter


def _conf_pair(text: str) -> tuple[str, str]:
    from framework.cli.settings import conf_pair  # its settings models load only when --conf is given

    return conf_pair(text)


def _drift_flag(text: str) -> tuple[str | None, str]:
    from framework.cli.settings import drift_flag  # its settings models load only when --schema-drift is given

    return drift_flag(text)


def _concurrency(text: str) -> int | str:
    """``--concurrency``'s value: a whole number of at least 1, or ``auto``."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of requests: give a whole number of at least 1 "
                                         "(what the API allows in flight) or `auto`")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="run-manifest", description="Run a connector described by a manifest.")
    add_version_flag(parser)
    parser.add_argument("manifest", metavar="MANIFEST", help="the connector's manifest (YAML)")
    parser.add_argument("--config", metavar="CONFIG.json", help="the connector's config (JSON)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--protocol", action="store_true", help="print Airbyte protocol messages on stdout")
    mode.add_argument("--check", action="store_true", help="check the connection (CONNECTION_STATUS)")
    mode.add_argument("--discover", action="store_true", help="print the catalog (CATALOG)")
    mode.add_argument("--spec", action="store_true", help="print the connector's spec (SPEC)")
    mode.add_argument("--test-read", action="store_true",
                      help="read the first pages of each stream and show the requests, the records and what "
                           "looks wrong (nothing is written; exit 1 when something was found)")
    parser.add_argument("--pages", type=int, default=3, metavar="N", help="pages per stream in --test-read (3)")
    parser.add_argument("--infer-schema", action="store_true",
                        help="with --test-read: infer each stream's schema from the records read, merged into the "
                             "declared one, and show the change as a diff")
    parser.add_argument("--write-schemas", action="store_true",
                        help="with --test-read: as --infer-schema, and write each schema where the stream's schema "
                             "loader reads it (the JSON file, or the inline schema in the manifest; a .bak is kept)")
    parser.add_argument("--catalog", metavar="CATALOG.json", help="configured catalog: streams and sync modes")
    parser.add_argument("--state", metavar="STATE.json", help="state from a previous sync (Airbyte's shapes)")
    parser.add_argument("--streams", metavar="a,b", help="read only these streams")
    parser.add_argument("--concurrency", type=_concurrency, metavar="N|auto",
                        help="the most requests in flight at once, across the whole sync (default: the manifest's "
                             "concurrency_level, else 2 as airbyte-cdk); auto: start at 2 and climb until the API "
                             "answers 429")
    parser.add_argument("--allow-custom-code", action="store_true",
                        help="run the Python code shipped with the manifest (components.py beside it, or its "
                             "source_<name>/ package folder) for its custom components; also "
                             "FRAMEWORK_ALLOW_CUSTOM_CODE=true (or Airbyte's AIRBYTE_ENABLE_UNSAFE_CODE=true)")
    add_response_flags(parser)
    spark = parser.add_argument_group("Spark mode (the default: land typed files)")
    spark.add_argument("--output", metavar="DIR|s3://bucket/prefix", help="where files go (default ./output)")
    spark.add_argument("--format", choices=["parquet", "avro", "csv", "jsonl", "delta", "iceberg"],
                       help="file format (default parquet), or a table per stream with its state in each commit: "
                            "delta (Delta Lake) or iceberg (Apache Iceberg; docs/tables.md)")
    spark.add_argument("--destination", metavar="DEST.json", help="Airbyte S3 destination settings")
    spark.add_argument("--master", metavar="URL", help="Spark master (default local[*], or spark-submit's)")
    spark.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=_conf_pair,
                       help="a Spark setting (repeatable); wins over spark-defaults.conf and PYSPARK_SUBMIT_ARGS")
    spark.add_argument("--shared-path", action="store_true",
                       help="the local --output is a folder every node of the cluster mounts at the same path "
                            "(without it a local --output on a non-local master is refused)")
    spark.add_argument("--remote", metavar="sc://HOST:PORT",
                       help="run on a Spark Connect server (also SPARK_REMOTE); see docs/cluster.md")
    spark.add_argument("--allow-plaintext", action="store_true",
                       help="with --remote: send a config that holds secrets to a Spark Connect server on another "
                            "machine without TLS (refused otherwise; a warning then): only on a private network")
    spark.add_argument("--services-host", metavar="HOST",
                       help="an address of this machine the executors reach: the tasks call the sync's shared "
                            "services (one token, one API budget) there (needed over Spark Connect unless the "
                            "server runs a local master on this machine)")
    spark.add_argument("--sync-mode", choices=["append", "overwrite", "append_dedup"], default=None,
                       help="one mode for every stream: append to earlier files, or replace them once the sync "
                            "succeeds (default per stream, as Airbyte's UI: full refresh overwrites, incremental "
                            "appends; append_dedup is --dedup)")
    spark.add_argument("--dedup", action="store_true",
                       help="incremental streams with a primary key land as append_dedup: normalization keeps "
                            "one row per primary key")
    spark.add_argument("--quiet", action="store_true",
                       help="no progress or summary on stderr: failures and warnings only")
    spark.add_argument("--no-check", action="store_true",
                       help="do not read the check streams' first page before Spark starts (a bad token or "
                            "url_base then fails only once Spark is up)")
    spark.add_argument("--wait-for-spark", action="store_true",
                       help="on a local master, wait for Spark before reading (by default the driver reads the "
                            "first groups itself while Spark starts, and a sync done by then does not wait)")
    spark.add_argument("--wait-for-lock", type=float, default=None, metavar="SECONDS",
                       help="when another sync holds the output, wait up to SECONDS for it (default: stop at once "
                            "with exit 75, naming it); a holder that died is taken over (docs/cluster.md)")
    spark.add_argument("--compact", action="store_true",
                       help="after the sync, merge each Parquet stream's small files (under half of "
                            "file_size_limit_mb) into fewer, larger ones, atomically (destination setting: compact)")
    spark.add_argument("--normalize", action="store_true",
                       help="normalize the landed records into typed tables after a successful sync")
    spark.add_argument("--normalized-output", metavar="DIR|s3://bucket/prefix",
                       help="where --normalize puts Parquet tables, outside --output (default: <output>_normalized)")
    spark.add_argument("--schema-drift", action="append", default=[], metavar="[STREAM=]POLICY", type=_drift_flag,
                       help="fields the schema does not declare: drop (default, counted), keep (as JSON text in "
                            "_airbyte_additional_properties) or evolve (typed columns); STREAM=POLICY for one "
                            "stream; repeatable")
    spark.add_argument("--log-format", choices=["text", "json"], default="text",
                       help="stderr as text for people, or one JSON object per line for scripts "
                            "(see framework/cli/progress.py); protocol mode ignores it")
    return parser


def main(argv: Sequence[str] | None = None, out: IO[bytes] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if (args.infer_schema or args.write_schemas) and not args.test_read:
        parser.error("--infer-schema and --write-schemas infer from a test read: add --test-read")
    apply_response_flags(args)
    out = out if out is not None else sys.stdout.buffer

    # A script that asked for JSON lines on stderr gets them for bad input too (Spark mode only: protocol
    # mode reports on stdout).
    json_errors = args.log_format == "json" and not (args.protocol or args.check or args.discover or args.spec)
    # Start-up (loading, checking and building the connector) makes many objects and little garbage: the
    # collector is off until the connector is built (see _run and framework.cli.lean). As the program, every
    # mode ends with the collector off and the heap frozen: the interpreter's last collection walked the whole
    # heap again, pydantic's validators included (0.1 to 0.3 s after a protocol read, 0.3 s after a
    # 200,000-record Spark sync).
    with lean_start(program=argv is None) as collecting, terminating_as_interrupt():
        return _reported(args, out, json_errors, collecting)


def _reported(args: argparse.Namespace, out: IO[bytes], json_errors: bool, collecting: bool) -> int:
    """The run, its failures reported as the command line shows them; the exit code."""
    from framework.cli.retry_log import showing_retries

    try:
        with showing_retries("run-manifest", as_json=json_errors):
            return _run(args, out, collecting)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM and SIGHUP (framework.cli.termination)
        _interrupted(args, json_errors, interruption(exc))
        return exit_code(exc)
    except ManifestError as exc:
        problems = [p for p in exc.diagnostics if p.severity == "error"]
        if json_errors:
            for problem in problems:
                _json_reporter()(sys.stderr).failure(problem.format())
        else:
            for problem in problems:
                print(problem.format(), file=sys.stderr)
        return 2
    except FrameworkError as exc:
        if json_errors:
            _json_reporter()(sys.stderr).failure(str(exc))
        else:
            print(f"run-manifest: {exc}", file=sys.stderr)
        return _exit_code(exc)


def _exit_code(exc: FrameworkError) -> int:
    """2 for bad input; 1 for a failed run (a full disk); 75 (EX_TEMPFAIL) when another sync holds the output."""
    from framework.storage.lease import EXIT_BUSY, OutputBusy

    if isinstance(exc, OutputBusy):
        return EXIT_BUSY
    return 1 if isinstance(exc, StorageError) else 2


def _interrupted(args: argparse.Namespace, json_errors: bool, what: str = "interrupted") -> None:
    """One line for Ctrl-C (or SIGTERM, SIGHUP: ``what``): what is kept, and that running again continues."""
    protocol = args.protocol or args.check or args.discover or args.spec or args.test_read
    text = (f"{what}; the last state printed is where the next run resumes (records it does not cover are read "
            "again)" if protocol else
            f"{what}; the files and state saved so far are complete (no partial file is visible), and running "
            "the same command again continues from the saved state")
    if json_errors:
        _json_reporter()(sys.stderr).failure(text)
    else:
        print(f"run-manifest: {text}", file=sys.stderr)


def _run(args: argparse.Namespace, out: IO[bytes], collecting: bool = True) -> int:
    from framework.engine.connector import airbyte_spec, open_connector
    from framework.engine.selection import parse_state, read_json_file, select_streams
    from framework.manifest import load_manifest
    from framework.manifest.config_check import read_config_file
    from framework.protocol import messages
    from framework.protocol.read import check_states, read  # --check and --discover import theirs below

    if args.spec:
        # No config is needed for the spec: the manifest is read, nothing is built.
        out.write(messages.encode(messages.spec(airbyte_spec(load_manifest(args.manifest))
                                                or {"connectionSpecification": {}})))
        return 0
    if not args.config:
        print("run-manifest: --config CONFIG.json is required (only --spec works without one)", file=sys.stderr)
        return 2
    try:
        config_file = read_config_file(args.config)  # read once: a pipe or /dev/stdin works
        config = config_file.data
        if args.discover:  # from the schemas alone: no stream is built to be read
            from framework.protocol.discover import discover

            entries = discover(args.manifest, config, config_path=config_file,
                               allow_custom_code=True if args.allow_custom_code else None,
                               on_config=lambda found: _announce(args, found, out))
            out.write(messages.encode(messages.catalog(entries)))
            return 0
        recorder = None
        if args.test_read:
            from framework.components.http.transport import RequestsTransport
            from framework.engine.test_read import RecordingTransport

            recorder = RecordingTransport(RequestsTransport())
        sink = _config_sink(args, config, out)

        def on_config(found: NormalizedConfig) -> None:
            _announce(args, found, out)
            if found.migrated_changed:  # the config that rotated tokens are saved into
                sink.rebase(found.migrated)

        connector = open_connector(args.manifest, config, config_path=config_file, transport=recorder,
                                   allow_custom_code=True if args.allow_custom_code else None,
                                   on_config=on_config, config_sink=sink)
    except ConfigError as exc:
        if args.check:  # Airbyte reads a failed check from CONNECTION_STATUS, whatever the exit code
            out.write(messages.encode(messages.connection_status(False, str(exc))))
        raise
    if collecting:  # built: reading makes garbage (cycles in HTTP responses, say), so the collector runs again
        # What start-up made lives as long as the run: frozen first (framework.collector.on_after_start);
        # lean_start thaws it for a caller that goes on.
        collector.on_after_start()
    if args.check:
        from framework.protocol.check import check_connection

        ok, message = check_connection(connector)
        out.write(messages.encode(messages.connection_status(ok, message)))
        if not ok:  # protocol consumers read the message; `--check && run-manifest ...` must stop here
            print(f"run-manifest: the connection check failed: {message}", file=sys.stderr)
        return 0 if ok else 1
    catalog = read_json_file(args.catalog, "catalog") if args.catalog else None
    states = parse_state(read_json_file(args.state, "state")) if args.state else {}
    names = [n.strip() for n in args.streams.split(",") if n.strip()] if args.streams else None
    selections = select_streams(connector.streams, catalog, names)
    if not selections:
        where = f"the catalog {args.catalog}" if catalog is not None else "--streams"
        note = (f"nothing to read: {where} selects no stream of the manifest ({', '.join(connector.streams)}); "
                "add the streams to read")
        print(f"run-manifest: warning: {note}", file=sys.stderr)
        if args.protocol:
            out.write(messages.encode(messages.log(note, "WARN")))
        return 0
    connector = connector.with_catalog(catalog)
    if recorder is not None:
        if args.pages < 1:
            raise ConfigError(f"--pages is {args.pages}; give 1 or more")
        recorder.mask = connector.mask
        from framework.cli.test_read import show as show_test_read
        from framework.engine.test_read import test_read

        text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
        try:
            reads = test_read(connector, recorder, selections, pages=args.pages)
            code = show_test_read(reads, text, limit=connector.in_flight_limit(args.concurrency))
            if args.infer_schema or args.write_schemas:
                from framework.cli.schema_writing import infer_schemas

                print(file=text)
                infer_schemas(connector, args.manifest, reads, text, write=args.write_schemas)
            return code
        finally:
            text.detach()
    check_states(connector, selections, states)
    if not args.protocol:
        from framework.cli.sync_command import run_sync
        from framework.sync_modes import with_destination_modes

        selections = with_destination_modes(selections, connector.streams, catalog, forced=args.sync_mode,
                                            dedup=args.dedup)
        return run_sync(_sync_options(args), connector, selections, states)
    if out is sys.stdout.buffer:  # a consumer's pipe: room for a few pages (framework.protocol.pipe)
        from framework.protocol.pipe import widen

        widen(out.fileno())
    report = read(connector, selections, states, out, concurrency=args.concurrency)
    return 1 if report.failed else 0


def _config_sink(args: argparse.Namespace, config: dict[str, Any], out: IO[bytes]) -> ConfigSink:
    """Where a config changed during the run (rotated OAuth tokens) is saved: protocol modes print a CONTROL
    message; Spark mode rewrites the --config file (with a backup) and says so on stderr."""
    from framework.engine.config_sink import config_file_sink
    from framework.protocol.control import control_message_sink

    if args.protocol or args.check:
        return control_message_sink(config, out)

    def say(text: str) -> None:
        if args.log_format == "json":
            _json_reporter()(sys.stderr).config_saved(args.config, f"{args.config}.bak", "oauth_tokens_rotated")
        else:
            print(f"run-manifest: {text}", file=sys.stderr)

    return config_file_sink(config, args.config, say)


def _announce(args: argparse.Namespace, normalized: NormalizedConfig, out: IO[bytes]) -> None:
    """Say that the manifest's config migrations changed the config, and save it (as airbyte-cdk does).

    Protocol modes print Airbyte's CONTROL message (CONNECTOR_CONFIG) first; the config file is then
    rewritten atomically with a backup (in protocol modes a file that cannot be written is only logged,
    the platform keeps the CONTROL message's config). Spark mode says it on stderr.
    """
    from framework.engine.config_migration import describe_rewrite, rewrite_config_file
    from framework.protocol import messages
    from framework.protocol.control import control_message

    if not normalized.migrated_changed:
        return
    protocol = args.protocol or args.check or args.discover
    if protocol:
        out.write(messages.encode(control_message(normalized.migrated, time.time() * 1000)))
    try:
        backup = rewrite_config_file(args.config, normalized.migrated)
    except OSError as exc:
        text = f"the config migrations changed the config, but {args.config} could not be rewritten: {exc}"
        if protocol:
            out.write(messages.encode(messages.log(text, "WARN")))
        elif args.log_format == "json":
            _json_reporter()(sys.stderr).config_migrated(args.config, None, text)
        else:
            print(f"run-manifest: warning: {text}; the migrated config is used for this run", file=sys.stderr)
        return
    if protocol:
        out.write(messages.encode(messages.log(describe_rewrite(args.config, backup))))
    elif args.log_format == "json":
        _json_reporter()(sys.stderr).config_migrated(args.config, backup)
    else:
        print(f"run-manifest: {describe_rewrite(args.config, backup)}", file=sys.stderr)


def _sync_options(args: argparse.Namespace) -> SyncOptions:
    from framework.cli.sync_command import SyncOptions

    return SyncOptions(manifest=args.manifest, destination=args.destination, output=args.output, format=args.format,
                       master=args.master, remote=args.remote, services_host=args.services_host,
                       allow_plaintext=args.allow_plaintext,
                       sync_mode=args.sync_mode, given_state=bool(args.state),
                       normalize=args.normalize, normalized_output=args.normalized_output, quiet=args.quiet,
                       log_format=args.log_format,
                       check_first=not args.no_check, conf=tuple(args.conf), shared_path=args.shared_path,
                       early_reads=not args.wait_for_spark, concurrency=args.concurrency,
                       compact=args.compact, wait_for_lock=args.wait_for_lock,
                       schema_drift=tuple(args.schema_drift))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
