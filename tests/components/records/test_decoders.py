"""Response formats (framework/components/records/decoders.py) as the extractor reads them."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import tracemalloc
import zipfile
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from requests.structures import CaseInsensitiveDict

from framework.components.context import BuildContext
from framework.components.http.request import HttpRequest
from framework.components.http.transport import HttpResponse
from framework.components.records import decoders
from framework.components.records.decoders import pagination_capable
from framework.components.records.extraction import DpathExtractor, records_of
from framework.errors import ConfigError, DecodeError
from framework.models import decoders as models


def decoder_of(model: Any, place: str | None = None) -> decoders.ResponseDecoder:
    """The runtime of a decoder model, built as a manifest's is (``place``: where its errors say it is)."""
    return BuildContext({}, locate=lambda path: place).build(model, ("decoder",))


def streamed(body: bytes, content_type: str = "application/octet-stream") -> HttpResponse:
    return HttpResponse(200, CaseInsensitiveDict({"Content-Type": content_type}), None,
                        HttpRequest("GET", "http://api/x", stream=True), stream=io.BytesIO(body))


def extract(model: Any, body: bytes, field_path: tuple[str, ...] = ()) -> list[dict]:
    return DpathExtractor(field_path, decoder=decoder_of(model)).extract(streamed(body))


def batches(model: Any, body: bytes, field_path: tuple[str, ...] = ()) -> list[list[dict]]:
    return list(DpathExtractor(field_path, decoder=decoder_of(model)).extract_batches(streamed(body)))


# -- JSON lines ---------------------------------------------------------------------------------------------

# 64-bit integers: wider ones become floats, as on the JSON path (orjson; tests/parity/README.md says so)
int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
objects = st.dictionaries(st.text(max_size=5), st.one_of(int64, st.text(max_size=8), st.none(),
                                                          st.lists(int64, max_size=3)),
                          min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(st.lists(objects, max_size=30), st.integers(min_value=1, max_value=64), st.booleans())
def test_json_lines_read_every_object_whatever_the_block_size(records, block, crlf):
    ending = b"\r\n" if crlf else b"\n"
    body = b"".join(json.dumps(r).encode() + ending for r in records)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decoders, "BATCH_BYTES", block)
        assert [r for batch in batches(models.JsonlDecoder(), body) for r in batch] == records


def test_json_lines_skip_bad_and_blank_lines_drop_empty_objects_and_spread_arrays(caplog):
    body = b'{"a": 1}\n\nnot json\n{}\n[{"b": 2}, {"c": 3}]\n{"e": 4}'
    assert extract(models.JsonlDecoder(), body) == [{"a": 1}, {"b": 2}, {"c": 3}, {"e": 4}]
    assert "not json" in caplog.text


def test_json_lines_with_nan_are_read_as_pythons_json_reads_them():
    [record] = extract(models.JsonlDecoder(), b'{"id": 1, "x": NaN}\n')
    assert record["id"] == 1 and math.isnan(record["x"])


def test_a_field_path_is_applied_to_every_line():
    body = b'{"data": [{"id": 1}, {"id": 2}]}\n{"data": {"id": 3}}\n{"data": {}}\n{"other": 1}\n'
    assert extract(models.JsonlDecoder(), body, ("data",)) == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert extract(models.JsonlDecoder(), b'{"a": {"x": {"id": 1}, "y": {"id": 2}}}\n', ("a", "*")) == [
        {"id": 1}, {"id": 2}]


def test_a_line_that_is_not_an_object_fails_naming_the_request():
    with pytest.raises(DecodeError, match="must be JSON objects.*GET http://api/x"):
        extract(models.JsonlDecoder(), b'{"a": 1}\n"text"\n')


# -- CSV ----------------------------------------------------------------------------------------------------

cells = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00"), max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(cells, min_size=3, max_size=3), max_size=20), st.sampled_from([",", ";", "\t", "|"]))
def test_csv_rows_come_back_as_written(rows, delimiter):
    header = ["id", "name", "note"]
    text = io.StringIO()
    writer = csv.writer(text, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    model = models.CsvDecoder(delimiter="\\t" if delimiter == "\t" else delimiter)
    assert extract(model, text.getvalue().encode()) == [dict(zip(header, row)) for row in rows]


def test_short_rows_get_nulls_long_rows_lose_their_extra_values_blank_lines_are_skipped():
    body = b"a,b,c\n1,2,3\n4\n\n5,6,7,8\n"
    assert extract(models.CsvDecoder(), body) == [
        {"a": "1", "b": "2", "c": "3"}, {"a": "4", "b": None, "c": None}, {"a": "5", "b": "6", "c": "7"}]


def test_values_set_to_none_encoding_and_quoted_newlines():
    body = 'nom;ville;note\n"Zoë";"Genève\nSuisse";N/A\nLéa;;x\n'.encode("latin-1")
    model = models.CsvDecoder(delimiter=";", encoding="latin-1", set_values_to_none=["N/A", ""])
    assert extract(model, body) == [{"nom": "Zoë", "ville": "Genève\nSuisse", "note": None},
                                    {"nom": "Léa", "ville": None, "note": "x"}]


def test_line_separators_other_than_newline_stay_inside_their_field():
    body = 'a,b\n"x\u2028y",p\x0cq\n"m\nn",z\n'.encode()
    assert extract(models.CsvDecoder(), body) == [{"a": "x\u2028y", "b": "p\x0cq"}, {"a": "m\nn", "b": "z"}]


def test_csv_rows_come_in_bounded_batches(monkeypatch):
    monkeypatch.setattr(decoders, "BATCH_ROWS", 3)
    body = b"n\n" + b"".join(b"%d\n" % i for i in range(10))
    assert [len(batch) for batch in batches(models.CsvDecoder(), body)] == [3, 3, 3, 1]


def test_a_body_in_another_encoding_fails_with_the_format_and_request():
    with pytest.raises(DecodeError, match=r"could not be read as CsvDecoder \(HTTP 200.*'ascii' codec"):
        extract(models.CsvDecoder(encoding="ascii"), "a\né\n".encode())


@pytest.mark.parametrize("delimiter", ["ab", "\\x", ""])
def test_a_delimiter_of_more_than_one_character_is_refused_when_built(delimiter):
    with pytest.raises(ConfigError, match="one character"):
        decoder_of(models.CsvDecoder(delimiter=delimiter), "m.yaml:3:5")


def test_an_unknown_encoding_is_refused_when_built():
    with pytest.raises(ConfigError, match="unknown text encoding 'utf-99'"):
        decoder_of(models.CsvDecoder(encoding="utf-99"))


# -- lines of text, XML, JSON items ------------------------------------------------------------------------


def test_iterable_lines_become_record_objects_with_every_line_ending():
    body = "a\r\nb\rc\n\nd é".encode()
    assert extract(models.IterableDecoder(), body) == [
        {"record": "a"}, {"record": "b"}, {"record": "c"}, {"record": ""}, {"record": "d é"}]


def test_xml_becomes_an_object_with_attributes_and_text():
    body = b'<r><item id="1"><name>A</name></item><item id="2">B</item><one x="y"/></r>'
    assert extract(models.XmlDecoder(), body, ("r", "item")) == [{"@id": "1", "name": "A"},
                                                                 {"@id": "2", "#text": "B"}]
    assert extract(models.XmlDecoder(), body, ("r", "one")) == [{"@x": "y"}]
    assert extract(models.XmlDecoder(), b"  ") == []


def test_a_body_that_is_not_xml_fails_but_a_paginator_sees_an_empty_object():
    with pytest.raises(DecodeError, match="as XmlDecoder"):
        extract(models.XmlDecoder(), b"<r><unclosed></r>")
    xml = decoders.XmlDocument()
    assert xml.pagination_body(b"<r><unclosed></r>") == {} and xml.pagination_body(b"") == {}
    assert xml.pagination_body(b"<r><next>2</next></r>") == {"r": {"next": "2"}}


def test_json_items_walk_the_path_and_step_into_arrays():
    body = orjson.dumps({"data": [{"users": [{"id": 1}, {"id": 2}]}, {"users": [{"id": 3}]}], "item": 0})
    assert extract(models.JsonItemsDecoder(items_path="data.item.users"), body) == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert extract(models.JsonItemsDecoder(items_path="data.missing"), body) == []
    latin = '{"rows": [{"n": "é"}]}'.encode("latin-1")
    assert extract(models.JsonItemsDecoder(items_path="rows", encoding="latin-1"), latin) == [{"n": "é"}]


# -- gzip and zip -------------------------------------------------------------------------------------------


def test_gzip_is_unpacked_when_the_body_is_gzip_and_read_as_it_is_otherwise():
    lines = b'{"id": 1}\n{"id": 2}\n'
    model = models.GzipDecoder(decoder=models.JsonlDecoder())
    assert extract(model, gzip.compress(lines)) == extract(model, lines) == [{"id": 1}, {"id": 2}]
    twice = models.GzipDecoder(decoder=models.GzipDecoder(decoder=models.CsvDecoder()))
    assert extract(twice, gzip.compress(gzip.compress(b"a\n1\n"))) == [{"a": "1"}]


def test_json_in_gzip_gives_the_items_of_a_list_as_documents():
    model = models.GzipDecoder(decoder=models.JsonDecoder())
    assert extract(model, gzip.compress(b'[{"data": {"id": 1}}, {"data": {"id": 2}}]'), ("data",)) == [
        {"id": 1}, {"id": 2}]
    with pytest.raises(DecodeError, match="not JSON"):
        extract(model, gzip.compress(b"{oops"))


def test_a_truncated_gzip_body_fails():
    with pytest.raises(DecodeError, match="GzipDecoder"):
        extract(models.GzipDecoder(decoder=models.JsonlDecoder()), gzip.compress(b'{"id": 1}\n' * 100)[:-12])


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_every_file_of_a_zip_is_read_in_order():
    body = _zip({"b.jsonl": b'{"id": 1}\n', "a.jsonl": b'{"id": 2}\n{"id": 3}\n'})
    assert extract(models.ZipfileDecoder(decoder=models.JsonlDecoder()), body) == [{"id": 1}, {"id": 2}, {"id": 3}]


def test_a_bad_zip_or_a_bad_file_in_it_fails_naming_it():
    with pytest.raises(DecodeError, match="ZipfileDecoder"):
        extract(models.ZipfileDecoder(decoder=models.CsvDecoder()), b"not a zip")
    body = _zip({"ok.json": b'{"id": 1}', "bad.json": b"{"})
    with pytest.raises(DecodeError, match="file `bad.json` of the zip archive"):
        extract(models.ZipfileDecoder(decoder=models.JsonDecoder()), body)


# -- what Airbyte lets a paginator read; documents to records -----------------------------------------------


def test_only_json_xml_and_json_in_gzip_can_be_paged():
    assert pagination_capable(None) and pagination_capable(models.XmlDecoder())
    assert pagination_capable(models.GzipDecoder(decoder=models.JsonDecoder()))
    assert not pagination_capable(models.GzipDecoder(decoder=models.JsonlDecoder()))
    assert not pagination_capable(models.CsvDecoder()) and not pagination_capable(models.IterableDecoder())


def test_records_of_drops_empty_matches_but_keeps_list_items():
    assert records_of([{}, {"a": 1}, [{}, {"b": 2}], None], ()) == [{"a": 1}, {}, {"b": 2}]
    assert records_of([{"d": {}}, {"d": [{}]}, {"d": None}], ("d",)) == [{}]


# -- streaming ----------------------------------------------------------------------------------------------


class _Lines(io.RawIOBase):
    """A body of ``count`` JSON lines made as it is read: nothing of it exists up front."""

    def __init__(self, count: int):
        self.left = count
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while len(self.pending) < len(buffer) and self.left:
            self.pending += b'{"id": %d, "name": "a record of some length", "tags": ["x", "y"]}\n' % self.left
            self.left -= 1
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size


def _peak_while_reading(count: int) -> int:
    response = HttpResponse(200, CaseInsensitiveDict(), None, HttpRequest("GET", "http://api/x", stream=True),
                            stream=io.BufferedReader(_Lines(count), 1 << 16))
    extractor = DpathExtractor((), decoder=decoder_of(models.GzipDecoder(decoder=models.JsonlDecoder())))
    tracemalloc.start()
    try:
        seen = 0
        for batch in extractor.extract_batches(response):
            seen += len(batch)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen == count
    return peak


def test_a_large_streamed_body_is_read_in_bounded_memory():
    small = _peak_while_reading(40_000)  # about 3 MB of JSON lines
    large = _peak_while_reading(240_000)  # about 18 MB
    assert large < 8 * (1 << 20), f"peak {large / (1 << 20):.1f} MiB for an 18 MB body"
    assert large < small * 1.5, f"the peak grows with the body: {small} bytes, then {large}"


def test_a_streamed_body_is_handed_out_once_and_content_reads_what_is_left():
    response = streamed(b"abc")
    assert response._content is None
    assert response.body().read() == b"abc"
    with pytest.raises(RuntimeError, match="read already"):
        _ = response.content
    other = streamed(b"xyz")
    assert other.content == b"xyz" and other.body().read() == b"xyz"
    assert other.with_json({"a": 1}).json() == {"a": 1}
