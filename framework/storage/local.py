"""A local folder as storage: temp file and rename, metadata in a hidden folder of its own.

An object ``a/b/f.parquet`` is written to ``a/b/.f.parquet.<random>.tmp`` and
renamed to ``a/b/f.parquet`` at commit, after its bytes were synced to disk;
the folder is synced after the rename so the new name survives a crash. Its
metadata lives in ``.metadata/a/b/f.parquet.json`` under the root, written
(atomically) just before the rename, so an object never shows without its
metadata, and data folders hold data only (``read_parquet('output/items/*')``
in DuckDB or Spark reads them as they are). Outputs written before kept it in
a hidden sidecar beside the file (``a/b/.f.parquet.meta.json``): still read,
and removed with its object. A crash before commit leaves only a hidden temp
file, which is never listed.

A writer holds an exclusive ``flock`` on its temp file from the moment it
creates it until it commits or aborts; the kernel drops the lock when the
process dies, however it dies (SIGKILL included). So a temp file that is not
locked and a few seconds old belongs to a writer that is gone:
:meth:`LocalStorage.remove_stale_temporaries` (called at the start of a sync)
deletes those, and never a temp file another live run is writing.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO

import orjson

from framework.errors import ConfigError, FrameworkError
from framework.storage.objects import NothingToMove, ObjectInfo, WriterContext

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: temp files are told stale by their age alone
    fcntl = None  # type: ignore[assignment]

_BUFFER = 1024 * 1024

#: The hidden folder under the root that holds each object's metadata (``<key>.json``).
METADATA_FOLDER = ".metadata"
#: A temp file of this storage: ``.<name>.<32 hex>.tmp`` (objects, sidecars, the write probe).
TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{32}\.tmp$")
#: A temp file not locked is stale once this old (its writer locks it within microseconds of creating it).
STALE_AFTER = 10.0
#: Where locks cannot be taken (some network or FUSE file systems), a temp file is stale only once this old.
STALE_UNLOCKABLE_AFTER = 24 * 3600.0


class LocalStorage:
    """Objects as files under ``root``."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)

    def check_writable(self) -> None:
        """Raise :class:`~framework.errors.ConfigError` unless the root is a folder this process can write to.

        Called before a sync starts anything (Spark included): the folder is created if missing and a
        hidden probe file is written and removed. ``/dev/null``, a path under ``/proc``, a file, a
        read-only mount each get one message naming the path and the fix.
        """
        root = self.root
        fix = "pass --output a folder you can write to (it is created if missing)"
        if os.path.exists(root) and not os.path.isdir(root):
            raise ConfigError(f"the output {root} is not a folder; {fix}")
        try:
            os.makedirs(root, exist_ok=True)
            probe = os.path.join(root, f".write-probe.{uuid.uuid4().hex}.tmp")
            with open(probe, "wb") as handle:
                handle.write(b"probe")
            os.remove(probe)
        except OSError as exc:
            raise ConfigError(f"the output {root} cannot be written to ({exc.strerror or exc}); {fix}") from None

    # -------------------------------------------------------------- paths

    def path(self, key: str) -> str:
        """The file of ``key``; keys may not leave the root."""
        parts = key.strip("/").split("/")
        if not key.strip("/") or any(p in ("", ".", "..") for p in parts):
            raise ConfigError(f"object key {key!r} is not a clean relative path (no empty, `.` or `..` parts)")
        return os.path.join(self.root, *parts)

    def metadata_path(self, path: str) -> str:
        """Where the metadata of the object at ``path`` lives: under the root's hidden ``.metadata`` folder."""
        relative = os.path.relpath(path, self.root)
        return os.path.join(self.root, METADATA_FOLDER, relative + ".json")

    @staticmethod
    def sidecar(path: str) -> str:
        """Where outputs written before kept an object's metadata: a hidden file beside it."""
        folder, name = os.path.split(path)
        return os.path.join(folder, f".{name}.meta.json")

    def uri(self, key: str = "") -> str:
        return self.path(key) if key.strip("/") else self.root

    # ---------------------------------------------------------- operations

    def open_object(self, key: str, metadata: Mapping[str, str] | None = None) -> LocalObjectWriter:
        return LocalObjectWriter(self, key, metadata)

    def list(self, prefix: str = "", *, with_metadata: bool = True) -> list[ObjectInfo]:
        prefix = prefix.lstrip("/")
        base = prefix.rpartition("/")[0]
        start = os.path.join(self.root, *base.split("/")) if base else self.root
        found = []
        for folder, dirs, files in os.walk(start):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = os.path.relpath(folder, self.root)
            rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in files:
                key = rel + name
                if name.startswith(".") or not key.startswith(prefix):
                    continue
                path = os.path.join(folder, name)
                try:
                    size = os.stat(path).st_size
                except FileNotFoundError:  # deleted while listing
                    continue
                found.append(ObjectInfo(key, size, self._metadata(path) if with_metadata else None))
        found.sort(key=lambda info: info.key)
        return found

    def _metadata(self, path: str) -> dict[str, str]:
        for where in (self.metadata_path(path), self.sidecar(path)):
            try:
                with open(where, "rb") as handle:
                    return {str(k): str(v) for k, v in orjson.loads(handle.read()).items()}
            except FileNotFoundError:
                continue
            except (orjson.JSONDecodeError, AttributeError) as exc:
                raise FrameworkError(f"{where}: the metadata file is damaged ({exc}); delete it") from exc
        return {}

    def read(self, key: str) -> bytes | None:
        try:
            with open(self.path(key), "rb") as handle:
                return handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def read_tail(self, key: str, size: int) -> bytes | None:
        """The last ``size`` bytes of the object (all of it when smaller), or None when there is none."""
        try:
            with open(self.path(key), "rb") as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - size))
                return handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def write_atomic(self, key: str, data: bytes, metadata: Mapping[str, str] | None = None) -> None:
        with self.open_object(key, metadata) as writer:
            writer.write(data)
            writer.commit()

    def remove_stale_temporaries(self, prefix: str = "", *, older_than: float = STALE_AFTER,
                                 owned_by: Callable[[str], bool] | None = None) -> tuple[str, ...]:
        """Delete the temp files under ``prefix`` whose writer is gone; returns their keys (hidden names).

        A temp file is this storage's (``.<name>.<32 hex>.tmp``), matches
        ``owned_by(key)`` when given, is at least ``older_than`` seconds old, and
        no live process holds its lock (see the module docs). A file being
        written by a concurrent run is locked, so it stays.
        """
        prefix = prefix.lstrip("/")
        base = prefix.rpartition("/")[0]
        start = os.path.join(self.root, *base.split("/")) if base else self.root
        now = time.time()
        removed: list[str] = []
        for folder, dirs, files in os.walk(start):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = os.path.relpath(folder, self.root)
            rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in files:
                match = TEMPORARY.match(name)
                if match is None or not (rel + match.group("name")).startswith(prefix):
                    continue
                key = rel + name
                if owned_by is not None and not owned_by(key):
                    continue
                path = os.path.join(folder, name)
                if _remove_if_abandoned(path, now, older_than):
                    removed.append(key)
        return tuple(removed)

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            path = self.path(key)
            for victim in (path, self.metadata_path(path), self.sidecar(path)):
                try:
                    os.unlink(victim)
                except FileNotFoundError:
                    pass

    def move(self, source: str, target: str) -> bool:
        """Rename ``source`` to ``target``, its metadata first (atomic per file, on one file system)."""
        src, dst = self.path(source), self.path(target)
        if not os.path.exists(src):
            if os.path.exists(dst):
                return False
            raise NothingToMove(f"cannot move {src} to {dst}: neither is there")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        for old, new in ((self.metadata_path(src), self.metadata_path(dst)), (self.sidecar(src), self.sidecar(dst))):
            try:
                if os.path.exists(old):
                    os.makedirs(os.path.dirname(new), exist_ok=True)
                os.replace(old, new)
            except FileNotFoundError:  # no metadata, or moved before a crash
                pass
        os.replace(src, dst)
        _sync_folder(os.path.dirname(dst))
        return True


class LocalObjectWriter(WriterContext):
    """Bytes of one object in a hidden temp file next to its final name."""

    def __init__(self, storage: LocalStorage, key: str, metadata: Mapping[str, str] | None):
        self.key = key
        self.final = storage.path(key)
        self._metadata_path = storage.metadata_path(self.final)
        self._legacy_sidecar = storage.sidecar(self.final)
        self.metadata = {str(k): str(v) for k, v in (metadata or {}).items()}
        folder, name = os.path.split(self.final)
        os.makedirs(folder, exist_ok=True)
        self.temp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        self._file: BinaryIO = open(self.temp, "wb", buffering=_BUFFER)
        _lock(self._file.fileno())  # held until commit or abort: the file is not abandoned while this lives
        self._count = 0
        self._state = "open"  # open -> sealed -> committed | aborted

    def write(self, data: Any) -> int:
        if self._state != "open":
            raise FrameworkError(f"{self.final}: cannot write after the object was {self._state}")
        self._file.write(data)
        size = len(data) if isinstance(data, (bytes, bytearray)) else memoryview(data).nbytes
        self._count += size
        return size

    def tell(self) -> int:
        return self._count

    @property
    def bytes_written(self) -> int:
        return self._count

    def seal(self) -> None:
        if self._state == "open":
            self._file.flush()
            os.fsync(self._file.fileno())  # the file stays open (and locked) until commit or abort
            self._state = "sealed"

    def commit(self) -> None:
        if self._state in ("committed",):
            return
        if self._state == "aborted":
            raise FrameworkError(f"{self.final}: cannot commit an aborted object")
        self.seal()
        if self.metadata:
            os.makedirs(os.path.dirname(self._metadata_path), exist_ok=True)
            _replace_with(self._metadata_path, orjson.dumps(self.metadata))
            stale: tuple[str, ...] = (self._legacy_sidecar,)
        else:
            stale = (self._metadata_path, self._legacy_sidecar)
        for path in stale:  # an older object of the same name may have left metadata
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        os.replace(self.temp, self.final)
        self._file.close()  # the lock goes with it
        _sync_folder(os.path.dirname(self.final))
        self._state = "committed"

    def abort(self) -> None:
        if self._state in ("committed", "aborted"):
            return
        self._state = "aborted"
        try:
            os.unlink(self.temp)  # while the lock is still held, so no cleaner races for it
        except FileNotFoundError:
            pass
        finally:
            try:
                self._file.close()
            except OSError:  # its buffered bytes could not be flushed (a full disk): they were to be dropped
                pass


def _replace_with(path: str, data: bytes) -> None:
    folder, name = os.path.split(path)
    temp = os.path.join(folder, f".{name.lstrip('.')}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "wb") as handle:
            _lock(handle.fileno())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise


def _lock(fd: int) -> None:
    """Take the writer's exclusive lock on its temp file (nothing where the file system has no locks)."""
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # no locks here: the file is then told stale by its age alone
        pass


def _remove_if_abandoned(path: str, now: float, older_than: float) -> bool:
    """Delete the temp file at ``path`` when its writer is gone (old enough, and nobody holds its lock)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:  # committed or aborted meanwhile
        return False
    except OSError:
        return False
    try:
        age = now - os.fstat(fd).st_mtime
        if age < older_than:
            return False
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a live writer holds it
                return False
            except OSError:  # cannot tell: only a very old file is taken as abandoned
                if age < max(older_than, STALE_UNLOCKABLE_AFTER):
                    return False
        elif age < max(older_than, STALE_UNLOCKABLE_AFTER):
            return False
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True
    finally:
        os.close(fd)


def _sync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some systems cannot open folders; the rename is still atomic there
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["LocalObjectWriter", "LocalStorage"]
