"""What the command-line programs do to start and end cheaply: :func:`lean_start`.

Start-up makes many objects and little garbage, so the collector is off
while it runs (the caller turns it on again once start-up is over, where
garbage follows; the collector's settings are :mod:`framework.collector`'s).
pydantic looks for plugins (every installed distribution's entry points)
when it builds a validator; plugins only observe validation, so the scan is
off unless the user chose, as pydantic documents. At the end a
caller that goes on (a test, a script passing ``argv``) gets both back as they
were; as the program (``validate-manifest``, ``run-manifest``) it leaves the
collector off with every object frozen: the interpreter would otherwise walk
the whole heap once more on its way out (2 % of a cold check, 0.3 s after a
200,000-record sync). Whatever must be durable is closed before
the state that covers it is saved, so no finalizer is left with work to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from framework.collector import off_while_starting
from framework.plugin_scan import plugin_scan_off


@contextmanager
def lean_start(program: bool) -> Iterator[bool]:
    """Collector off and pydantic's plugin scan off for the block; yields whether the collector was on.

    ``program``: the process ends after the block (the command line's own ``argv``)."""
    # the collector's side: framework.collector.off_while_starting (what the run froze, framework.cli.run, is a
    # caller's that goes on to collect again)
    with off_while_starting(program) as collecting, plugin_scan_off():
        yield collecting
