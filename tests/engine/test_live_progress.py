"""A task's progress reports and the driver's tally of its running groups."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from framework.engine.live_progress import LiveTally, TaskTicker, ticking


@dataclass
class U:
    index: int


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_task_reports_its_first_page_at_once_then_at_most_once_a_second():
    sent: list[tuple] = []
    clock = Clock()
    ticker = TaskTicker("items", sent.append, every=1.0, clock=clock)
    ticker.begin([U(7), U(8), U(9)])
    ticker.page(10)  # the first page: at once
    clock.now = 0.5
    ticker.page(10)
    ticker.unit_done(7)  # within the second: held back
    clock.now = 1.2
    ticker.page(5)
    assert sent == [("items", 7, 10, 1, ()), ("items", 7, 25, 3, (7,))]
    clock.now = 2.5
    ticker.unit_done(8)  # only the units done since the last report travel
    assert sent[-1] == ("items", 7, 25, 3, (8,))


def test_a_report_that_fails_turns_the_tasks_reporting_off():
    calls = []

    def send(payload):
        calls.append(payload)
        raise OSError("driver gone")

    ticker = TaskTicker("items", send, every=0.0)
    ticker.begin([U(0)])
    ticker.page(3)
    ticker.page(3)
    assert len(calls) == 1 and ticker.off


def test_the_tally_counts_running_groups_until_they_are_over_and_ignores_late_reports():
    tally = LiveTally()
    tally.started("items", {0: 10.0, 1: 20.0})
    tally.started("items", {2: 5.0})
    tally.report(("items", 0, 40, 2, (1,)))
    tally.report(("items", 2, 3, 1, ()))
    tally.report(("items", 99, 1000, 9, ()))  # no such group
    live = tally.live("items")
    assert (live.records, live.pages, live.units_done, live.work_done) == (43, 3, 1, 20.0)
    assert tally.over("items", 0) == {0: 10.0, 1: 20.0}
    tally.report(("items", 0, 50, 3, (0,)))  # late: the group's results are folded already
    assert tally.live("items").records == 3 and tally.live("other").records == 0


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 100), st.integers(0, 5)), max_size=30))
def test_the_tally_shows_each_groups_latest_report(reports):
    tally = LiveTally()
    for key in range(5):
        tally.started("s", {key: 1.0})
    latest: dict[int, int] = {}
    for key, records, pages in reports:
        tally.report(("s", key, records, pages, ()))
        latest[key] = records
    assert tally.live("s").records == sum(latest.values())


def test_ticking_calls_until_the_block_ends():
    seen = threading.Event()
    count = []

    def tick():
        count.append(1)
        if len(count) >= 3:
            seen.set()

    with ticking(0.01, tick):
        assert seen.wait(30)
    after = len(count)
    assert seen.is_set() and len(count) == after  # no tick once the block is over (the thread joined)


def test_a_background_sender_never_holds_the_read_and_merges_what_waits():
    from framework.engine.live_progress import BackgroundSender

    entered, go, sent = threading.Event(), threading.Event(), []
    done = threading.Event()

    def send(payload):
        sent.append(payload)
        if len(sent) == 1:
            entered.set()
            assert go.wait(30)  # the driver is slow to answer the first report
        else:
            done.set()

    sender = BackgroundSender(send)
    sender(("s", 0, 10, 1, (0,)))
    assert entered.wait(30)
    sender(("s", 0, 20, 2, (1,)))  # both offered while the first is on its way: returns at once
    sender(("s", 0, 30, 3, (2,)))
    go.set()
    assert done.wait(30)
    sender.close()
    assert sent == [("s", 0, 10, 1, (0,)), ("s", 0, 30, 3, (1, 2))]  # the newest counts, both units finished


def test_a_background_sender_stops_at_its_first_failure():
    from framework.engine.live_progress import BackgroundSender

    failed = threading.Event()

    def send(payload):
        failed.set()
        raise ConnectionRefusedError("no driver")

    sender = BackgroundSender(send)
    sender(("s", 0, 1, 1, ()))
    assert failed.wait(30)
    sender._thread.join(30)
    assert sender.off
    sender(("s", 0, 2, 2, ()))  # dropped
    sender.close()
