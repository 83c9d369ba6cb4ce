"""Units in contiguous groups: what the pipeline's tasks and the DataFrame reader's partitions read."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.slices import StreamSlice
from framework.engine.plan import contiguous_groups
from framework.engine.sync import Unit


def units(count: int) -> list[Unit]:
    return [Unit(index, StreamSlice({"n": index}), index, 0) for index in range(count)]


@settings(deadline=None)
@given(st.integers(0, 60), st.integers(1, 20))
def test_groups_keep_the_plan_order_and_differ_by_at_most_one_unit(count, at_most):
    plan = units(count)
    groups = contiguous_groups(plan, at_most)
    assert len(groups) == max(1, min(count, at_most))
    assert [u for group in groups for u in group] == plan
    sizes = [len(group) for group in groups]
    assert sizes == sorted(sizes, reverse=True)  # earlier groups are the larger ones
    assert max(sizes) - min(sizes) <= 1


def test_examples():
    plan = units(5)
    assert [[u.index for u in g] for g in contiguous_groups(plan, 2)] == [[0, 1, 2], [3, 4]]
    assert [[u.index for u in g] for g in contiguous_groups(plan, 8)] == [[0], [1], [2], [3], [4]]
    assert contiguous_groups([], 8) == [[]]  # one empty group: a DataFrame with no rows still has a partition
