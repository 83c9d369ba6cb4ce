"""Files: a CSV response read through a temporary file, and files downloaded for each record."""

from typing import Annotated, Literal

from pydantic import Field

from framework.models.base import BASE, Component, spec
from framework.models.custom import CustomRecordExtractor
from framework.models.records import DpathExtractor
from framework.models.requests import HttpRequester

# a file name template sees the record it is downloaded for
FILE_NAME = BASE | {"record"}


class ResponseToFileExtractor(Component):
    """Records from a CSV response body, read through a temporary file (gzip or zlib bodies unpacked).

    Every value is text; an empty cell is null, and so are the usual missing-value words (`NA`, `N/A`,
    `NULL`, `None`, `NaN`, `null`...) unless `preserve_na_values` is on.
    """

    type: Literal["ResponseToFileExtractor"] = spec("Component type.", "ResponseToFileExtractor",
                                                    "ResponseToFileExtractor")
    preserve_na_values: bool = spec(
        "Keep words such as `NA`, `N/A`, `NULL`, `None` and `NaN` as text instead of reading them as null "
        "(empty cells are null either way).", True, False)


class FileUploader(Component):
    """Downloads a file for each record: it lands beside the stream's files, and the record says where."""

    type: Literal["FileUploader"] = spec("Component type.", "FileUploader", "FileUploader")
    requester: HttpRequester = spec(
        "How the file is requested; `stream_slice.extra_fields.download_target` is the value the download "
        "target extractor found in the record.",
        {"type": "HttpRequester", "url_base": "{{ stream_slice.extra_fields.download_target }}", "path": ""})
    download_target_extractor: DpathExtractor = spec(
        "Where the file's URL (or id) is in the record: the first value found, which must be text.",
        {"type": "DpathExtractor", "field_path": ["content_url"]})
    file_extractor: Annotated[DpathExtractor | CustomRecordExtractor, Field(discriminator="type")] | None = spec(
        "Accepted as Airbyte accepts it, and not used (as in Airbyte): the whole response body is the file.",
        {"type": "DpathExtractor", "field_path": ["content"]}, None)
    filename_extractor: str | None = spec(
        "Template of the file's name (a path) under the stream's folder; a random UUID when left out.",
        "{{ record.id }}_{{ record.file_name }}", None, template=FILE_NAME)

