"""An S3 bucket (or any S3-compatible service) as storage, through boto3.

An object is uploaded while it is written: bytes are buffered until a part
of ``part_size`` is full, and each full part goes up as part of a multipart
upload, with a few parts in flight at once. S3 shows the object only when
the upload is completed, at :meth:`S3ObjectWriter.commit`; an aborted upload
leaves no object and no parts. An object that stays smaller than one part is
sent with a single ``put_object`` at commit instead (one request rather than
three). A process killed half way leaves an incomplete multipart upload,
which S3 never shows as an object; :meth:`S3Storage.remove_stale_temporaries`
(called at the start of a sync) aborts those idle for an hour, and a bucket
lifecycle rule (``AbortIncompleteMultipartUpload``) cleans up the rest.

User metadata (``ab-generation-id`` for data objects) is set when the upload
starts, so the object has it from the moment it appears.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, NoReturn

from framework.errors import ConfigError, FrameworkError
from framework.storage.objects import NothingToMove, ObjectInfo, WriterContext

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from framework.models.destination import DestinationSettings

_MIB = 1024 * 1024
_MAX_PARTS = 10_000
#: An incomplete multipart upload is stale once its last activity (start, last part) is this old: S3 keeps no
#: lock, so the age is all there is; a live upload idle that long (sealed, its task still reading) that is
#: aborted fails its task's commit, whose units are then read again: nothing is lost.
STALE_UPLOAD_AFTER = 3600.0
_MAX_COPY = 5 * 1024 * _MIB  # the largest object one CopyObject copies
_REFUSED = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken", "InvalidToken",
            "InvalidClientTokenId", "AllAccessDisabled"}


class S3Storage:
    """Objects under ``prefix`` in ``bucket``."""

    def __init__(self, bucket: str, prefix: str, client: Any, *, part_size: int = 10 * _MIB,
                 inline_limit: int = 512 * 1024, upload_concurrency: int = 2):
        if part_size < 5 * _MIB:
            raise ConfigError(f"S3 part size {part_size} is below the 5 MiB S3 needs; give at least 5 MB")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client
        self.part_size = part_size
        self.inline_limit = inline_limit
        self.upload_concurrency = max(1, upload_concurrency)

    def full_key(self, key: str) -> str:
        key = key.lstrip("/")
        return f"{self.prefix}/{key}" if self.prefix else key

    def _relative(self, full_key: str) -> str:
        return full_key[len(self.prefix) + 1:] if self.prefix else full_key

    def uri(self, key: str = "") -> str:
        full = self.full_key(key) if key else self.prefix
        return f"s3://{self.bucket}/{full}" if full else f"s3://{self.bucket}"

    # ---------------------------------------------------------- operations

    def open_object(self, key: str, metadata: Mapping[str, str] | None = None) -> S3ObjectWriter:
        return S3ObjectWriter(self, key, metadata)

    def list(self, prefix: str = "", *, with_metadata: bool = True) -> list[ObjectInfo]:
        full_prefix = self.full_key(prefix) if prefix else (self.prefix + "/" if self.prefix else "")
        found: list[tuple[str, int]] = []
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                              Prefix=full_prefix):
                for item in page.get("Contents", ()):
                    found.append((item["Key"], int(item["Size"])))
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            _raise("list", self.uri(prefix), exc)
        found.sort()
        if not with_metadata:
            return [ObjectInfo(self._relative(k), size) for k, size in found]
        with ThreadPoolExecutor(max_workers=8) as pool:
            metadata = list(pool.map(self._head_metadata, [k for k, _ in found]))
        return [ObjectInfo(self._relative(k), size, meta) for (k, size), meta in zip(found, metadata)]

    def _head_metadata(self, full_key: str) -> dict[str, str]:
        try:
            return dict(self.client.head_object(Bucket=self.bucket, Key=full_key).get("Metadata", {}))
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            if _code(exc) in ("404", "NoSuchKey", "NotFound"):  # deleted since the listing
                return {}
            _raise("read the metadata of", f"s3://{self.bucket}/{full_key}", exc)

    def read(self, key: str) -> bytes | None:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.full_key(key))["Body"].read()
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            _raise("read", self.uri(key), exc)

    def read_tail(self, key: str, size: int) -> bytes | None:
        """The last ``size`` bytes of the object (all of it when smaller): one ranged GET; None when there is none."""
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.full_key(key),
                                          Range=f"bytes=-{max(1, size)}")["Body"].read()
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            _raise("read", self.uri(key), exc)

    def write_atomic(self, key: str, data: bytes, metadata: Mapping[str, str] | None = None) -> None:
        """One ``put_object``: S3 shows the whole new object or the old one, never a mix."""
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.full_key(key), Body=bytes(data),
                                   Metadata=_metadata(metadata))
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            _raise("write", self.uri(key), exc)

    def remove_stale_temporaries(self, prefix: str = "", *, older_than: float = STALE_UPLOAD_AFTER,
                                 owned_by: Callable[[str], bool] | None = None) -> tuple[str, ...]:
        """Abort the incomplete multipart uploads under ``prefix`` idle for ``older_than`` seconds (and matching
        ``owned_by(key)`` when given); returns their keys. They are S3's leftovers of killed writers."""
        full_prefix = self.full_key(prefix) if prefix else (self.prefix + "/" if self.prefix else "")
        cutoff = datetime.now(timezone.utc) - timedelta(seconds=older_than)
        removed: list[str] = []
        try:
            pages = self.client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket,
                                                                                 Prefix=full_prefix)
            uploads = [upload for page in pages for upload in page.get("Uploads", ())]
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            if _code(exc) in _REFUSED:  # no s3:ListBucketMultipartUploads: the lifecycle rule is left to do it
                log.warning("cannot list the incomplete uploads under %s (%s); a bucket lifecycle rule that "
                            "aborts them cleans them up", self.uri(prefix), _code(exc))
                return ()
            _raise("list the uploads under", self.uri(prefix), exc)
        for upload in uploads:
            key, upload_id = upload["Key"], upload["UploadId"]
            if owned_by is not None and not owned_by(self._relative(key)):
                continue
            if _utc(upload["Initiated"]) > cutoff or self._last_part(key, upload_id) > cutoff:
                continue
            try:
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
            except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
                if _code(exc) == "NoSuchUpload":  # completed or aborted meanwhile
                    continue
                if _code(exc) in _REFUSED:
                    log.warning("cannot abort the stale upload of s3://%s/%s (%s)", self.bucket, key, _code(exc))
                    continue
                _raise("abort the upload of", f"s3://{self.bucket}/{key}", exc)
            removed.append(self._relative(key))
        return tuple(removed)

    def _last_part(self, key: str, upload_id: str) -> datetime:
        """When the upload's latest part arrived (the distant past when it has none)."""
        latest = datetime.min.replace(tzinfo=timezone.utc)
        try:
            pages = self.client.get_paginator("list_parts").paginate(Bucket=self.bucket, Key=key, UploadId=upload_id)
            for page in pages:
                for part in page.get("Parts", ()):
                    latest = max(latest, _utc(part["LastModified"]))
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            if _code(exc) == "NoSuchUpload" or _code(exc) in _REFUSED:
                return datetime.max.replace(tzinfo=timezone.utc)  # gone meanwhile, or not ours to see: left alone
            _raise("list the parts of", f"s3://{self.bucket}/{key}", exc)
        return latest

    def delete(self, keys: Iterable[str]) -> None:
        full = [self.full_key(k) for k in keys]
        for start in range(0, len(full), 1000):
            chunk = full[start:start + 1000]
            try:
                answer = self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True})
            except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
                _raise("delete objects under", self.uri(), exc)
            errors = answer.get("Errors") or []
            if errors:
                first = errors[0]
                raise FrameworkError(
                    f"could not delete {len(errors)} object(s) under {self.uri()}, first s3://{self.bucket}/"
                    f"{first.get('Key')}: {first.get('Code')} {first.get('Message', '')}".rstrip()
                )

    def move(self, source: str, target: str) -> bool:
        """Copy ``source`` to ``target`` inside the bucket (metadata kept; no bytes through this process),
        then delete ``source``. A copy is complete or absent, so ``target`` never shows half an object."""
        src, dst = self.full_key(source), self.full_key(target)
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=src)
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            if _code(exc) not in ("404", "NoSuchKey", "NotFound"):
                _raise("read the metadata of", self.uri(source), exc)
            try:
                self.client.head_object(Bucket=self.bucket, Key=dst)
                return False
            except Exception as missing:  # noqa: BLE001 - any S3 client error: reworded by _raise
                if _code(missing) not in ("404", "NoSuchKey", "NotFound"):
                    _raise("read the metadata of", self.uri(target), missing)
            raise NothingToMove(f"cannot move {self.uri(source)} to {self.uri(target)}: neither is there") from None
        try:
            if int(head.get("ContentLength", 0)) <= _MAX_COPY:
                self.client.copy_object(Bucket=self.bucket, Key=dst, CopySource={"Bucket": self.bucket, "Key": src},
                                        MetadataDirective="COPY")
            else:  # above S3's single-copy limit: a multipart copy, metadata given again
                self.client.copy({"Bucket": self.bucket, "Key": src}, self.bucket, dst,
                                 ExtraArgs={"Metadata": head.get("Metadata", {})})
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            _raise("copy", f"{self.uri(source)} to {self.uri(target)}", exc)
        self.delete([source])
        return True


class S3ObjectWriter(WriterContext):
    """One object going up; it appears only at :meth:`commit`."""

    def __init__(self, storage: S3Storage, key: str, metadata: Mapping[str, str] | None):
        self.key = key
        self._storage = storage
        self._client = storage.client
        self._bucket = storage.bucket
        self._full_key = storage.full_key(key)
        self._metadata = _metadata(metadata)
        self._buffer = bytearray()
        self._count = 0
        self._upload_id: str | None = None
        self._parts: list[Future] = []
        self._pool: ThreadPoolExecutor | None = None
        self._state = "open"  # open -> sealed -> committed | aborted

    @property
    def uri(self) -> str:
        return f"s3://{self._bucket}/{self._full_key}"

    def write(self, data: Any) -> int:
        if self._state != "open":
            raise FrameworkError(f"{self.uri}: cannot write after the object was {self._state}")
        self._buffer += data
        size = len(data) if isinstance(data, (bytes, bytearray)) else memoryview(data).nbytes
        self._count += size
        part = self._storage.part_size
        while len(self._buffer) >= part:
            chunk = bytes(self._buffer[:part])
            del self._buffer[:part]
            self._send_part(chunk)
        return size

    def tell(self) -> int:
        return self._count

    @property
    def bytes_written(self) -> int:
        return self._count

    def _send_part(self, chunk: bytes) -> None:
        if self._upload_id is None:
            try:
                answer = self._client.create_multipart_upload(Bucket=self._bucket, Key=self._full_key,
                                                              Metadata=self._metadata)
            except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
                _raise("start the upload of", self.uri, exc)
            self._upload_id = answer["UploadId"]
            self._pool = ThreadPoolExecutor(max_workers=self._storage.upload_concurrency)
        number = len(self._parts) + 1
        if number > _MAX_PARTS:
            raise FrameworkError(
                f"{self.uri}: more than {_MAX_PARTS} parts; lower `file_size_limit_mb` or raise `part_size_mb`"
            )
        in_flight = [f for f in self._parts if not f.done()]
        if len(in_flight) >= self._storage.upload_concurrency:
            in_flight[0].result()  # wait for a slot; raises when that part failed
        for done in self._parts:
            if done.done() and done.exception() is not None:
                done.result()
        assert self._pool is not None
        self._parts.append(self._pool.submit(self._upload_part, number, chunk))

    def _upload_part(self, number: int, chunk: bytes) -> dict:
        try:
            answer = self._client.upload_part(Bucket=self._bucket, Key=self._full_key, UploadId=self._upload_id,
                                              PartNumber=number, Body=chunk)
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            _raise(f"upload part {number} of", self.uri, exc)
        return {"PartNumber": number, "ETag": answer["ETag"]}

    def seal(self) -> None:
        """Send what is buffered: the last part of a multipart upload, or (when large enough) a first one.

        A small object keeps its bytes here until :meth:`commit` puts it whole.
        """
        if self._state != "open":
            return
        if self._buffer and (self._upload_id is not None or len(self._buffer) > self._storage.inline_limit):
            chunk = bytes(self._buffer)
            self._buffer = bytearray()
            self._send_part(chunk)
        self._state = "sealed"

    def commit(self) -> None:
        if self._state == "committed":
            return
        if self._state == "aborted":
            raise FrameworkError(f"{self.uri}: cannot commit an aborted object")
        try:
            self.seal()
            if self._upload_id is None:
                try:
                    self._client.put_object(Bucket=self._bucket, Key=self._full_key, Body=bytes(self._buffer),
                                            Metadata=self._metadata)
                except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
                    _raise("write", self.uri, exc)
            else:
                parts = [f.result() for f in self._parts]
                try:
                    self._client.complete_multipart_upload(Bucket=self._bucket, Key=self._full_key,
                                                           UploadId=self._upload_id,
                                                           MultipartUpload={"Parts": parts})
                except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
                    _raise("complete the upload of", self.uri, exc)
        except BaseException:
            self.abort()
            raise
        self._state = "committed"
        self._release()

    def abort(self) -> None:
        if self._state in ("committed", "aborted"):
            return
        self._state = "aborted"
        self._buffer = bytearray()
        for future in self._parts:
            future.cancel()
        self._release()
        if self._upload_id is not None:
            try:
                self._client.abort_multipart_upload(Bucket=self._bucket, Key=self._full_key,
                                                    UploadId=self._upload_id)
            except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
                if _code(exc) != "NoSuchUpload":
                    _raise("abort the upload of", self.uri, exc)

    def _release(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def s3_client(settings: DestinationSettings, client_factory: Callable[..., Any] | None = None) -> Any:
    """A boto3 S3 client for ``DestinationSettings``: endpoint, region, keys, and the role to assume if any."""
    from botocore.config import Config

    if client_factory is None:
        import boto3

        client_factory = boto3.client
    common: dict[str, Any] = {}
    if settings.s3_endpoint:
        common["endpoint_url"] = settings.s3_endpoint
    if settings.s3_bucket_region:
        common["region_name"] = settings.s3_bucket_region
    keys: dict[str, Any] = {}
    if settings.access_key_id:
        keys = {"aws_access_key_id": settings.access_key_id, "aws_secret_access_key": settings.secret_access_key}
    role_arn = getattr(settings, "role_arn", None)
    if role_arn:
        sts = client_factory("sts", **common, **keys)
        try:
            found = sts.assume_role(RoleArn=role_arn, RoleSessionName="manifest-framework")["Credentials"]
        except Exception as exc:  # noqa: BLE001 - any S3 client error: reworded by _raise
            _raise("assume the role", role_arn, exc)
        keys = {"aws_access_key_id": found["AccessKeyId"], "aws_secret_access_key": found["SecretAccessKey"],
                "aws_session_token": found["SessionToken"]}
    config = Config(retries={"max_attempts": 5, "mode": "standard"},
                    s3={"addressing_style": "path"} if settings.s3_endpoint else None)
    return client_factory("s3", config=config, **common, **keys)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (metadata or {}).items()}


def _code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _raise(action: str, where: str, exc: BaseException) -> NoReturn:
    """Raise a plain-English error for a failed S3 call; refused credentials and missing buckets are config errors."""
    if isinstance(exc, FrameworkError):
        raise exc
    raise _failure(action, where, exc) from exc


def _failure(action: str, where: str, exc: BaseException) -> FrameworkError:
    code = _code(exc)
    if code in _REFUSED:
        return ConfigError(f"S3 refused to {action} {where} ({code}): check the access key, secret and the "
                           f"permissions on the bucket")
    if code == "NoSuchBucket":
        return ConfigError(f"could not {action} {where}: the bucket does not exist; create it or fix "
                           f"`s3_bucket_name`")
    detail = f"{code}: {exc}" if code else f"{type(exc).__name__}: {exc}"
    return FrameworkError(f"could not {action} {where} ({detail})")


__all__ = ["S3ObjectWriter", "S3Storage", "s3_client"]
