"""``normalize-output``: normalize what is already landed in an output, again or for the first time.

Reads the landed catalog (``_airbyte_state/catalog.json``) and files of
``--output DIR|s3://bucket/prefix`` (or of ``--destination DEST.json``, whose
``normalization`` settings apply), and writes typed tables to the target:
Parquet in ``<output>_normalized/<table>/`` by default (``--normalized-output``
elsewhere; never under the output: :mod:`framework.normalization.root`).
Incremental unless ``--full-refresh``. Each stream keeps the mode it landed with (full refresh
overwrites, incremental appends: :mod:`framework.sync_modes`); ``--sync-mode``
forces one, ``--dedup`` dedups incremental streams with a primary key.
``--conf key=value`` passes Spark settings; a local output on a cluster master
needs ``--shared-path``, as for ``run-manifest``.
Exit codes: 0 success, 1 a stream failed, 2 bad command line or settings.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import IO

from framework.cli.progress import normalized_line
from framework.cli.settings import check_shared_output, conf_pair, destination_settings, normalization_settings
from framework.cli.termination import exit_code, interruption, terminating_as_interrupt
from framework.cli.version_flag import add_version_flag
from framework.errors import ConfigError, FrameworkError
from framework.normalization.root import normalized_root
from framework.spark import require_spark_extra
from framework.sync_modes import check_forced


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="normalize-output",
                                     description="Turn landed raw records into typed, un-nested tables.")
    add_version_flag(parser)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--output", metavar="DIR|s3://bucket/prefix", help="the output a sync landed files in")
    where.add_argument("--destination", metavar="DEST.json", help="the destination settings the sync used")
    parser.add_argument("--full-refresh", action="store_true", help="rebuild every table from all landed rows")
    parser.add_argument("--streams", metavar="a,b", help="normalize only these streams")
    parser.add_argument("--sync-mode", choices=["append", "overwrite", "append_dedup"], default=None,
                        help="one mode for every stream (default per stream: the mode it landed with, else "
                             "full refresh overwrites and incremental appends; append_dedup is --dedup)")
    parser.add_argument("--dedup", action="store_true",
                        help="incremental streams with a primary key keep one row per key (append_dedup)")
    parser.add_argument("--target", choices=["parquet", "postgres"],
                        help="where tables go (default: the destination's normalization settings, else parquet)")
    parser.add_argument("--dialect", help="naming dialect (default: the target's)")
    parser.add_argument("--normalized-output", metavar="DIR|s3://bucket/prefix",
                        help="where Parquet tables go, outside the output (default: <output>_normalized beside it)")
    parser.add_argument("--master", metavar="URL", help="Spark master (default local[*], or spark-submit's)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=conf_pair,
                        help="a Spark setting (repeatable); wins over spark-defaults.conf and PYSPARK_SUBMIT_ARGS")
    parser.add_argument("--shared-path", action="store_true",
                        help="the local --output is a folder every node mounts at the same path")
    parser.add_argument("--remote", metavar="sc://HOST:PORT",
                        help="run on a Spark Connect server (also SPARK_REMOTE); see docs/cluster.md")
    parser.add_argument("--allow-plaintext", action="store_true",
                        help="with --remote: send a destination that holds keys or a password to a Spark Connect "
                             "server on another machine without TLS (refused otherwise; a warning then)")
    parser.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    return parser


def main(argv: Sequence[str] | None = None, err: IO[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    err = err or sys.stderr
    try:
        with terminating_as_interrupt():
            return run(args, err)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP (framework.cli.termination)
        print(f"normalize-output: {interruption(exc)}; a stream's tables are published all at once or not at all, "
              "so a stream not finished keeps its previous tables, and running the same command again "
              "normalizes it", file=err)
        return exit_code(exc)
    except FrameworkError as exc:
        print(f"normalize-output: {exc}", file=err)
        return 2


def run(args: argparse.Namespace, err: IO[str]) -> int:
    require_spark_extra("normalize-output")
    from framework.cli.connect_secrets import check_connect_channel, destination_secrets
    from framework.normalization.runner import normalize
    from framework.spark.connect import remote_url
    from framework.spark.session import known_master, spark_session

    destination = destination_settings(args.destination, args.output)
    if destination.format.format_type in ("delta", "iceberg"):  # before Spark starts (docs/tables.md)
        raise ConfigError(f"{args.destination or args.output}: the output is `{destination.format.format_type}` "
                          "tables; normalize-output reads landed files and does not read tables yet: query the "
                          "tables themselves, or land Parquet (--format parquet) to normalize")
    settings = normalization_settings(destination, args.target, args.dialect, args.normalized_output)
    dedup = args.dedup or args.sync_mode == "append_dedup"
    if args.sync_mode in ("append", "overwrite"):
        settings = settings.model_copy(update={"destination_sync_mode": args.sync_mode})
    check_forced(settings.destination_sync_mode, dedup)  # before Spark starts
    # where the tables go, and a root that cannot be (inside the output, a whole bucket's) refused before Spark
    into = f"parquet at {normalized_root(destination, settings)}" if settings.target == "parquet" else settings.target
    streams = [s.strip() for s in args.streams.split(",") if s.strip()] if args.streams else None
    started = time.perf_counter()
    conf = dict(args.conf)
    check_shared_output(destination, known_master(args.master, conf), args.shared_path)
    url = remote_url(args.remote, args.master)
    if url:  # the destination's keys and the database's password would travel with the plans
        check_connect_channel(url, destination_secrets(destination, settings), allow_plaintext=args.allow_plaintext,
                              warn=lambda text: print(f"normalize-output: warning: {text}", file=err))
    spark = spark_session(args.master, app_name="normalize-output", full_jit=True,
                          jdbc=settings.target == "postgres", remote=args.remote, **conf)
    check_shared_output(destination, spark.conf.get("spark.master", None), args.shared_path)
    if not args.quiet:
        print(f"Spark ready in {time.perf_counter() - started:.1f} s; normalizing {destination.base_uri} "
              f"into {into} ({'full refresh' if args.full_refresh else 'incremental'})", file=err)
    result = normalize(spark, destination, settings, streams=streams, full_refresh=args.full_refresh, dedup=dedup,
                       progress=None if args.quiet else lambda outcome: print(f"  {normalized_line(outcome)}",
                                                                             file=err))
    if args.quiet:
        for failed in (s for s in result.streams if s.error):
            print(f"normalize-output: stream `{failed.stream}` failed: {failed.error}", file=err)
    return 1 if result.failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
