"""GroupingPartitionRouter and UnionPartitionRouter: grouping, joining, their checks, and a sync through each."""

from __future__ import annotations

import pytest
from engine.incremental_kit import Shop, at, cursor, iso, source, stream, sync, write
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from framework.components.partitions import GroupingRouter, ListRouter, RoutedPartition, UnionRouter
from framework.errors import ConfigError
from framework.models import GroupingPartitionRouter, UnionPartitionRouter


def _never(parent):  # a read_parent for routers that have no parent
    raise AssertionError("no parent to read")


class Made:
    """A router that makes the given partitions (with extra fields and tags)."""

    def __init__(self, *parts: RoutedPartition):
        self.parts = parts

    def partitions(self, read_parent):
        yield from self.parts

    def apply(self, parts, stream_slice):
        raise AssertionError("not called under a grouping or a union")


def part(key: str, value, parent: dict | None = None, **extra) -> RoutedPartition:
    partition = {key: value} if parent is None else {key: value, "parent_slice": parent}
    return RoutedPartition(partition, extra, (("accounts", value, parent or {}),))


def test_groups_of_size_with_lists_per_key_and_the_tags_of_every_member():
    router = GroupingRouter(Made(part("id", 1, {}, name="a"), part("id", 2, {}, name="b"), part("id", 3, {})), 2)
    groups = list(router.partitions(_never))
    assert [g.partition for g in groups] == [{"id": [1, 2], "parent_slice": [{}, {}]},
                                             {"id": [3], "parent_slice": [{}]}]
    assert [g.extra_fields for g in groups] == [{"name": ["a", "b"]}, {}]
    assert groups[0].tags == (("accounts", 1, {}), ("accounts", 2, {}))


def test_deduplicate_skips_a_value_seen_in_any_earlier_group():
    values = ListRouter(("a", "b", "a", "c", "b"), "k", None)
    assert [g.partition for g in GroupingRouter(values, 2).partitions(_never)] == [{"k": ["a", "b"]}, {"k": ["c"]}]
    assert [g.partition for g in GroupingRouter(values, 2, deduplicate=False).partitions(_never)] == [
        {"k": ["a", "b"]}, {"k": ["a", "c"]}, {"k": ["b"]}]


@given(st.lists(st.integers(0, 20)), st.integers(1, 7), st.booleans())
def test_grouping_keeps_every_value_in_order_and_groups_are_full_but_the_last(values, size, dedupe):
    groups = list(GroupingRouter(ListRouter(tuple(values), "k", None), size, dedupe).partitions(_never))
    flat = [v for g in groups for v in g.partition["k"]]
    assert flat == (list(dict.fromkeys(values)) if dedupe else values)
    assert all(len(g.partition["k"]) == size for g in groups[:-1])
    assert not groups or 1 <= len(groups[-1].partition["k"]) <= size


def test_grouping_a_partition_of_two_keys_is_an_error():
    router = GroupingRouter(Made(RoutedPartition({"a": 1, "b": 2}, {})), 2, place="m.yaml:4:9")
    with pytest.raises(ConfigError, match=r"one key.*m.yaml:4:9"):
        list(router.partitions(_never))


def test_a_union_keeps_the_first_of_each_value_and_moves_other_keys_to_extra_fields():
    first = ListRouter(("org/a", "org/b"), "repo", None)
    second = Made(part("repo", "org/b", {"id": 7}), part("repo", "org/c", {"id": 8}, stars=3))
    found = list(UnionRouter((first, second), "repo").partitions(_never))
    assert [p.partition for p in found] == [{"repo": "org/a"}, {"repo": "org/b"}, {"repo": "org/c"}]
    assert found[2].extra_fields == {"stars": 3, "parent_slice": {"id": 8}}
    assert found[2].tags == (("accounts", "org/c", {"id": 8}),)


def test_a_union_child_without_the_field_is_an_error():
    with pytest.raises(ConfigError, match="without `repo`"):
        list(UnionRouter((ListRouter(("x",), "name", None), ListRouter(("y",), "repo", None)), "repo")
             .partitions(_never))


# -- the models' checks ----------------------------------------------------------------------------


LIST = {"type": "ListPartitionRouter", "values": ["a"], "cursor_field": "k"}
OPTION = {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "k"}


def test_group_size_must_be_positive_and_children_send_no_request_option():
    GroupingPartitionRouter.model_validate({"type": "GroupingPartitionRouter", "group_size": 3,
                                            "underlying_partition_router": LIST})
    with pytest.raises(ValidationError, match="1 or more"):
        GroupingPartitionRouter.model_validate({"type": "GroupingPartitionRouter", "group_size": 0,
                                                "underlying_partition_router": LIST})
    with pytest.raises(ValidationError, match="request_option"):
        GroupingPartitionRouter.model_validate({"type": "GroupingPartitionRouter", "group_size": 3,
                                                "underlying_partition_router": {**LIST, "request_option": OPTION}})


def test_a_union_needs_two_children_keyed_by_its_field():
    UnionPartitionRouter.model_validate({"type": "UnionPartitionRouter", "partition_field": "k",
                                         "partition_routers": [LIST, LIST]})
    with pytest.raises(ValidationError, match="at least two"):
        UnionPartitionRouter.model_validate({"type": "UnionPartitionRouter", "partition_field": "k",
                                             "partition_routers": [LIST]})
    with pytest.raises(ValidationError, match="names `other`"):
        UnionPartitionRouter.model_validate({"type": "UnionPartitionRouter", "partition_field": "k",
                                             "partition_routers": [LIST, {**LIST, "cursor_field": "other"}]})


# -- syncs against the fake API ---------------------------------------------------------------------


def test_a_grouped_substream_reads_several_parents_per_request_with_state_per_group(tmp_path, fake_api):
    shop = Shop()
    for account in (1, 2, 3):
        shop.add_account(account, at(0))
    shop.add_order(1, "a", at(1))
    shop.add_order(3, "c", at(2))
    fake_api.route("GET", "/accounts", lambda r: {"data": shop.accounts})
    fake_api.route("GET", "/orders", lambda r: {"data": shop.serve(
        [o for a in r.param("accounts").split(",") for o in shop.orders[int(a)]], r)})
    router = {"type": "GroupingPartitionRouter", "group_size": 2, "underlying_partition_router": {
        "type": "SubstreamPartitionRouter", "parent_stream_configs": [
            {"type": "ParentStreamConfig", "stream": stream("accounts", "/accounts"), "parent_key": "id",
             "partition_field": "account_id"}]}}
    child = stream("orders", "/orders", incremental=cursor(step=None, cursor_granularity=None), router=router)
    child["retriever"]["requester"]["request_parameters"] = {
        "accounts": "{{ stream_partition.account_id | join(',') }}"}
    run = sync(write(tmp_path, source(child)), fake_api)
    assert not run.failed, run.errors()
    assert [r.param("accounts") for r in run.requests if r.path == "/orders"] == ["1,2", "3"]
    assert sorted(run.ids()) == ["a", "c"]
    assert run.state["states"] == [
        {"partition": {"account_id": [1, 2], "parent_slice": [{}, {}]}, "cursor": {"updated_at": iso(at(1))}},
        {"partition": {"account_id": [3], "parent_slice": [{}]}, "cursor": {"updated_at": iso(at(2))}}]


def test_a_union_reads_each_value_once(tmp_path, fake_api):
    fake_api.route("GET", "/teams", {"data": [{"slug": "core"}, {"slug": "web"}]})
    fake_api.route("GET", "/repos/{name}", lambda r: {"data": [{"id": r.path_params["name"]}]})
    router = {"type": "UnionPartitionRouter", "partition_field": "name", "partition_routers": [
        {"type": "ListPartitionRouter", "values": ["web", "docs"], "cursor_field": "name"},
        {"type": "SubstreamPartitionRouter", "parent_stream_configs": [
            {"type": "ParentStreamConfig", "stream": stream("teams", "/teams"), "parent_key": "slug",
             "partition_field": "name"}]}]}
    run = sync(write(tmp_path, source(stream("repos", "/repos/{{ stream_partition.name }}", router=router))),
               fake_api)
    assert not run.failed, run.errors()
    assert run.ids() == ["web", "docs", "core"]
