"""A file downloaded for each record: the runtime of ``FileUploader``.

For each record the stream keeps, :meth:`FileUploader.upload` finds the
download target in the record (the first value at the extractor's path: a
URL or an id, as text), requests it with the uploader's requester
(``stream_slice.extra_fields.download_target`` holds it), and hands the whole
response body to the current :class:`FileLanding`, which writes it in one
step (a file appears complete or not at all: a rename locally, one
``put_object`` on S3). The record then gets ``file_reference``:
``staging_file_url`` (where the file is), ``source_file_relative_path``
(``<stream>/<file name>``) and ``file_size_bytes``, Airbyte's three fields.

Where files land is the engine's choice, made with :func:`landing`: a Spark
task lands them beside the stream's files (``<stream folder>/_files/<name>``,
a folder Spark and pyarrow skip when reading the data); without one they go
to Airbyte's staging folder (``$AIRBYTE_STAGING_DIRECTORY`` when it exists,
else ``/tmp/airbyte-file-transfer``), under ``<stream>/<name>``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.requester import Requester
from framework.components.http.transport import HttpResponse
from framework.components.records.extraction import describe_path, find_records, json_type_name
from framework.components.records.selection import RecordSelector
from framework.components.slices import StreamSlice
from framework.errors import ReadError
from framework.interpolation import TemplateEngine
from framework.models import files as models
from framework.storage.local import LocalStorage
from framework.storage.objects import Storage

#: The record field that says where the file of a record is.
FILE_REFERENCE = "file_reference"
FILE_REFERENCE_SCHEMA: Mapping[str, Any] = {
    "type": ["null", "object"],
    "properties": {"staging_file_url": {"type": ["null", "string"]},
                   "source_file_relative_path": {"type": ["null", "string"]},
                   "file_size_bytes": {"type": ["null", "integer"]}},
}
DEFAULT_STAGING = "/tmp/airbyte-file-transfer"
STAGING_VARIABLE = "AIRBYTE_STAGING_DIRECTORY"
FILES_FOLDER = "_files/"


class FileNameError(ReadError):
    """A file name that would leave the stream's folder, or is empty."""

    default_failure_type = "config_error"


class FileLanding(Struct, frozen=True):
    """Where downloaded files go: ``storage`` under ``prefix`` (None: ``<stream>/``), each written in one step."""

    storage: Storage
    prefix: str | None = None

    def put(self, stream: str, name: str, content: bytes) -> str:
        """Write a file; answers where it is (a path, or ``s3://bucket/key``)."""
        key = (self.prefix if self.prefix is not None else f"{stream}/") + name
        self.storage.write_atomic(key, content)
        return self.storage.uri(key)


def staging_landing() -> FileLanding:
    """Airbyte's staging folder: ``$AIRBYTE_STAGING_DIRECTORY`` when that folder exists, else the default."""
    folder = os.environ.get(STAGING_VARIABLE, "")
    return FileLanding(LocalStorage(folder if folder and os.path.isdir(folder) else DEFAULT_STAGING))


_LANDING: ContextVar[FileLanding | None] = ContextVar("file_landing", default=None)


@contextlib.contextmanager
def landing(where: FileLanding) -> Iterator[FileLanding]:
    """Files downloaded in this block (in this thread) go to ``where``."""
    token = _LANDING.set(where)
    try:
        yield where
    finally:
        _LANDING.reset(token)


def stream_landing(storage: Storage, directory: str) -> FileLanding:
    """Beside a stream's files: ``<folder>/_files/<name>``, the folder being where ``directory`` (the start of the
    stream's object keys, which may end in a file name prefix) puts them."""
    return FileLanding(storage, directory[: directory.rfind("/") + 1] + FILES_FOLDER)


def current_landing() -> FileLanding:
    return _LANDING.get() or staging_landing()


def file_schema(schema: Mapping[str, Any]) -> dict:
    """A stream's schema with the ``file_reference`` property its records get."""
    out = dict(schema)
    properties = dict(out.get("properties") or {})
    properties.setdefault(FILE_REFERENCE, dict(FILE_REFERENCE_SCHEMA))
    out["properties"] = properties
    return out


def safe_file_name(name: str) -> str | None:
    """``name`` without leading slashes, or None when it is empty or steps out of its folder (``..``)."""
    name = name.lstrip("/")
    parts = name.split("/")
    if not name or any(part in ("..", ".") for part in parts) or "\\" in name:
        return None
    return name


class FileUploader(Struct, frozen=True):
    """Downloads the file of one record and records where it landed (see the module's doc)."""

    requester: Requester
    target_path: tuple[str, ...]
    file_name: str | None
    config: Mapping[str, Any]
    parameters: Mapping[str, Any]
    engine: TemplateEngine
    place: str | None = None

    def upload(self, record: dict, stream: str, where: FileLanding) -> None:
        found = find_records(record, self.target_path)
        if not found:
            raise ReadError(f"no download target in the record at {describe_path(self.target_path)}; set "
                            "file_uploader.download_target_extractor.field_path to where the file's URL is",
                            place=self.place)
        target = found[0]
        if not isinstance(target, str):
            raise ReadError(f"the download target at {describe_path(self.target_path)} is "
                            f"{json_type_name(target)}, not text (a URL or an id)", place=self.place)
        variables = {"config": self.config, "stream_state": {}, "next_page_token": None,
                     **StreamSlice(extra_fields={"download_target": target}).template_variables()}
        parts = self.requester.parts(variables)
        response: HttpResponse | None = self.requester.send(parts)
        if response is None:
            raise ReadError(f"the file at {self.requester.mask(target)} was not downloaded: the error handler "
                            "ignored its response", place=self.place)
        name = self.name_of(record)
        url = where.put(stream, name, response.content)
        record[FILE_REFERENCE] = {"staging_file_url": url, "source_file_relative_path": f"{stream}/{name}",
                                  "file_size_bytes": len(response.content)}

    def name_of(self, record: dict) -> str:
        if self.file_name is None:
            return str(uuid.uuid4())
        rendered = self.engine.evaluate(self.file_name, {"config": self.config, "parameters": self.parameters,
                                                         "record": record})
        name = safe_file_name(str(rendered))
        if name is None:
            raise FileNameError(f"the file name {rendered!r} is empty or leaves the stream's folder (`..`); change "
                                "file_uploader.filename_extractor", place=self.place)
        return name


class UploadingSelector(RecordSelector, frozen=True):
    """A record selector that downloads the file of every record it keeps."""

    uploader: FileUploader | None = None
    stream: str = ""

    def select_page(self, response: HttpResponse, variables: Mapping[str, Any]) -> tuple[list[dict], list[dict]]:
        page, records = super().select_page(response, variables)
        if self.uploader is not None and records:
            where = current_landing()
            for record in records:
                self.uploader.upload(record, self.stream, where)
        return page, records


def uploading(selector: RecordSelector, uploader: FileUploader, stream: str) -> RecordSelector:
    """``selector`` that also downloads each kept record's file with ``uploader``."""
    fields = {name: getattr(selector, name) for name in RecordSelector.__struct_fields__}
    return UploadingSelector(**fields, uploader=uploader, stream=stream)


@builds("FileUploader")
def build_file_uploader(model: models.FileUploader, ctx: BuildContext, path: tuple) -> FileUploader:
    extractor = model.download_target_extractor
    return FileUploader(
        requester=ctx.build(model.requester, path + ("requester",)),
        target_path=tuple(str(ctx.render(key, extractor.parameters)) for key in extractor.field_path),
        file_name=model.filename_extractor,
        config=ctx.config,
        parameters=model.parameters,
        engine=ctx.engine,
        place=ctx.place(path),
    )


__all__ = ["FILE_REFERENCE", "FileLanding", "FileUploader", "UploadingSelector", "build_file_uploader",
           "current_landing", "file_schema", "landing", "safe_file_name", "staging_landing", "stream_landing",
           "uploading"]
