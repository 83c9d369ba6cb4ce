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

Objects carry string metadata: S3 user metadata, or locally a file in the
root's hidden ``.metadata`` folder (``.metadata/<key>.json``), so that data
folders hold data only. Hidden files and folders (names starting with a dot)
are never listed; Spark and pyarrow skip them too. Data objects carry
their generation under :data:`GENERATION_KEY`.

The interfaces are in :mod:`.objects`, the two storages in :mod:`.local` and
:mod:`.s3`, the file layout of a stream in :mod:`.layout` and the saved state
and landed catalog in :mod:`.state_store`; this package exports what other
packages use of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from framework.errors import ConfigError
from framework.storage.layout import PartNumbers, StreamLayout, next_part_number, safe_name
from framework.storage.local import LocalStorage
from framework.storage.objects import GENERATION_KEY, ObjectInfo, ObjectWriter, Storage
from framework.storage.s3 import S3Storage, s3_client
from framework.storage.state_store import CatalogStore, ConnectionState, StateStore

if TYPE_CHECKING:
    from framework.models.destination import DestinationSettings

_S3_URI = re.compile(r"^s3a?://(?P<bucket>[^/]+)(?:/(?P<prefix>.*))?$")


def parse_s3_uri(text: str) -> tuple[str, str] | None:
    """``(bucket, prefix)`` of an ``s3://`` or ``s3a://`` address, prefix without slashes at its ends; else None."""
    match = _S3_URI.match(text or "")
    if not match:
        return None
    return match.group("bucket"), (match.group("prefix") or "").strip("/")


def storage_for(settings: DestinationSettings, client_factory: Callable[..., Any] | None = None) -> Storage:
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
            if not output:
                raise ConfigError("give `s3_bucket_name` or `output` (a local folder or `s3://bucket/prefix`)")
            return LocalStorage(output)
        bucket, prefix = parsed
    part_size = _part_size(settings)
    client = s3_client(settings, client_factory)
    return S3Storage(bucket, prefix, client, part_size=part_size)


def _part_size(settings: DestinationSettings) -> int:
    mb = getattr(getattr(settings, "format", None), "part_size_mb", None)
    if mb is None:
        return 10 * 1024 * 1024
    if mb < 5:
        raise ConfigError(f"`part_size_mb` is {mb}; S3 needs parts of at least 5 MB: give 5 or more")
    return mb * 1024 * 1024


__all__ = ["GENERATION_KEY", "CatalogStore", "ConnectionState", "LocalStorage", "ObjectInfo", "ObjectWriter",
           "PartNumbers", "S3Storage", "StateStore", "Storage", "StreamLayout", "next_part_number", "parse_s3_uri",
           "safe_name", "storage_for"]
