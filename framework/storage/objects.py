"""What a storage is: objects listed with their metadata, written through an :class:`ObjectWriter`.

See :mod:`framework.storage` for the contract; :mod:`.local` and :mod:`.s3` implement it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from framework.errors import FrameworkError

#: Metadata key of the generation a data object belongs to (S3 user metadata ``x-amz-meta-ab-generation-id``).
GENERATION_KEY = "ab-generation-id"


@dataclass(frozen=True)
class ObjectInfo:
    """A listed object: key relative to the storage root, size in bytes, and metadata when it was asked for."""

    key: str
    size: int
    metadata: Mapping[str, str] | None = field(default=None, compare=False)

    @property
    def generation(self) -> int | None:
        """The ``ab-generation-id`` of the object, or None when absent or not a number."""
        value = (self.metadata or {}).get(GENERATION_KEY)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None


class ObjectWriter(Protocol):
    """A binary file that becomes an object only at :meth:`commit`."""

    key: str

    def write(self, data: bytes) -> int: ...

    def tell(self) -> int: ...

    @property
    def bytes_written(self) -> int: ...

    def seal(self) -> None:
        """No more writes: hand over what is buffered (the object still does not appear)."""

    def commit(self) -> None:
        """Make the object appear under its key, complete, in one step."""

    def abort(self) -> None:
        """Drop everything written; nothing appears. Safe to call twice or after a failure."""

    def __enter__(self) -> ObjectWriter: ...

    def __exit__(self, *exc: Any) -> None: ...


class Storage(Protocol):
    """A local folder or an S3 prefix."""

    def open_object(self, key: str, metadata: Mapping[str, str] | None = None) -> ObjectWriter: ...

    def list(self, prefix: str = "", *, with_metadata: bool = True) -> list[ObjectInfo]:
        """Objects whose key starts with ``prefix`` (a plain string prefix, as in S3), sorted by key."""

    def read(self, key: str) -> bytes | None:
        """The object's bytes, or None when there is none."""

    def read_tail(self, key: str, size: int) -> bytes | None:
        """The last ``size`` bytes of the object (all of it when smaller; a Parquet footer, say), or None when
        there is none."""

    def write_atomic(self, key: str, data: bytes, metadata: Mapping[str, str] | None = None) -> None: ...

    def delete(self, keys: Iterable[str]) -> None:
        """Remove these objects; keys that are not there are skipped."""

    def move(self, source: str, target: str) -> bool:
        """Make the complete object ``source`` appear as ``target`` (with its metadata) and ``source`` go:
        a rename locally, a copy and delete on S3. False when ``source`` is gone and ``target`` is there
        (moved already); :class:`~framework.errors.FrameworkError` when neither is."""

    def uri(self, key: str = "") -> str:
        """Where the object is, for people and for Spark: a file path or ``s3://bucket/key``."""

    def remove_stale_temporaries(self, prefix: str = "", *, older_than: float = ...,
                                 owned_by: Callable[[str], bool] | None = None) -> tuple[str, ...]:
        """Remove what killed writers left under ``prefix`` (hidden temp files; incomplete S3 uploads), never
        what a live writer is writing; ``owned_by(key)`` narrows it. Returns the keys removed."""


class NothingToMove(FrameworkError):
    """A move whose source and target are both gone (a staged file deleted before it was published)."""


_W = TypeVar("_W", bound="WriterContext")


class WriterContext:
    """``with`` support for object writers: abort when the block raises, keep the writer open otherwise."""

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: _W) -> _W:
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is not None:
            self.abort()


__all__ = ["GENERATION_KEY", "NothingToMove", "ObjectInfo", "ObjectWriter", "Storage", "WriterContext"]
