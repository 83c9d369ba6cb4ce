"""A local folder as storage: temp file and rename, metadata in hidden sidecars.

An object ``a/b/f.parquet`` is written to ``a/b/.f.parquet.<random>.tmp`` and
renamed to ``a/b/f.parquet`` at commit, after its bytes were synced to disk;
the folder is synced after the rename so the new name survives a crash. Its
metadata lives in ``a/b/.f.parquet.meta.json``, written (atomically) just
before the rename, so an object never shows without its metadata. A crash
before commit leaves only a hidden temp file, which is never listed.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO

import orjson

from framework.errors import ConfigError, FrameworkError
from framework.storage.objects import ObjectInfo, WriterContext

_BUFFER = 1024 * 1024


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

    @staticmethod
    def sidecar(path: str) -> str:
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
        try:
            with open(self.sidecar(path), "rb") as handle:
                return {str(k): str(v) for k, v in orjson.loads(handle.read()).items()}
        except FileNotFoundError:
            return {}
        except (orjson.JSONDecodeError, AttributeError) as exc:
            raise FrameworkError(f"{self.sidecar(path)}: the metadata file is damaged ({exc}); delete it") from exc

    def read(self, key: str) -> bytes | None:
        try:
            with open(self.path(key), "rb") as handle:
                return handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def write_atomic(self, key: str, data: bytes, metadata: Mapping[str, str] | None = None) -> None:
        with self.open_object(key, metadata) as writer:
            writer.write(data)
            writer.commit()

    def delete(self, keys: Iterable[str]) -> None:
        for key in keys:
            path = self.path(key)
            for victim in (path, self.sidecar(path)):
                try:
                    os.unlink(victim)
                except FileNotFoundError:
                    pass

    def move(self, source: str, target: str) -> bool:
        """Rename ``source`` to ``target``, its metadata sidecar first (atomic per file, on one file system)."""
        src, dst = self.path(source), self.path(target)
        if not os.path.exists(src):
            if os.path.exists(dst):
                return False
            raise FrameworkError(f"cannot move {src} to {dst}: neither is there")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        try:
            os.replace(self.sidecar(src), self.sidecar(dst))
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
        self.metadata = {str(k): str(v) for k, v in (metadata or {}).items()}
        folder, name = os.path.split(self.final)
        os.makedirs(folder, exist_ok=True)
        self.temp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        self._file: BinaryIO = open(self.temp, "wb", buffering=_BUFFER)
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
            os.fsync(self._file.fileno())
            self._file.close()
            self._state = "sealed"

    def commit(self) -> None:
        if self._state in ("committed",):
            return
        if self._state == "aborted":
            raise FrameworkError(f"{self.final}: cannot commit an aborted object")
        self.seal()
        sidecar = LocalStorage.sidecar(self.final)
        if self.metadata:
            _replace_with(sidecar, orjson.dumps(self.metadata))
        else:
            try:
                os.unlink(sidecar)  # an older object of the same name may have left one
            except FileNotFoundError:
                pass
        os.replace(self.temp, self.final)
        _sync_folder(os.path.dirname(self.final))
        self._state = "committed"

    def abort(self) -> None:
        if self._state in ("committed", "aborted"):
            return
        try:
            self._file.close()
        finally:
            self._state = "aborted"
            try:
                os.unlink(self.temp)
            except FileNotFoundError:
                pass


def _replace_with(path: str, data: bytes) -> None:
    folder, name = os.path.split(path)
    temp = os.path.join(folder, f".{name.lstrip('.')}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "wb") as handle:
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
