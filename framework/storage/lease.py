"""One writer per output: a sync holds a lease on its output while it runs.

The lease is one small JSON document at ``_airbyte_state/lease.json`` under the
output root, naming its holder (a random owner token, host, pid, when it began
and its last heartbeat)::

    {"owner": "5f0c...", "host": "etl-1", "pid": 4242, "started_at": 1764680000.0, "heartbeat": 1764680030.0}

Every change of it is a compare-and-swap on its version, so of two syncs only
one wins, and a takeover of a dead holder's lease is itself atomic:

* a local folder (or a shared mount): created with ``O_CREAT | O_EXCL``, and
  every read-compare-write done under an exclusive ``flock`` of
  ``_airbyte_state/lease.guard`` (released by the kernel when its process dies,
  however it dies); the version is the document's bytes;
* S3: a conditional put, ``put_object(IfNoneMatch="*")`` to create it,
  ``IfMatch=<ETag>`` to renew or take it over, a delete ``IfMatch`` the ETag to
  release it; the version is the ETag.

A holder is *dead* when its heartbeat is older than :data:`STALE_AFTER`
seconds (any host), or, on the same host, when its pid is gone. The holder's
thread renews the heartbeat every :data:`HEARTBEAT_EVERY` seconds; a holder
that finds its lease taken (it was paused longer than the limit) stops before
it publishes anything (:meth:`Lease.check`).

A second sync stops at once with :class:`OutputBusy` (run-manifest exits 75,
``EX_TEMPFAIL``: try again later), naming the holder, or waits for it up to
``--wait-for-lock SECONDS``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any, Protocol

import orjson
from msgspec import Struct

from framework.errors import FrameworkError, StorageError
from framework.storage.local import LocalStorage
from framework.storage.s3 import S3Storage

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the O_EXCL create still keeps two creators apart
    fcntl = None  # type: ignore[assignment]

LEASE_KEY = "_airbyte_state/lease.json"
GUARD_KEY = "_airbyte_state/lease.guard"
#: A lease whose heartbeat is older than this (seconds) is taken over by the next sync, from any host.
STALE_AFTER = 120.0
#: How often the holder renews its heartbeat (seconds).
HEARTBEAT_EVERY = 15.0
#: The exit code of a sync refused because another holds the output (sysexits' EX_TEMPFAIL: retry later).
EXIT_BUSY = 75


class OutputBusy(FrameworkError):
    """Another sync holds the output's lease."""

    def __init__(self, message: str, holder: LeaseHolder):
        self.holder = holder
        super().__init__(message)


class LeaseLost(StorageError):
    """This sync's lease was taken over (it was paused past the limit): it stops without publishing."""


class LeaseHolder(Struct, frozen=True):
    owner: str
    host: str
    pid: int
    started_at: float
    heartbeat: float

    def as_json(self) -> bytes:
        return orjson.dumps({"owner": self.owner, "host": self.host, "pid": self.pid,
                             "started_at": self.started_at, "heartbeat": self.heartbeat})

    @classmethod
    def parse(cls, data: bytes) -> LeaseHolder:
        """The holder a lease document names; a damaged one reads as a holder long dead."""
        try:
            doc = orjson.loads(data)
            return cls(str(doc["owner"]), str(doc["host"]), int(doc["pid"]), float(doc["started_at"]),
                       float(doc["heartbeat"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return cls("", "?", 0, 0.0, 0.0)

    def describe(self, now: float) -> str:
        began = datetime.fromtimestamp(self.started_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        age = max(0.0, now - self.heartbeat)
        return f"pid {self.pid} on {self.host}, started {began}, last heartbeat {age:.0f} s ago"

    def dead(self, now: float, host: str, alive: Callable[[int], bool], stale_after: float) -> bool:
        if now - self.heartbeat > stale_after:
            return True
        return self.host == host and not alive(self.pid)


class LeaseBackend(Protocol):
    """Compare-and-swap on one small document; a version is whatever :meth:`read` returns with it."""

    where: str

    def create(self, data: bytes) -> str | None:
        """Write ``data`` if there is no document; its version, or None when there is one."""

    def read(self) -> tuple[bytes, str] | None:
        """The document and its version, or None."""

    def replace(self, data: bytes, version: str) -> str | None:
        """Write ``data`` if the document is still at ``version``; the new version, or None."""

    def remove(self, version: str) -> bool:
        """Delete the document if it is still at ``version``."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class LocalLeaseBackend:
    """The lease file of a local folder or shared mount (see the module docs)."""

    def __init__(self, storage: LocalStorage):
        self.path = storage.path(LEASE_KEY)
        self.guard = storage.path(GUARD_KEY)
        self.where = storage.uri(LEASE_KEY)

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.guard, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                with contextlib.suppress(OSError):  # a mount without locks: O_EXCL and the digest still hold
                    fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # the lock goes with it

    def _read(self) -> bytes | None:
        try:
            with open(self.path, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None

    def create(self, data: bytes) -> str | None:
        with self._guarded():
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return None
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            return _digest(data)

    def read(self) -> tuple[bytes, str] | None:
        with self._guarded():
            data = self._read()
        return None if data is None else (data, _digest(data))

    def replace(self, data: bytes, version: str) -> str | None:
        with self._guarded():
            now = self._read()
            if now is None or _digest(now) != version:
                return None
            folder, name = os.path.split(self.path)  # a temp name LocalStorage removes when a crash left it
            temp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
            with open(temp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
            return _digest(data)

    def remove(self, version: str) -> bool:
        with self._guarded():
            now = self._read()
            if now is None or _digest(now) != version:
                return False
            os.unlink(self.path)
            return True


class S3LeaseBackend:
    """The lease object of an S3 output: conditional puts (see the module docs)."""

    def __init__(self, storage: S3Storage):
        self.client = storage.client
        self.bucket = storage.bucket
        self.key = storage.full_key(LEASE_KEY)
        self.where = storage.uri(LEASE_KEY)

    def _put(self, data: bytes, **condition: str) -> str | None:
        try:
            answer = self.client.put_object(Bucket=self.bucket, Key=self.key, Body=data, **condition)
        except Exception as exc:  # noqa: BLE001 - any S3 client error: a lost race, or reworded
            if _code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict", "NoSuchKey", "404"):
                return None
            raise StorageError(f"could not write the lease {self.where} ({_code(exc) or exc})") from None
        return str(answer["ETag"])

    def create(self, data: bytes) -> str | None:
        return self._put(data, IfNoneMatch="*")

    def read(self) -> tuple[bytes, str] | None:
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except Exception as exc:  # noqa: BLE001
            if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise StorageError(f"could not read the lease {self.where} ({_code(exc) or exc})") from None
        return answer["Body"].read(), str(answer["ETag"])

    def replace(self, data: bytes, version: str) -> str | None:
        return self._put(data, IfMatch=version)

    def remove(self, version: str) -> bool:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key, IfMatch=version)
        except Exception as exc:  # noqa: BLE001 - taken over meanwhile (or gone): not ours to delete
            if _code(exc) in ("PreconditionFailed", "412", "NoSuchKey", "404"):
                return False
            if _code(exc) in ("NotImplemented", "InvalidArgument", "InvalidRequest"):
                # a store without conditional deletes: compared, then deleted (a takeover in between is the
                # only race, and it needs the holder's heartbeat stopped for STALE_AFTER)
                current = self.read()
                if current is None or current[1] != version:
                    return False
                self.client.delete_object(Bucket=self.bucket, Key=self.key)
                return True
            raise StorageError(f"could not release the lease {self.where} ({_code(exc) or exc})") from None
        return True


def _code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


class Lease:
    """This sync's claim on an output, through a :class:`LeaseBackend`; see the module docs."""

    def __init__(self, backend: LeaseBackend, *, clock: Callable[[], float] = time.time, host: str | None = None,
                 pid: int | None = None, alive: Callable[[int], bool] = pid_alive,
                 stale_after: float = STALE_AFTER):
        self.backend = backend
        self.clock = clock
        self.host = host or socket.gethostname()
        self.pid = os.getpid() if pid is None else pid
        self.alive = alive
        self.stale_after = stale_after
        self.owner = uuid.uuid4().hex
        self.version: str | None = None  # held while not None
        self.started_at = 0.0
        self.taken_from: LeaseHolder | None = None  # the dead holder this lease was taken over from
        self.lost: LeaseHolder | None = None  # who took it while we held it

    def _document(self) -> bytes:
        return LeaseHolder(self.owner, self.host, self.pid, self.started_at, self.clock()).as_json()

    def try_acquire(self) -> LeaseHolder | None:
        """Take the lease: None when taken (created, or a dead holder's taken over), else the live holder."""
        if self.version is not None:
            return None
        self.started_at = self.clock()
        for _ in range(20):  # each round loses only to another writer's change, which then is live or gone
            version = self.backend.create(self._document())
            if version is not None:
                self.version = version
                return None
            current = self.backend.read()
            if current is None:  # released meanwhile
                continue
            holder = LeaseHolder.parse(current[0])
            if not holder.dead(self.clock(), self.host, self.alive, self.stale_after):
                return holder
            version = self.backend.replace(self._document(), current[1])
            if version is not None:
                self.version, self.taken_from = version, holder
                return None
        raise StorageError(f"the lease {self.backend.where} changes too fast to be taken; run again")

    def renew(self) -> bool:
        """Refresh the heartbeat; False (and :attr:`lost` set) when another took the lease."""
        if self.version is None:
            return False
        version = self.backend.replace(self._document(), self.version)
        if version is None:
            current = self.backend.read()
            self.lost = LeaseHolder.parse(current[0]) if current else LeaseHolder("", "?", 0, 0.0, 0.0)
            self.version = None
            return False
        self.version = version
        return True

    def check(self) -> None:
        """Raise :class:`LeaseLost` when another sync took this one's lease."""
        if self.lost is not None:
            raise LeaseLost(f"another sync ({self.lost.describe(self.clock())}) took over the lease "
                            f"{self.backend.where} of this sync, whose heartbeat stopped for more than "
                            f"{self.stale_after:.0f} s (a paused process?); this sync stops before publishing "
                            "anything: what it staged is dropped and the state stays as the other sync leaves it")

    def release(self) -> None:
        if self.version is not None:
            version, self.version = self.version, None
            self.backend.remove(version)

    def busy(self, holder: LeaseHolder, waited: float | None) -> OutputBusy:
        now = self.clock()
        how = (f"waited {waited:.0f} s (--wait-for-lock) and it still runs" if waited is not None
               else "pass --wait-for-lock SECONDS to wait for it")
        return OutputBusy(f"the output is being synced by another run ({holder.describe(now)}; lease "
                          f"{self.backend.where}): {how}. A holder that died is taken over once its heartbeat is "
                          f"{self.stale_after:.0f} s old (at once on the same host); exit {EXIT_BUSY} means "
                          "try again later", holder)


def lease_backend(storage: Any) -> LeaseBackend | None:
    """The lease backend of a storage: a local folder or S3 (None for any other, which holds no lease)."""
    if isinstance(storage, LocalStorage):
        return LocalLeaseBackend(storage)
    if isinstance(storage, S3Storage):
        return S3LeaseBackend(storage)
    return None


def acquire(lease: Lease, wait: float | None, *, sleep: Callable[[float], None] = time.sleep,
            waiting: Callable[[str], None] | None = None, poll: float = 2.0) -> None:
    """Take ``lease``, waiting up to ``wait`` seconds for a live holder (None or 0: not at all)."""
    began = lease.clock()
    told = False
    while True:
        holder = lease.try_acquire()
        if holder is None:
            return
        waited = lease.clock() - began
        if not wait or waited >= wait:
            raise lease.busy(holder, waited if wait else None)
        if waiting is not None and not told:
            waiting(f"waiting up to {wait:.0f} s for the sync that holds the output ({holder.describe(lease.clock())})")
            told = True
        sleep(min(poll, wait - waited))


@contextlib.contextmanager
def holding(storage: Any, wait: float | None = None, *, warn: Callable[[str], None] | None = None,
            heartbeat_every: float = HEARTBEAT_EVERY) -> Iterator[Lease | None]:
    """Hold the output's lease for the block, its heartbeat renewed by a thread; released on every way out."""
    backend = lease_backend(storage)
    if backend is None:
        yield None
        return
    lease = Lease(backend)
    acquire(lease, wait, waiting=warn)
    if lease.taken_from is not None and warn is not None:
        warn(f"took over the lease of the output from a sync that is gone ({lease.taken_from.describe(lease.clock())})")
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(heartbeat_every):
            try:
                if not lease.renew():
                    return
            except Exception:  # noqa: BLE001 - a storage hiccup: the next beat tries again (the limit is 8 beats)
                continue

    thread = threading.Thread(target=beat, name="output-lease-heartbeat", daemon=True)
    thread.start()
    try:
        yield lease
    finally:
        stop.set()
        thread.join(timeout=heartbeat_every)
        with contextlib.suppress(Exception):
            lease.release()


__all__ = ["EXIT_BUSY", "GUARD_KEY", "HEARTBEAT_EVERY", "LEASE_KEY", "STALE_AFTER", "Lease", "LeaseBackend",
           "LeaseHolder", "LeaseLost", "LocalLeaseBackend", "OutputBusy", "S3LeaseBackend", "acquire", "holding",
           "lease_backend", "pid_alive"]
