"""Protocol mode's stdout, when it is a pipe: room for a few pages of RECORD lines (:func:`widen`).

A Linux pipe holds 64 KiB, and a page of 1,000 records is about 400 KB of
RECORD lines: each page filled the pipe six times, and each time the read
loop waited for the consumer (the Airbyte platform, a destination) to be
scheduled and drain it. With 1 MiB the consumer drains one page while the
next is fetched (bench/README.md, "Protocol mode, eighth pass": 0.74x to
0.79x of the bare loop became 0.89x to 1.02x quiet, 0.63x to 0.65x became
0.65x to 0.76x with two busy loops). A pipe larger than
``/proc/sys/fs/pipe-max-size`` is refused to an unprivileged process: the
pipe is then left as it was.
"""

from __future__ import annotations

import os
import stat

try:
    import fcntl
except ImportError:  # not a POSIX system: pipes keep their size
    fcntl = None  # type: ignore[assignment]

#: What protocol mode asks for: a few pages of RECORD lines.
SIZE = 1 << 20


def widen(fd: int, size: int = SIZE) -> int | None:
    """The size of the pipe ``fd`` after asking for ``size`` bytes; None when ``fd`` is not a pipe or the
    system cannot resize pipes (not Linux). Never smaller than it was."""
    if not 0 < size < 1 << 31:  # fcntl's argument is a C int: a larger one would wrap to a tiny pipe
        raise ValueError(f"a pipe size of {size} bytes; give 1 to {(1 << 31) - 1}")
    setter = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    getter = getattr(fcntl, "F_GETPIPE_SZ", None)
    if setter is None or getter is None:
        return None
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        current = fcntl.fcntl(fd, getter)
        if current >= size:
            return current
        return fcntl.fcntl(fd, setter, size)
    except OSError:  # over pipe-max-size without the privilege, or out of the user's pipe memory: as it was
        try:
            return fcntl.fcntl(fd, getter)
        except OSError:
            return None


__all__ = ["SIZE", "widen"]
