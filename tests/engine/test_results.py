"""Unit results: their Arrow form (what a Spark task answers) and folding them into a stream's sync."""

from __future__ import annotations

from datetime import timedelta, timezone

from engine.incremental_kit import at, cursor, iso, source, stream, write
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.slices import StreamSlice
from framework.engine.connector import open_connector
from framework.engine.plan import open_sync
from framework.engine.results import (
    RESULT_SCHEMA,
    UnitResult,
    failed_group,
    fold_results,
    from_arrow,
    to_arrow,
)
from framework.engine.signals import Signal
from framework.engine.sync import Unit
from framework.temporal.clock import FixedClock

texts = st.text(max_size=20)
results = st.builds(
    UnitResult,
    unit=st.integers(0, 10_000),
    records=st.integers(0, 10**9),
    pages=st.integers(0, 10**6),
    nulled=st.integers(0, 10**6),
    latest=st.none() | st.datetimes(timezones=st.just(timezone.utc)),
    error=st.none() | texts.filter(bool),
    files=st.lists(st.dictionaries(st.sampled_from(["key", "uri"]), texts, min_size=1), max_size=3).map(tuple),
    warnings=st.lists(st.builds(Signal, texts, texts, texts, texts), max_size=3).map(tuple),
    empty_pages=st.integers(0, 10**6),
    drifted=st.integers(0, 10**6),
    undeclared=st.dictionaries(texts, st.integers(1, 10**6), max_size=3),
    evolved=st.lists(st.tuples(texts, st.sampled_from(["boolean", "integer", "number", "string"])),
                     max_size=3, unique_by=lambda pair: pair[0]).map(tuple),
)


@settings(deadline=None)
@given(st.lists(results, max_size=8))
def test_the_arrow_form_reads_back_the_same_results(given_results):
    batch = to_arrow(given_results)
    assert batch.schema.equals(RESULT_SCHEMA)
    assert from_arrow(batch) == given_results


def test_folding_adds_up_the_undeclared_fields_of_the_units_that_succeeded_and_merges_the_evolved_columns():
    class _Sync:
        def unit(self, index):
            return index

        def observe(self, unit, latest, records):
            pass

        def done(self, unit):
            pass

    totals = fold_results(_Sync(), [
        UnitResult(2, records=3, drifted=2, undeclared={"priority": 2, "address.zip": 1},
                   evolved=(("priority", "integer"),)),
        UnitResult(1, records=5, drifted=5, undeclared={"priority": 5}, evolved=(("priority", "number"),)),
        UnitResult(3, error="boom", drifted=9, undeclared={"lost": 9}, evolved=(("lost", "string"),)),
    ])
    assert (totals.drifted, totals.undeclared) == (7, {"priority": 7, "address.zip": 1})
    assert totals.evolved == (("priority", "number"),)  # integer and number: number; the failed unit's not landed


def test_a_failed_group_fails_each_of_its_units_with_the_message():
    group = [Unit(index, StreamSlice(), 0, index) for index in (4, 5)]
    assert failed_group(group, "a Spark task failed: boom") == [
        UnitResult(4, error="a Spark task failed: boom"), UnitResult(5, error="a Spark task failed: boom")]


def test_folding_finishes_the_units_that_succeeded_and_state_stops_at_a_failed_one(tmp_path, fake_api):
    path = write(tmp_path, source(stream("orders", "/orders", incremental=cursor(end_datetime=iso(at(3, 12))))))
    connector = open_connector(path, {"base_url": fake_api.url}, clock=FixedClock(at(9)))
    sync = open_sync(connector, connector.stream("orders"), None)
    plan = sync.plan()
    assert len(plan) == 4
    folded = fold_results(sync, [  # in any order: folded in plan order
        UnitResult(2, records=3, pages=1, latest=at(2, 5), files=({"key": "b"},)),
        UnitResult(0, records=2, pages=2, nulled=1, latest=at(0, 5), files=({"key": "a"},)),
        UnitResult(1, records=9, error="refused"),
        UnitResult(3, error="not written"),
    ])
    assert (folded.units_done, folded.records, folded.pages, folded.nulled) == (2, 5, 3, 1)
    assert folded.error == "refused"  # the first in plan order
    assert folded.files == ({"key": "a"}, {"key": "b"})
    assert sync.records_read == 5
    # not past unit 1, which failed; unit 2, finished beyond it, is kept as a finished range (Airbyte's shape)
    beyond = {"state_type": "date-range", "slices": [
        {"start": iso(at(0)), "end": iso(at(0, 5)), "most_recent_cursor_value": iso(at(0, 5))},
        {"start": iso(at(2)), "end": iso(at(3) - timedelta(seconds=1)), "most_recent_cursor_value": iso(at(2, 5))}]}
    assert sync.state() == beyond
    assert sync.state(final=True) == beyond  # unfinished: no final state either
    later = fold_results(sync, [UnitResult(1, records=1, latest=at(1, 5)), UnitResult(3, latest=at(3, 1))])
    assert later.error is None and later.units_done == 2
    assert sync.state(final=True) == {"updated_at": iso(at(3, 1))}


def test_folding_keeps_the_first_signal_of_each_kind_and_adds_up_empty_pages(tmp_path, fake_api):
    path = write(tmp_path, source(stream("orders", "/orders", incremental=cursor(end_datetime=iso(at(3, 12))))))
    connector = open_connector(path, {"base_url": fake_api.url}, clock=FixedClock(at(9)))
    sync = open_sync(connector, connector.stream("orders"), None)
    sync.plan()
    first, second = (Signal("orders", "missing-key", f"{n} of 3 records have no primary key", "fix it")
                     for n in (1, 2))
    other = Signal("orders", "repeated-page", "pages 1 and 2 have the same 3 records", "start_from_page: 1")
    folded = fold_results(sync, [UnitResult(1, empty_pages=2, warnings=(second, other)),
                                 UnitResult(0, empty_pages=1, warnings=(first,)),
                                 UnitResult(2, error="boom", empty_pages=4)])
    assert folded.warnings == (first, other)
    assert folded.empty_pages == 7
