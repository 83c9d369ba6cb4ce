"""``stream_groups``: the model, the checks of ``validate-manifest``, and the gate that keeps two streams of one
group from being read at the same time (a child's read holds its parents' groups too)."""

from __future__ import annotations

import threading
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.stream_groups import StreamGroups
from framework.engine.connector import open_connector_text
from framework.errors import ConfigError
from framework.manifest import check_manifest_text
from framework.models import REGISTRY, UNSUPPORTED


def stream(name: str, parent: str | None = None) -> dict:
    retriever: dict = {
        "type": "SimpleRetriever",
        "requester": {"type": "HttpRequester", "url_base": "https://api.example.com", "path": f"/{name}"},
        "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": []}},
    }
    if parent is not None:
        retriever["partition_router"] = {"type": "SubstreamPartitionRouter", "parent_stream_configs": [
            {"type": "ParentStreamConfig", "stream": {"$ref": f"#/definitions/{parent}"}, "parent_key": "id",
             "partition_field": "pid"}]}
    return {"type": "DeclarativeStream", "name": name, "retriever": retriever,
            "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object"}}}


def manifest(groups: dict[str, list[str]]) -> str:
    """accounts; orders (child of accounts); items (child of orders); notes; with ``groups``."""
    definitions = {"accounts": stream("accounts"), "orders": stream("orders", "accounts"),
                   "items": stream("items", "orders"), "notes": stream("notes")}
    return yaml.safe_dump({
        "version": "7.0.0", "type": "DeclarativeSource", "definitions": definitions,
        "streams": [{"$ref": f"#/definitions/{name}"} for name in definitions],
        "check": {"type": "CheckStream", "stream_names": ["accounts"]},
        "stream_groups": {group: {"streams": [{"$ref": f"#/definitions/{m}"} for m in members],
                                  "action": {"type": "BlockSimultaneousSyncsAction"}}
                          for group, members in groups.items()},
    }, sort_keys=False)


def test_the_types_are_supported():
    assert "BlockSimultaneousSyncsAction" in REGISTRY and "BlockSimultaneousSyncsAction" not in UNSUPPORTED


def test_a_read_holds_its_own_groups_and_those_of_its_ancestors():
    connector = open_connector_text(manifest({"api": ["accounts", "notes"], "other": ["orders"]}), {})
    assert connector.groups.touched == {
        "accounts": {"api"}, "notes": {"api"},
        "orders": {"other", "api"},  # reading orders reads accounts
        "items": {"other", "api"},  # reading items reads orders, which reads accounts
    }


@pytest.mark.parametrize("members", [["orders", "accounts"], ["items", "accounts"]])
def test_a_child_sharing_a_group_with_an_ancestor_is_refused(members):
    text = manifest({"api": members})
    (error,) = check_manifest_text(text, "m.yaml").errors
    assert error.code == "group-with-parent" and error.path == "stream_groups.api.streams[0]"
    assert f"stream `{members[0]}` and its parent stream `accounts` are both in stream group `api`" in error.message
    assert error.fix == f"take `{members[0]}` or `accounts` out of group `api`"
    assert error.line == text.splitlines().index("  api:") + 3  # the member's line, under `streams:`


def test_the_runtime_refuses_it_too():
    from framework.components.stream_groups import build_stream_groups

    connector = open_connector_text(manifest({}), {})
    groups = {"api": _group(["orders", "accounts"])}
    with pytest.raises(ConfigError, match="stream `orders` and its parent stream `accounts` are both in stream group"):
        build_stream_groups(groups, connector.streams, connector.context)


def _group(names: list[str]):
    from framework.models import DeclarativeStream
    from framework.models.stream_groups import StreamGroup

    checked = check_manifest_text(manifest({}), "m.yaml")
    assert checked.source is not None
    streams = {s.name: s for s in checked.source.streams if isinstance(s, DeclarativeStream)}
    return StreamGroup(streams=tuple(streams[n] for n in names), action={"type": "BlockSimultaneousSyncsAction"})


def test_a_member_the_source_does_not_list_is_a_warning():
    data = yaml.safe_load(manifest({"api": ["accounts"]}))
    data["definitions"]["ghost"] = stream("ghost")
    data["stream_groups"]["api"]["streams"].append({"$ref": "#/definitions/ghost"})
    checked = check_manifest_text(yaml.safe_dump(data, sort_keys=False), "m.yaml")
    assert checked.ok
    (warning,) = [d for d in checked.diagnostics if d.code == "unknown-stream"]
    assert warning.severity == "warning" and warning.path == "stream_groups.api.streams[1]"


def test_a_group_needs_its_action():
    data = yaml.safe_load(manifest({"api": ["accounts"]}))
    del data["stream_groups"]["api"]["action"]
    assert not check_manifest_text(yaml.safe_dump(data), "m.yaml").ok


# -- the gate ------------------------------------------------------------------------------------


def run_side_by_side(groups: StreamGroups, streams: list[str]) -> list[tuple[str, float, float]]:
    """Read each of ``streams`` in its own thread through the gate; (stream, start, end) of each read."""
    spans: list[tuple[str, float, float]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(streams))

    def read(name: str) -> None:
        barrier.wait()
        with groups.reading(name):
            start = time.monotonic()
            time.sleep(0.02)
            end = time.monotonic()
        with lock:
            spans.append((name, start, end))

    threads = [threading.Thread(target=read, args=(name,)) for name in streams]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(spans) == len(streams)
    return spans


@settings(max_examples=15, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdef"), st.frozensets(st.sampled_from("xyz"), max_size=2), min_size=2))
def test_reads_holding_a_common_group_never_overlap(touched):
    groups = StreamGroups(touched)
    spans = run_side_by_side(groups, list(touched))
    for name, start, end in spans:
        for other, o_start, o_end in spans:
            if other != name and touched[name] & touched[other]:
                assert end <= o_start or o_end <= start, f"{name} and {other} overlap"
    assert groups.holders() == {}


def test_reads_in_no_common_group_run_side_by_side():
    spans = run_side_by_side(StreamGroups({"a": frozenset({"x"}), "b": frozenset({"y"})}), ["a", "b", "c"])
    (a_start, a_end), (b_start, b_end) = [(s, e) for n, s, e in sorted(spans) if n in "ab"]
    assert a_start < b_end and b_start < a_end


def test_a_failed_read_lets_the_group_go():
    groups = StreamGroups({"a": frozenset({"x"})})
    with pytest.raises(RuntimeError), groups.reading("a"):
        assert groups.holders() == {"x": "a"}
        raise RuntimeError("boom")
    assert groups.holders() == {}
