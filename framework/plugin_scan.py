"""pydantic's scan for plugins, off for a block: :func:`plugin_scan_off`.

When pydantic builds a validator it looks for plugins among every installed
distribution's entry points (tens of milliseconds cold, more in a busy
worker). Plugins only observe validation, so where the framework builds
validators on a hot start (a command's start-up, a task's settings) the scan
is off, as pydantic documents, unless the user chose otherwise by setting
``PYDANTIC_DISABLE_PLUGINS`` themselves. No pydantic import here: the
command line uses it before anything heavy is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

VARIABLE = "PYDANTIC_DISABLE_PLUGINS"


@contextmanager
def plugin_scan_off() -> Iterator[None]:
    """``PYDANTIC_DISABLE_PLUGINS=__all__`` for the block, unless the user set it; as it was afterwards."""
    chosen = os.environ.get(VARIABLE)
    if chosen is None:
        os.environ[VARIABLE] = "__all__"
    try:
        yield
    finally:
        if chosen is None:
            os.environ.pop(VARIABLE, None)


__all__ = ["VARIABLE", "plugin_scan_off"]
