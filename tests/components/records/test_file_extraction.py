"""ResponseToFileExtractor: CSV bodies (plain, gzip, zlib) through a temporary file, with Airbyte's null rules."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest
from components.records.helpers import response
from hypothesis import given
from hypothesis import strategies as st

from framework.components.records.file_extraction import (
    NA_WORDS,
    ResponseToFile,
    charset_of,
    field_names,
    save_body,
)
from framework.errors import DecodeError


def extract(body: bytes, content_type: str = "text/csv", **options) -> list[dict]:
    return ResponseToFile(**options).extract(response(body, content_type=content_type))


def test_rows_become_text_records_and_missing_values_null():
    assert extract(b"a,b,c\n1,NA,\n2\n\n3,x,\"q, \"\"r\"\"\"\n") == [
        {"a": "1", "b": None, "c": None}, {"a": "2", "b": None, "c": None}, {"a": "3", "b": "x", "c": 'q, "r"'}]


def test_preserve_na_values_keeps_the_words_but_not_empty_cells():
    assert extract(b"a,b,c\nNA,,null\n", preserve_na_values=True) == [{"a": "NA", "b": None, "c": "null"}]


def test_gzip_and_zlib_bodies_are_unpacked_and_nul_bytes_dropped_from_plain_ones():
    plain = b"id,name\n1,Ada\n"
    assert extract(gzip.compress(plain)) == extract(zlib.compress(plain)) == [{"id": "1", "name": "Ada"}]
    assert extract(b"id,name\n1,A\x00da\n") == [{"id": "1", "name": "Ada"}]


def test_large_bodies_spill_to_disk_and_read_the_same(monkeypatch):
    monkeypatch.setattr("framework.components.records.file_extraction.SPOOL_BYTES", 1024)
    rows = b"".join(b"%d,name %d\n" % (i, i) for i in range(5000))
    found = extract(gzip.compress(b"id,name\n" + rows))
    assert len(found) == 5000 and found[-1] == {"id": "4999", "name": "name 4999"}


def test_the_charset_of_the_content_type_decodes_the_text():
    assert extract("a\né\n".encode("latin-1"), "text/csv; charset=ISO-8859-1") == [{"a": "é"}]
    assert extract("\ufeffa\n1\n".encode()) == [{"a": "1"}]  # a byte-order mark is not part of the header
    assert charset_of("text/csv; charset=\"utf-16\"") == "utf-16" and charset_of("text/csv; charset=nope") == "utf-8"


def test_empty_bodies_and_header_only_bodies_have_no_records():
    assert extract(b"") == [] and extract(b"a,b\n") == []


def test_header_names_like_pandas():
    assert field_names(["a", "a", "a.1", "", "b"]) == ["a", "a.2", "a.1", "Unnamed: 3", "b"]


def test_a_row_longer_than_the_header_or_bad_text_is_a_located_decode_error():
    with pytest.raises(DecodeError, match="line 2 has 3 values; the header names 2 fields"):
        ResponseToFile(place="m.yaml:3:5").extract(response(b"a,b\n1,2,3\n", content_type="text/csv"))
    with pytest.raises(DecodeError, match="encoding utf-8"):
        extract(b"a\n\xff\xfe\n")


cells = st.one_of(st.sampled_from(sorted(NA_WORDS)), st.text(alphabet=st.characters(blacklist_characters="\x00\r",
                                                                                     blacklist_categories=("Cs",)),
                                                                max_size=6))


@given(st.lists(st.lists(cells, min_size=3, max_size=3), max_size=8))
def test_any_table_written_as_csv_reads_back_with_na_words_as_null(rows):
    import csv

    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow(["x", "y", "z"])
    writer.writerows(rows)
    got = extract(text.getvalue().encode())
    assert got == [{k: (None if v in NA_WORDS else v) for k, v in zip("xyz", row)} for row in rows]


def test_save_body_writes_what_it_unpacks():
    target = io.BytesIO()
    save_body(gzip.compress(b"x" * 200_000), target)
    assert target.getvalue() == b"x" * 200_000
