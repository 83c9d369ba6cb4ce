"""Pure tests of the bucketed image: key hashes, bucket counts, which buckets an apply touches, the pointer."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.cdc.buckets import (
    MAX_BUCKETS,
    MAX_LAYERS,
    MIN_BUCKETS,
    REWRITE_FRACTION,
    Bucket,
    BucketOutcome,
    BucketPlan,
    bucket_of,
    choose_buckets,
    image_file,
    key_hashes,
    next_layout,
    parse_image_file,
    plan,
)
from framework.cdc.pointer import Pointer, load_pointer, save_pointer
from framework.errors import StateError
from framework.storage import LocalStorage

key_text = st.text(max_size=40)


# ------------------------------------------------------------------------------------ assignment


def test_bucket_assignment_is_pinned():
    # A key's bucket must never change between versions: these values are written into images.
    keys = pa.array(['["0"]', '["1"]', '["10"]', '["north","1"]', ""])
    assert key_hashes(keys).tolist() == [3048614013814227438, 6077236662811798465, 13817874916578117099,
                                         7315666018831780997, 17280346270528514342]
    assert bucket_of(keys, 16).to_pylist() == [14, 1, 11, 5, 6]


@settings(deadline=None)  # timing on a loaded machine is not what these test
@given(st.lists(key_text, min_size=1, max_size=30), st.integers(1, 4096), st.data())
def test_a_keys_bucket_does_not_depend_on_its_neighbours_or_the_arrays_layout(keys, buckets, data):
    alone = [bucket_of(pa.array([key]), buckets)[0].as_py() for key in keys]
    together = bucket_of(pa.array(keys), buckets).to_pylist()
    assert together == alone and all(0 <= b < buckets for b in together)
    start = data.draw(st.integers(0, len(keys) - 1))
    sliced = pa.array(["pad"] * 3 + keys).slice(3 + start)  # an array with an offset into its buffers
    assert bucket_of(sliced, buckets).to_pylist() == together[start:]
    assert bucket_of(pa.chunked_array([keys]).combine_chunks().cast(pa.large_string()), buckets).to_pylist() == \
        together


@settings(deadline=None)  # timing on a loaded machine is not what these test
@given(key_text, key_text)
def test_different_keys_rarely_share_a_hash(a, b):
    if a != b:
        assert key_hashes(pa.array([a])).tolist() != key_hashes(pa.array([b])).tolist()


@pytest.mark.parametrize("buckets", [16, 64, 1000])
@pytest.mark.parametrize("shape", ['["{}"]', '["north","{}"]', '["2021-01-{}T00:00:00.000000Z"]'])
def test_buckets_are_uniform(buckets, shape):
    keys = pa.array([shape.format(i) for i in range(200_000)])
    counts = pa.compute.value_counts(bucket_of(keys, buckets)).field("counts").to_pylist()
    expected = len(keys) / buckets
    chi2 = sum((c - expected) ** 2 / expected for c in counts) + (buckets - len(counts)) * expected
    # 99.9th percentile of chi-square with buckets - 1 degrees of freedom (Wilson-Hilferty approximation)
    df = buckets - 1
    limit = df * (1 - 2 / (9 * df) + 3.09 * (2 / (9 * df)) ** 0.5) ** 3
    assert len(counts) == buckets and chi2 < limit


def test_a_null_key_is_refused():
    with pytest.raises(ValueError, match="null"):
        key_hashes(pa.array(["a", None]))


@settings(deadline=None)  # timing on a loaded machine is not what these test
@given(st.integers(0, 2 ** 40))
def test_the_bucket_count_is_a_bounded_power_of_two_growing_with_the_first_bytes(size):
    count = choose_buckets(size)
    assert MIN_BUCKETS <= count <= MAX_BUCKETS and count & (count - 1) == 0
    assert choose_buckets(size * 2) >= count


# ------------------------------------------------------------------------------------ planning

buckets_st = st.lists(st.builds(
    lambda layers, per, rows, extra: Bucket(
        tuple(image_file(f"i/v{v:08d}/", 0, p) for v in range(1, layers + 1) for p in range(per)),
        rows if layers else 0, min(extra, rows) if layers > 1 else 0),
    st.integers(0, MAX_LAYERS + 1), st.integers(1, 4), st.integers(0, 10_000), st.integers(0, 5_000)),
    min_size=1, max_size=32)


@settings(deadline=None)  # timing on a loaded machine is not what these test
@given(buckets_st, st.data())
def test_an_incremental_apply_touches_only_the_buckets_of_its_records(layout, data):
    changes = data.draw(st.dictionaries(st.integers(0, len(layout) - 1), st.integers(0, 20_000)))
    planned = plan(tuple(layout), changes, incremental=True)
    assert planned.touched == {b for b, count in changes.items() if count}
    assert not planned.rewrite & planned.delta
    for b in planned.touched:
        current, count = layout[b], changes[b]
        big = current.delta_rows + count > REWRITE_FRACTION * current.rows
        layers = len({key.split("/")[1] for key in current.files})
        assert (b in planned.rewrite) == (not current.files or big or layers >= MAX_LAYERS)


@settings(deadline=None)  # timing on a loaded machine is not what these test
@given(buckets_st)
def test_a_snapshot_rewrites_every_bucket(layout):
    planned = plan(tuple(layout), {0: 1}, incremental=False)
    assert planned.rewrite == set(range(len(layout))) and not planned.delta


def test_untouched_buckets_are_shared_rewritten_ones_replaced_and_deltas_appended():
    layout = (Bucket(("a0",), 100, 0), Bucket(("b0", "b1"), 100, 10), Bucket(("c0",), 100, 0), Bucket())
    planned = BucketPlan(rewrite=frozenset({1, 3}), delta=frozenset({0, 2}))
    outcomes = {0: BucketOutcome(("a2",), 3, 7), 1: BucketOutcome(("b2", "b3"), 95, 95),
                2: BucketOutcome((), 0, 0), 3: BucketOutcome(("d2",), 5, 5)}
    after = next_layout(layout, planned, outcomes)
    assert after == (Bucket(("a0", "a2"), 103, 7), Bucket(("b2", "b3"), 95, 0), layout[2], Bucket(("d2",), 5, 0))
    assert after[2] is layout[2]  # nothing written there: the same files, not copies
    # a rewritten bucket whose keys are all gone is empty
    assert next_layout(layout, BucketPlan(frozenset({0}), frozenset()), {})[0] == Bucket()


@settings(deadline=None)  # timing on a loaded machine is not what these test
@given(st.integers(0, 99_999_999), st.integers(0, 4095), st.integers(0, 99_999))
def test_image_file_names_carry_version_and_bucket(version, bucket, part):
    key = image_file(f"_airbyte_cdc/s/image/v{version:08d}/", bucket, part)
    assert parse_image_file(key) == (version, bucket)
    assert parse_image_file("file:///out/image/v3/x/" + key) == (version, bucket)
    assert parse_image_file(f"_airbyte_cdc/s/image/v{version:08d}/part-00000.parquet") is None


# ------------------------------------------------------------------------------------ pointer


def test_the_pointer_keeps_its_layout_and_reads_an_older_one_as_unbucketed(tmp_path):
    storage = LocalStorage(str(tmp_path))
    pointer = Pointer(version=3, applied_sync=4, mut_id=9, image_rows=7, image_keys=("x",), fields=("a",),
                      buckets=2, layout=(Bucket(("x",), 7, 2), Bucket()))
    save_pointer(storage, "p.json", pointer)
    assert load_pointer(storage, "p.json") == pointer
    storage.write_atomic("old.json", b'{"version": 2, "applied_sync": 2, "mut_id": 5, "image_keys": ["i/v2/p"]}', {})
    old = load_pointer(storage, "old.json")
    assert (old.buckets, old.layout, old.image_keys) == (0, (), ("i/v2/p",))
    storage.write_atomic("bad.json", b'{"version": 2, "applied_sync": 2, "mut_id": 5, "buckets": 3, "layout": []}', {})
    with pytest.raises(StateError, match="damaged"):
        load_pointer(storage, "bad.json")
