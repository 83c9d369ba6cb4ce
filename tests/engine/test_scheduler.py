"""The scheduler on its own: order of pages and ends, errors, and stopping early.

A stand-in sync gives each unit a few pages; a unit may block until told to go on (no sleeping),
so the tests control which unit finishes first.
"""

from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.engine.scheduler import Page, UnitEnd, concurrent_pages, read_units


@dataclass
class FakeSync:
    pages: dict[int, int]  # unit -> number of pages
    gates: dict[int, threading.Event] = field(default_factory=dict)  # a unit waits for its gate first
    fail: int | None = None  # this unit raises after its first page
    started: list[int] = field(default_factory=list)

    def read(self, unit: int):
        self.started.append(unit)
        gate = self.gates.get(unit)
        if gate is not None:
            assert gate.wait(10), "a gate was never opened"
        for page in range(self.pages[unit]):
            if unit == self.fail and page == 1:
                raise RuntimeError(f"unit {unit} broke")
            yield [f"{unit}-{page}"]


def test_one_at_a_time_keeps_the_plan_order():
    sync = FakeSync({0: 2, 1: 1, 2: 0})
    events = list(read_units(sync, [0, 1, 2], 1))
    assert events == [Page(0, ["0-0"]), Page(0, ["0-1"]), UnitEnd(0), Page(1, ["1-0"]), UnitEnd(1), UnitEnd(2)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=12), st.integers(2, 5))
def test_concurrently_each_unit_ends_once_after_all_its_pages(pages, workers):
    sync = FakeSync(dict(enumerate(pages)))
    seen: dict[int, list] = {}
    ended: list[int] = []
    for event in read_units(sync, list(range(len(pages))), workers):
        assert event.unit not in ended, "a page came after its unit's end"
        if isinstance(event, Page):
            seen.setdefault(event.unit, []).extend(event.records)
        else:
            assert isinstance(event, UnitEnd)
            ended.append(event.unit)
    assert sorted(ended) == list(range(len(pages)))
    assert seen == {u: [f"{u}-{p}" for p in range(n)] for u, n in enumerate(pages) if n}


def test_a_slow_first_unit_lets_later_ones_end_first():
    gate = threading.Event()
    sync = FakeSync({0: 1, 1: 1, 2: 1}, gates={0: gate})
    order = []
    for event in read_units(sync, [0, 1, 2], 3):
        if isinstance(event, UnitEnd):
            order.append(event.unit)
            if len(order) == 2:
                gate.set()
    assert order == [1, 2, 0]


def test_the_first_error_reaches_the_caller_and_stops_taking_units():
    sync = FakeSync({u: 3 for u in range(20)}, fail=1)
    with pytest.raises(RuntimeError, match="unit 1 broke"):
        for _ in read_units(sync, list(range(20)), 2):
            pass
    assert len(sync.started) < 20


def test_dropping_the_iterator_stops_the_workers():
    sync = FakeSync({u: 1 for u in range(50)})
    events = read_units(sync, list(range(50)), 3)
    next(events)
    events.close()
    started = len(sync.started)
    assert started < 50
    assert len(sync.started) == started  # nothing more is read once it returned


SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


def test_each_unit_is_read_and_ended_in_its_readers_thread_with_the_callers_context():
    """``read_one``'s iterator runs, and is closed, in the thread that reads the unit, which sees what the
    caller set in its context; closing early closes the iterators started."""
    ended: list[tuple[int, str, str]] = []

    def read_one(unit: int):
        try:
            while True:
                yield unit
        finally:
            ended.append((unit, threading.current_thread().name, SEEN.get()))

    SEEN.set("the caller's")
    events = concurrent_pages(list(range(10)), read_one, 3)
    assert next(events).unit in (0, 1, 2)
    events.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("reader-")]
    assert sorted(unit for unit, _, _ in ended) == [0, 1, 2]
    assert all(name.startswith("reader-") and seen == "the caller's" for _, name, seen in ended)


def test_an_interrupt_of_the_caller_stops_the_readers():
    def read_one(unit: int):
        while True:
            yield unit

    with pytest.raises(KeyboardInterrupt):
        for count, _ in enumerate(concurrent_pages(list(range(4)), read_one, 4)):
            if count == 10:
                raise KeyboardInterrupt
    assert not [t for t in threading.enumerate() if t.name.startswith("reader-")]
