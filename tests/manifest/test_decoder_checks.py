"""validate-manifest's checks of response formats (framework/manifest/decoder_checks.py)."""

from __future__ import annotations

import textwrap

from framework.manifest import check_manifest_text

BASE = textwrap.dedent("""\
    version: 6.7.0
    type: DeclarativeSource
    check: {type: CheckStream, stream_names: [items]}
    streams:
      - type: DeclarativeStream
        name: items
        schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
        retriever:
          type: SimpleRetriever
          decoder: DECODER
          requester: {type: HttpRequester, url_base: "https://api.example.com", path: /items}
          record_selector:
            type: RecordSelector
            extractor: {type: DpathExtractor, field_path: []EXTRACTOR}
    """)


def check(decoder: str, extractor: str = "", paginator: str = "") -> list:
    text = BASE.replace("DECODER", decoder).replace("EXTRACTOR", extractor)
    if paginator:
        text += f"      paginator: {paginator}\n"
    return check_manifest_text(text).diagnostics


def test_every_decoder_is_accepted_without_a_word():
    for decoder in ("{type: JsonlDecoder}", "{type: CsvDecoder, delimiter: ';', encoding: latin-1}",
                    "{type: XmlDecoder}", "{type: IterableDecoder}", "{type: JsonItemsDecoder, items_path: data}",
                    "{type: GzipDecoder, decoder: {type: GzipDecoder, decoder: {type: CsvDecoder}}}",
                    "{type: ZipfileDecoder, decoder: {type: JsonDecoder}}", "{type: CsvDecoder, delimiter: '\\t'}"):
        assert list(check(decoder)) == [], decoder


def test_a_bad_delimiter_encoding_or_items_path_is_an_error_at_its_line():
    [problem] = check("{type: CsvDecoder, delimiter: ';;'}")
    assert (problem.code, problem.line, problem.severity) == ("bad-delimiter", 10, "error")
    assert "one character" in problem.message
    [problem] = check("{type: GzipDecoder, decoder: {type: CsvDecoder, encoding: utf-99}}")
    assert problem.code == "bad-encoding" and "utf-99" in problem.message and problem.fix
    [problem] = check("{type: JsonItemsDecoder, items_path: ''}")
    assert problem.code == "empty-items-path"


def test_a_paginator_over_a_format_airbyte_will_not_page_is_an_error():
    pages = "{type: DefaultPaginator, pagination_strategy: {type: PageIncrement, page_size: 5}}"
    [problem] = check("{type: JsonlDecoder}", paginator=pages)
    assert problem.code == "unpageable-decoder" and problem.line == 15 and "remove the paginator" in problem.fix
    assert not check("{type: XmlDecoder}", paginator=pages)
    assert not check("{type: GzipDecoder, decoder: {type: JsonDecoder}}", paginator=pages)
    assert [p.code for p in check("{type: GzipDecoder, decoder: {type: CsvDecoder}}", paginator=pages)] == [
        "unpageable-decoder"]
    assert not check("{type: CsvDecoder}", paginator="{type: NoPagination}")


def test_a_decoder_on_the_extractor_is_ignored_with_a_warning():
    [problem] = check("{type: JsonDecoder}", extractor=", decoder: {type: CsvDecoder}")
    assert (problem.code, problem.severity) == ("ignored-decoder", "warning")
    assert "SimpleRetriever" in problem.fix
    assert not check("{type: CsvDecoder}", extractor=", decoder: {type: CsvDecoder}")  # the same: no word
