"""Waiting for a Spark Connect server that is starting, before a session is made on it.

``sbin/start-connect-server.sh`` returns at once, and the server listens some 10 to 30 s later (its JVM
starts, then Spark). A connection refused at the URL's address is taken for such a server: the client
says once on stderr that it waits, and tries again every half second up to a limit
(``FRAMEWORK_CONNECT_WAIT_S``, 60 s by default; 0 fails at once). Any other failure (an unknown host, no
route, a timeout) is not a server starting and fails at once. The clock, the pause and the message's sink
are injected, so a test steps through the wait without waiting.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Mapping

from framework.errors import ConfigError

#: The environment variable that sets how long to wait for a server that refuses connections (seconds).
WAIT_VARIABLE = "FRAMEWORK_CONNECT_WAIT_S"
DEFAULT_WAIT_S = 60.0
RETRY_EVERY_S = 0.5


def wait_limit(environ: Mapping[str, str] | None = None) -> float:
    """The seconds to wait for a refusing server, from :data:`WAIT_VARIABLE` (a ConfigError when not a number)."""
    text = (os.environ if environ is None else environ).get(WAIT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_WAIT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise ConfigError(f"{WAIT_VARIABLE}={text!r} is not a number of seconds; give one such as 60 (0 fails at "
                          "once when the Spark Connect server does not listen)")
    return seconds


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def wait_for_server(host: str, port: int, shown: str, limit: float, *,
                    clock: Callable[[], float] = time.monotonic, pause: Callable[[float], None] = time.sleep,
                    say: Callable[[str], None] = _say) -> None:
    """Return once something accepts a connection at ``host:port``; a refused connection is retried up to
    ``limit`` seconds (said once through ``say``), anything else fails at once. The failure is a
    :class:`ConfigError` naming ``shown`` (the URL as it may be shown) and the fix."""
    deadline: float | None = None
    while True:
        try:
            socket.create_connection((host, port), timeout=10).close()
            return
        except ConnectionRefusedError as exc:
            now = clock()
            if deadline is None:
                deadline = now + limit
                if limit > 0:
                    say(f"the Spark Connect server at {shown} is not listening yet ({host}:{port}: connection "
                        f"refused); waiting up to {limit:g} s for it to start ({WAIT_VARIABLE} sets the limit)")
            if now >= deadline:
                waited = f" for {limit:g} s" if limit > 0 else ""
                raise ConfigError(f"the Spark Connect server at {shown} could not be reached ({host}:{port}: "
                                  f"{exc.strerror or exc}{waited}); start it (sbin/start-connect-server.sh), "
                                  f"fix --remote / SPARK_REMOTE, or wait longer ({WAIT_VARIABLE})") from None
            pause(min(RETRY_EVERY_S, max(0.0, deadline - now)))
        except OSError as exc:
            raise ConfigError(f"the Spark Connect server at {shown} could not be reached ({host}:{port}: "
                              f"{exc.strerror or exc}); start it (sbin/start-connect-server.sh) or fix --remote / "
                              "SPARK_REMOTE") from None


__all__ = ["DEFAULT_WAIT_S", "WAIT_VARIABLE", "wait_for_server", "wait_limit"]
