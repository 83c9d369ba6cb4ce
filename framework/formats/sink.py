"""The sink a format writer writes into: a view of the caller's binary sink that counts bytes and never closes it."""

from __future__ import annotations

from typing import Any, BinaryIO


class CountingSink:
    """A write-only view of a binary sink that counts the bytes through it and never closes it.

    Format libraries close what they are given; the sink belongs to the caller
    (it still has to be committed), so ``close`` here only marks this view closed.
    """

    def __init__(self, sink: BinaryIO):
        self._sink = sink
        self.count = 0
        self.closed = False

    def write(self, data: Any) -> int:
        self._sink.write(data)
        size = len(data) if isinstance(data, (bytes, bytearray)) else memoryview(data).nbytes
        self.count += size
        return size

    def tell(self) -> int:
        return self.count

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False
