"""FileUploader: a file per record, written in one step through the storage, its reference in the record."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from framework.components.context import BuildContext
from framework.components.http.transport import FunctionTransport
from framework.components.records.file_upload import (
    FileLanding,
    FileNameError,
    current_landing,
    landing,
    safe_file_name,
    staging_landing,
    stream_landing,
)
from framework.errors import ReadError
from framework.models.files import FileUploader
from framework.storage import LocalStorage, S3Storage

PATH = ("streams", 0, "file_uploader")


def uploader(filename: str | None = "{{ record.id }}/{{ record.name }}", field_path=("links", "download"),
             bodies: dict | None = None):
    seen: list[str] = []

    def handler(request):
        seen.append(request.url)
        return 200, {"Content-Type": "application/pdf"}, (bodies or {}).get(request.url, b"%PDF " + request.url.encode())

    model = FileUploader.model_validate({
        "type": "FileUploader",
        "requester": {"type": "HttpRequester", "url_base": "http://files.example",
                      "path": "/get/{{ stream_slice.extra_fields.download_target }}"},
        "download_target_extractor": {"type": "DpathExtractor", "field_path": list(field_path)},
        **({"filename_extractor": filename} if filename is not None else {})})
    ctx = BuildContext(config={}, transport=FunctionTransport(handler), sleep=lambda s: None)
    return ctx.build(model, PATH), seen


def test_the_file_lands_under_the_stream_and_the_record_says_where(tmp_path):
    upload, seen = uploader()
    record = {"id": 7, "name": "report.pdf", "links": {"download": "abc"}}
    upload.upload(record, "docs", FileLanding(LocalStorage(str(tmp_path))))
    assert seen == ["http://files.example/get/abc"]
    assert record["file_reference"] == {"staging_file_url": str(tmp_path / "docs" / "7" / "report.pdf"),
                                        "source_file_relative_path": "docs/7/report.pdf",
                                        "file_size_bytes": len(b"%PDF http://files.example/get/abc")}
    assert (tmp_path / "docs/7/report.pdf").read_bytes() == b"%PDF http://files.example/get/abc"


def test_without_a_file_name_a_uuid_names_the_file(tmp_path):
    upload, _ = uploader(filename=None)
    record = {"links": {"download": "x"}}
    upload.upload(record, "docs", FileLanding(LocalStorage(str(tmp_path))))
    name = record["file_reference"]["source_file_relative_path"].removeprefix("docs/")
    assert len(name) == 36 and (tmp_path / "docs" / name).is_file()


@pytest.mark.parametrize("name", ["../escape", "a/../../b", "", "/", "a/./b"])
def test_names_that_leave_the_folder_are_refused(tmp_path, name):
    upload, _ = uploader(filename=name)
    with pytest.raises(FileNameError, match="leaves the stream's folder"):
        upload.upload({"links": {"download": "x"}}, "docs", FileLanding(LocalStorage(str(tmp_path))))
    assert not list(tmp_path.rglob("*"))
    assert safe_file_name("//a/b") == "a/b"


def test_a_record_without_a_text_target_is_an_error_naming_the_path(tmp_path):
    upload, _ = uploader()
    with pytest.raises(ReadError, match="no download target in the record at `links.download`"):
        upload.upload({"links": {}}, "docs", FileLanding(LocalStorage(str(tmp_path))))
    with pytest.raises(ReadError, match="is integer, not text"):
        upload.upload({"links": {"download": 5}}, "docs", FileLanding(LocalStorage(str(tmp_path))))


def test_beside_the_stream_files_is_a_hidden_folder_of_the_stream_folder(tmp_path):
    storage = LocalStorage(str(tmp_path))
    assert stream_landing(storage, "docs/2024_01_02_17_").prefix == "docs/_files/"
    assert stream_landing(storage, "exports/docs/").prefix == "exports/docs/_files/"
    assert stream_landing(storage, "flat_").prefix == "_files/"


def test_landing_is_per_thread_and_defaults_to_airbyte_staging(tmp_path, monkeypatch):
    def where(found: FileLanding) -> tuple[str, str | None]:
        return found.storage.uri(), found.prefix

    monkeypatch.setenv("AIRBYTE_STAGING_DIRECTORY", str(tmp_path))
    assert where(current_landing()) == (str(tmp_path), None)
    mine = FileLanding(LocalStorage(str(tmp_path / "mine")), "s/_files/")
    other: list = []
    with landing(mine):
        thread = threading.Thread(target=lambda: other.append(where(current_landing())))
        thread.start()
        thread.join()
        assert current_landing() is mine
    assert other == [(str(tmp_path), None)] and where(current_landing()) == (str(tmp_path), None)
    monkeypatch.setenv("AIRBYTE_STAGING_DIRECTORY", str(tmp_path / "missing"))
    assert staging_landing().storage.uri() == str(Path("/tmp/airbyte-file-transfer"))


def test_on_s3_the_file_is_one_object_and_the_reference_its_address(s3_client, s3_bucket):
    upload, _ = uploader()
    storage = S3Storage(s3_bucket, "base", s3_client)
    record = {"id": 1, "name": "a.bin", "links": {"download": "k"}}
    upload.upload(record, "docs", stream_landing(storage, "docs/2024_"))
    assert record["file_reference"]["staging_file_url"] == f"s3://{s3_bucket}/base/docs/_files/1/a.bin"
    body = s3_client.get_object(Bucket=s3_bucket, Key="base/docs/_files/1/a.bin")["Body"].read()
    assert body == b"%PDF http://files.example/get/k"
