"""Where files land: a local folder or an S3 bucket, behind one small interface.

Keys are ``/``-separated paths relative to the storage root (the local folder,
or the bucket and its prefix). Every object appears under its key only when
it is complete:

* :meth:`Storage.open_object` gives an :class:`ObjectWriter`, a binary file to
  write into. ``commit()`` makes the object appear, atomically; ``abort()`` (or
  an exception inside ``with``) leaves nothing behind. Locally the bytes go to
  a hidden temp file in the target folder that is renamed at commit; on S3
  they go up as a multipart upload completed at commit, or as one
  ``put_object`` when the object is small.
* :meth:`Storage.write_atomic` puts a small document (state) in one step.

Objects carry string metadata: S3 user metadata, or locally a hidden sidecar
``.<name>.meta.json`` next to the file. Hidden files (names starting with a
dot) are never listed; Spark and pyarrow skip them too. Data objects carry
their generation under :data:`GENERATION_KEY`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from framework.errors import ConfigError

#: Metadata key of the generation a data object belongs to (S3 user metadata ``x-amz-meta-ab-generation-id``).
GENERATION_KEY = "ab-generation-id"

_S3_URI = re.compile(r"^s3a?://(?P<bucket>[^/]+)(?:/(?P<prefix>.*))?$")


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

    def write_atomic(self, key: str, data: bytes, metadata: Mapping[str, str] | None = None) -> None: ...

    def delete(self, keys: Iterable[str]) -> None:
        """Remove these objects; keys that are not there are skipped."""

    def uri(self, key: str = "") -> str:
        """Where the object is, for people and for Spark: a file path or ``s3://bucket/key``."""


class _WriterContext:
    """``with`` support for object writers: abort when the block raises, keep the writer open otherwise."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is not None:
            self.abort()  # type: ignore[attr-defined]


def parse_s3_uri(text: str) -> tuple[str, str] | None:
    """``(bucket, prefix)`` of an ``s3://`` or ``s3a://`` address, prefix without slashes at its ends; else None."""
    match = _S3_URI.match(text or "")
    if not match:
        return None
    return match.group("bucket"), (match.group("prefix") or "").strip("/")


def storage_for(settings: Any, client_factory: Callable[..., Any] | None = None) -> Storage:
    """The storage of ``DestinationSettings``: its bucket (and path) on S3, or its local ``output`` folder.

    ``client_factory(service_name, **kwargs)`` makes the boto3 clients
    (``boto3.client`` when not given); it gets the endpoint, region and keys
    of the settings.
    """
    if settings.s3_bucket_name:
        bucket, prefix = settings.s3_bucket_name, settings.s3_bucket_path.strip("/")
    else:
        output = settings.output or ""
        parsed = parse_s3_uri(output)
        if parsed is None:
            from framework.storage.local import LocalStorage

            if not output:
                raise ConfigError("give `s3_bucket_name` or `output` (a local folder or `s3://bucket/prefix`)")
            return LocalStorage(output)
        bucket, prefix = parsed
    from framework.storage.s3 import S3Storage, s3_client

    part_size = _part_size(settings)
    client = s3_client(settings, client_factory)
    return S3Storage(bucket, prefix, client, part_size=part_size)


def _part_size(settings: Any) -> int:
    mb = getattr(getattr(settings, "format", None), "part_size_mb", None)
    if mb is None:
        return 10 * 1024 * 1024
    if mb < 5:
        raise ConfigError(f"`part_size_mb` is {mb}; S3 needs parts of at least 5 MB: give 5 or more")
    return mb * 1024 * 1024


__all__ = ["GENERATION_KEY", "ObjectInfo", "ObjectWriter", "Storage", "parse_s3_uri", "storage_for"]
