"""validate-manifest refuses stream names whose folders would collide in the output, with file:line:col and the fix."""

import pytest

from framework.manifest import check_manifest_text

TEMPLATE = """version: 6.7.0
definitions:
  retriever:
    requester: {url_base: https://api.example.com, path: /items}
    record_selector: {extractor: {field_path: []}}
streams:
STREAMS
check:
  stream_names: [FIRST]
"""


def checked(*names):
    streams = "".join(f"  - name: \"{n}\"\n    retriever: {{$ref: '#/definitions/retriever'}}\n" for n in names)
    text = TEMPLATE.replace("STREAMS", streams.rstrip("\n")).replace("FIRST", names[0])
    return [d for d in check_manifest_text(text, "m.yaml").diagnostics if d.code == "stream-folder-collides"]


@pytest.mark.parametrize("name", ["_airbyte_state", "_airbyte_cdc", "_Airbyte_Normalization", "_airbyte_new",
                                  "normalized", "Normalized", "_airbyte_state/x"])
def test_a_stream_in_an_internal_folder_is_refused_with_its_place_and_fix(name):
    [problem] = checked("items", name)
    assert problem.severity == "error"
    assert (problem.file, problem.line, problem.path) == ("m.yaml", 9, "streams[1].name")
    assert problem.format().startswith("m.yaml:9:")
    assert "reserved" in problem.fix


@pytest.mark.parametrize(("first", "second"), [("Orders", "orders"), ("a b", "a_b"), ("café", "cafe"),
                                               ("a", "a/b"), ("a/b", "A")])
def test_streams_sharing_a_folder_or_nesting_are_refused(first, second):
    [problem] = checked(first, second)
    assert problem.path == "streams[1].name"
    assert "rename one of them" in problem.fix


def test_path_escapes_are_refused():
    [problem] = checked("items", "../x")
    assert "`..`" in problem.message


def test_distinct_names_pass():
    assert checked("accounts", "orders", "orders_items", "a/b", "a/c") == []
