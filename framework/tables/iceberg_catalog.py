"""Where an Iceberg table is registered: the catalog settings, checked, and a session on the catalog.

A catalog is given as a mapping (the destination settings' `catalog`):

* ``{"type": "sqlite", "path": ...}`` (the default): pyiceberg's ``SqlCatalog`` in one SQLite file, inside the
  output folder (``<output>/_airbyte_state/iceberg_catalog.db``); nothing to start. On S3 the file is an
  object: a session downloads it, and a commit uploads it again in one PUT, which is then the commit's
  atomic step (a driver killed before it leaves the table as it was). The output's lease keeps two syncs
  from sharing it; inside one process a lock per file serialises the streams' commits.
* ``{"type": "rest", "uri": ..., "warehouse": ..., "credential": ..., "token": ...}``: an Iceberg REST
  catalog (Polaris, Nessie, Glue's and Unity's Iceberg REST endpoints, Lakekeeper...). ``credential`` is an
  OAuth2 client ``id:secret``, ``token`` a bearer token; both are masked in every message.

``storage_options`` are the object store's settings in the spelling deltalake takes (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, any case) or
pyiceberg's own FileIO properties (``s3.endpoint``...), which pass through as they are.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from framework.errors import ConfigError, StorageError
from framework.masking import Masker

if TYPE_CHECKING:
    import pyarrow.fs as pafs
    from pyiceberg.catalog import Catalog

CATALOG_NAME = "airbyte"
CATALOG_TYPES = ("sqlite", "rest")

#: deltalake's (object_store's) spelling of a setting -> pyiceberg's FileIO property.
_FILE_IO_KEYS = {
    "aws_access_key_id": "s3.access-key-id", "access_key_id": "s3.access-key-id",
    "aws_secret_access_key": "s3.secret-access-key", "secret_access_key": "s3.secret-access-key",
    "aws_session_token": "s3.session-token", "session_token": "s3.session-token", "aws_token": "s3.session-token",
    "aws_region": "s3.region", "region": "s3.region", "aws_default_region": "s3.region",
    "aws_endpoint_url": "s3.endpoint", "aws_endpoint": "s3.endpoint", "endpoint_url": "s3.endpoint",
    "endpoint": "s3.endpoint",
}
_SECRET_IO_KEYS = ("s3.secret-access-key", "s3.session-token")


@dataclass(frozen=True)
class IcebergCatalogSettings:
    """A catalog's settings, checked: ``sqlite`` with the file's ``path``, or ``rest`` with its ``uri``."""

    type: str = "sqlite"
    path: str = ""
    uri: str = ""
    warehouse: str = ""
    credential: str = field(default="", repr=False)
    token: str = field(default="", repr=False)
    properties: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, catalog: Mapping[str, Any] | None) -> IcebergCatalogSettings:
        """Check a `catalog` mapping; a :class:`ConfigError` names the setting at fault and its fix."""
        data = dict(catalog or {})
        kind = str(data.pop("type", "sqlite") or "sqlite").lower()
        if kind not in CATALOG_TYPES:
            raise ConfigError(f"destination setting `format.catalog.type` is {kind!r}: Iceberg catalogs are "
                              f"{' or '.join(CATALOG_TYPES)} (Glue, Nessie, Polaris and Unity are REST catalogs: "
                              "give `type: rest` and their REST endpoint as `uri`)")
        text = {key: _text(value) for key, value in data.items()
                if key in ("path", "uri", "warehouse", "credential", "token")}
        extra = data.get("properties") or {}
        if not isinstance(extra, Mapping):
            raise ConfigError("destination setting `format.catalog.properties` must be an object of strings")
        settings = cls(type=kind, properties={str(k): str(v) for k, v in extra.items()}, **text)
        if kind == "sqlite" and not settings.path:
            raise ConfigError("destination setting `format.catalog.path` is missing: the SQLite catalog needs "
                              "the file it lives in (by default `<output>/_airbyte_state/iceberg_catalog.db`)")
        if kind == "rest" and not settings.uri.startswith(("http://", "https://")):
            raise ConfigError(f"destination setting `format.catalog.uri` is {settings.uri!r}: a REST catalog "
                              "needs its endpoint's http(s):// URL, e.g. `https://polaris.example.com/api/catalog`")
        return settings

    def secrets(self) -> tuple[str, ...]:
        values = [self.credential, self.token]
        if ":" in self.credential:  # an OAuth2 client id:secret; the secret alone may appear too
            values.append(self.credential.split(":", 1)[1])
        return tuple(value for value in values if value)

    def identity(self) -> str:
        """Which catalog this is, as a table records it (no secret in it): the SQLite file, or the REST
        endpoint and warehouse."""
        if self.type == "sqlite":
            path = self.path.removeprefix("file://")
            return path if "://" in path else os.path.abspath(path)
        return f"{self.uri.rstrip('/')}#{self.warehouse}"

    def describe(self) -> str:
        """The catalog as a message names it (no secret in it)."""
        return f"the SQLite catalog {self.path}" if self.type == "sqlite" else f"the REST catalog {self.uri}"


def _text(value: Any) -> str:
    """A setting's text; a pydantic ``SecretStr`` gives its secret (it is masked in messages, never printed)."""
    if value is None:
        return ""
    reveal = getattr(value, "get_secret_value", None)
    return str(reveal() if callable(reveal) else value)


def file_io_properties(storage_options: Mapping[str, str]) -> dict[str, str]:
    """pyiceberg's FileIO properties for these object store settings (see the module's docstring)."""
    props = {"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"}
    for key, value in storage_options.items():
        if value is None or value == "":
            continue
        name = key.lower()
        if name in _FILE_IO_KEYS:
            props[_FILE_IO_KEYS[name]] = str(value)
        elif "." in key:  # pyiceberg's own spelling
            props[key] = str(value)
    if "s3.endpoint" in props:  # a non-AWS endpoint (MinIO, moto): buckets in the path
        props.setdefault("s3.path-style-access", "true")
    return props


def masker_for(settings: IcebergCatalogSettings, storage_options: Mapping[str, str]) -> Masker:
    """The masker every message of a table goes through: the catalog's credentials and the store's keys."""
    io = file_io_properties(storage_options)
    return Masker.of(()).with_credentials([*settings.secrets(), *(io.get(key, "") for key in _SECRET_IO_KEYS)])


def filesystem(location: str, storage_options: Mapping[str, str]) -> pafs.FileSystem:
    """A pyarrow filesystem for `location` (local or ``s3://``), for listing and deleting files."""
    import pyarrow.fs as pafs

    if not location.startswith(("s3://", "s3a://")):
        return pafs.LocalFileSystem()
    io = file_io_properties(storage_options)
    endpoint = io.get("s3.endpoint", "")
    scheme = "http" if endpoint.startswith("http://") else "https"
    return pafs.S3FileSystem(
        access_key=io.get("s3.access-key-id"), secret_key=io.get("s3.secret-access-key"),
        session_token=io.get("s3.session-token"), region=io.get("s3.region", "us-east-1"),
        endpoint_override=endpoint.split("://", 1)[-1] or None, scheme=scheme)


def fs_path(location: str) -> str:
    """A location as pyarrow's filesystem names it (``bucket/key`` for S3, the path itself locally)."""
    for prefix in ("s3://", "s3a://"):
        if location.startswith(prefix):
            return location[len(prefix):]
    return location.removeprefix("file://")


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock(key: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


class CatalogAccess:
    """Sessions on one catalog: ``with access.session() as catalog`` gives a pyiceberg ``Catalog`` to load,
    create and commit tables through; a SQLite file on S3 is fetched before and put back after."""

    def __init__(self, settings: IcebergCatalogSettings, storage_options: Mapping[str, str], masker: Masker):
        self.settings = settings
        self._storage_options = dict(storage_options)
        self._io = file_io_properties(storage_options)
        self.io_properties = dict(self._io)
        self._mask = masker
        self._catalog: Catalog | None = None
        remote = settings.type == "sqlite" and settings.path.startswith(("s3://", "s3a://"))
        self._remote_db = settings.path if remote else None

    @contextmanager
    def session(self, write: bool = False) -> Iterator[Catalog]:
        """A catalog to use inside the block; with `write`, a SQLite object on S3 is put back when it changed
        (a read leaves the bucket as it was, even when the catalog file did not exist yet)."""
        if self._remote_db is None:
            with _lock(self.settings.path or self.settings.uri):
                yield self._connect(self._local_db_path())
            return
        with _lock(self._remote_db), tempfile.TemporaryDirectory(prefix="iceberg-catalog-") as folder:
            local = os.path.join(folder, "catalog.db")
            before = self._download(local)
            yield self._connect(local, cache=False)
            if write and _digest(local) != before:
                self._upload(local)

    def _local_db_path(self) -> str:
        path = os.path.abspath(self.settings.path.removeprefix("file://"))
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"destination setting `format.catalog.path`: cannot create the folder of "
                              f"{path} ({exc.strerror}); give a writable output folder") from None
        return path

    def _connect(self, db_path: str, cache: bool = True) -> Catalog:
        if cache and self._catalog is not None:
            return self._catalog
        catalog = self._open(db_path)
        if cache:
            self._catalog = catalog
        return catalog

    def _open(self, db_path: str) -> Catalog:
        settings = self.settings
        try:
            if settings.type == "sqlite":
                from pyiceberg.catalog.sql import SqlCatalog

                return SqlCatalog(CATALOG_NAME, **{"uri": f"sqlite:///{db_path}", **self._io,
                                                   **settings.properties})
            from pyiceberg.catalog.rest import RestCatalog

            props = {"uri": settings.uri, **self._io, **settings.properties}
            props.update({key: value for key, value in (("warehouse", settings.warehouse),
                          ("credential", settings.credential), ("token", settings.token)) if value})
            return RestCatalog(CATALOG_NAME, **props)
        except Exception as exc:  # noqa: BLE001 - pyiceberg raises its transport's errors (requests, SQLAlchemy), unwrapped
            setting = "format.catalog.path" if settings.type == "sqlite" else "format.catalog.uri"
            raise ConfigError(self._mask(
                f"destination setting `{setting}`: cannot open {settings.describe()} "
                f"({type(exc).__name__}: {exc}); check that it is reachable and its credentials are right")) from None

    def _download(self, local: str) -> str | None:
        assert self._remote_db is not None
        fs = filesystem(self._remote_db, self._storage_options)
        try:
            with fs.open_input_stream(fs_path(self._remote_db)) as stream:
                data = stream.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(self._mask(f"destination setting `format.catalog.path`: cannot read "
                                         f"{self._remote_db} ({exc}); check the bucket and its keys")) from None
        with open(local, "wb") as file:
            file.write(data)
        return _digest(local)

    def _upload(self, local: str) -> None:
        assert self._remote_db is not None
        fs = filesystem(self._remote_db, self._storage_options)
        with open(local, "rb") as file:
            data = file.read()
        try:
            with fs.open_output_stream(fs_path(self._remote_db)) as stream:  # one PUT: the commit's atomic step
                stream.write(data)
        except OSError as exc:
            raise StorageError(self._mask(f"the Iceberg catalog {self._remote_db} could not be written ({exc}): "
                                          "the last commit is not made")) from None


def _digest(path: str) -> str | None:
    if not os.path.exists(path):
        return None
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()
