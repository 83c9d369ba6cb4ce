"""How many partitions an apply runs: sized by the bytes it reads, with no cap, a multiple of the cores."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from framework.cdc.apply import _PARTITION_BYTES, _Sizes

MIB = 1024 * 1024


@given(st.integers(0, 1 << 40), st.integers(0, 1 << 40), st.integers(1, 512))
def test_partitions_hold_at_most_the_target_bytes_and_fill_the_cores_evenly(staged, extra, cores):
    count = _Sizes(staged, {}, cores).partitions(extra)
    assert count >= 2
    assert count * _PARTITION_BYTES >= staged + extra  # no cap: a partition never holds more than the target
    if count > cores:
        assert count % cores == 0  # no last wave with idle cores
    assert _Sizes(staged * 2, {}, cores).partitions(extra) >= count  # more bytes, never fewer partitions


def test_the_cases_the_benchmark_runs():
    assert _Sizes(1 * MIB, {}, 2).partitions() == 2  # a small apply: two partitions, so few delta files
    assert _Sizes(21 * MIB, {}, 2).partitions() == 4  # 1,000,000 keys staged
    assert _Sizes(207 * MIB, {}, 2).partitions() == 26  # 10,000,000 keys: far past the old cap of 2 x cores
    assert _Sizes(10 * MIB, {}, 8).partitions() == 2 and _Sizes(40 * MIB, {}, 8).partitions() == 8


def test_image_bytes_count_only_for_the_files_named():
    sizes = _Sizes(0, {"a": 30 * MIB, "b": 50 * MIB}, 2)
    assert sizes.of(["a", "missing"]) == 30 * MIB and sizes.of([]) == 0
    assert sizes.partitions(sizes.of(["a", "b"])) == 10
