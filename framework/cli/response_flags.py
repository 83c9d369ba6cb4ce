"""run-manifest's ``--max-response-size`` and ``--request-deadline``: the cap on one response body and the
deadline of one request attempt (:mod:`framework.components.http.response_limits`) for every requester
whose manifest does not set its own.

The flags are handed on as environment variables, set before any worker starts, so a local master's Python
workers and every requester built anywhere in the sync read the same values. On a cluster whose executors do
not inherit the driver's environment, set them in the manifest's requesters (``max_response_bytes``,
``request_deadline``) or pass ``--conf spark.executorEnv.FRAMEWORK_MAX_RESPONSE_BYTES=...``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import MutableMapping

# The limits' module loads the components package: it is imported where a flag is read, once the command runs
# (importing framework.cli.run loads no components). The defaults in the help are theirs (a test holds them to it).
HELP_MAX_RESPONSE_SIZE = "256 MiB"
HELP_REQUEST_DEADLINE = "600"


def _size(text: str) -> int:
    from framework.components.http.response_limits import parse_size
    from framework.errors import ConfigError

    try:
        return parse_size(text, "--max-response-size")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> float:
    from framework.components.http.response_limits import parse_seconds
    from framework.errors import ConfigError

    try:
        return parse_seconds(text, "--request-deadline")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_response_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-response-size", type=_size, metavar="SIZE",
                        help="the most bytes one response body may have once decompressed, such as 512MiB "
                             f"(default {HELP_MAX_RESPONSE_SIZE}; a requester's "
                             "`max_response_bytes` wins); a larger body fails the read without a retry")
    parser.add_argument("--request-deadline", type=_seconds, metavar="SECONDS",
                        help="the most seconds one request attempt may take, connection to last byte "
                             f"(default {HELP_REQUEST_DEADLINE}; a requester's `request_deadline` wins); "
                             "an attempt past it is retried like a timeout")


def apply_response_flags(args: argparse.Namespace, environ: MutableMapping[str, str] | None = None) -> None:
    """Hand the flags on to every requester of the sync, this process's and its workers'."""
    size, deadline = getattr(args, "max_response_size", None), getattr(args, "request_deadline", None)
    if size is None and deadline is None:
        return
    from framework.components.http.response_limits import DEADLINE_ENV, MAX_BYTES_ENV

    env = os.environ if environ is None else environ
    if size is not None:
        env[MAX_BYTES_ENV] = str(size)
    if deadline is not None:
        env[DEADLINE_ENV] = repr(float(deadline))


__all__ = ["add_response_flags", "apply_response_flags"]
