"""A group's units read several at once (``read_group(..., readers=n)``): requests in flight, the order of
a unit's pages, failures, the page watcher of each unit, and reader threads that never outlive the read.

The API is a function transport over a stream of partitions ``a``, ``b``, ...: partition ``p`` has
``layout[p]`` records, served two a page (a short page ends it). Its first pages can be held until a given
number of requests are in flight at once (no sleeping: a condition the requests themselves move).
"""

from __future__ import annotations

import string
import threading
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from engine.incremental_kit import option, stream
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.http.in_flight import Limit
from framework.components.http.transport import FunctionTransport
from framework.engine.connector import Connector, open_connector_text
from framework.engine.plan import open_sync
from framework.engine.results import UnitResult
from framework.engine.worker import read_group

PARTS = list(string.ascii_lowercase[:8])
SECRET = "s3cr3t-token-value"


class Api:
    """Partitions of records, two a page; what was asked, by which thread, and how many at once at most."""

    def __init__(self) -> None:
        self.reset({})

    def reset(self, layout: dict[str, int], *, wrong: frozenset[str] = frozenset(), hold_until: int = 1,
              hooks: dict[str, Callable[[int], tuple[int, dict, Any] | None]] | None = None) -> None:
        self.layout = layout  # partition -> how many records
        self.wrong = wrong  # partitions answered under another key than the extractor's field path
        self.hold_until = hold_until  # a first page waits until this many requests were in flight at once
        self.hooks = hooks or {}  # partition -> called with the page first; an answer it gives is sent instead
        self.asked: list[tuple[str, int, str]] = []  # (partition, page, thread name)
        self.in_flight = self.peak = 0
        self.changed = threading.Condition()

    def __call__(self, request: Any) -> tuple[int, dict, Any]:
        params = dict(request.params)
        part, page = params["part"], int(params.get("page", "1"))
        with self.changed:
            self.asked.append((part, page, threading.current_thread().name))
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.changed.notify_all()
            if page == 1:
                assert self.changed.wait_for(lambda: self.peak >= self.hold_until, timeout=10), (
                    f"never {self.hold_until} requests in flight at once")
        try:
            hook = self.hooks.get(part)
            answer = hook(page) if hook is not None else None
            if answer is not None:
                return answer
            first = (page - 1) * 2
            records = [{"id": f"{part}-{i}", "part": part} for i in range(first, min(first + 2, self.layout[part]))]
            return 200, {}, {"items" if part in self.wrong else "data": records}
        finally:
            with self.changed:
                self.in_flight -= 1

    def parts_asked(self) -> set[str]:
        return {part for part, _, _ in self.asked}


def open_items(api: Api) -> Connector:
    items = stream("items", "/items", paginate=True)
    items["retriever"]["partition_router"] = {"type": "ListPartitionRouter", "values": PARTS, "cursor_field": "part",
                                              "request_option": option("part")}
    items["retriever"]["requester"]["request_parameters"] = {"token": "{{ config.token }}"}
    manifest = {"version": "6.0.0", "type": "DeclarativeSource", "check": {"type": "CheckStream", "stream_names": ["items"]},
                "streams": [items],
                "spec": {"type": "Spec", "connection_specification": {
                    "type": "object", "properties": {"base_url": {"type": "string"},
                                                     "token": {"type": "string", "airbyte_secret": True}}}}}
    connector = open_connector_text(orjson.dumps(manifest).decode(), {"base_url": "http://api.test", "token": SECRET},
                                    transport=FunctionTransport(api), sleep=lambda seconds: None)
    # the readers are what is tested here, not the sync's limit of requests in flight (tests/.../test_in_flight.py)
    connector.limit_in_flight(Limit.fixed(64, "flag"))
    return connector


class _AlwaysThreads:
    """Threads whatever the API's pace (the fake API here answers at once, which ReadersChoice reads inline)."""

    def readers(self, readers: int, units: int) -> int:
        return readers if units > 1 else 1

    def learn(self, seconds: float, requests: int) -> None:
        return None


@pytest.fixture(autouse=True)
def threads_always(monkeypatch):
    monkeypatch.setattr("framework.engine.worker.READING", _AlwaysThreads())


@pytest.fixture(scope="module")
def shop() -> tuple[Api, Connector]:
    api = Api()
    return api, open_items(api)


def as_records(records: list[dict], extracted_at: int) -> tuple[list[dict], int]:
    """A typer that keeps the page as it came: the test sees each page's records."""
    return records, 0


def read(shop: tuple[Api, Connector], count: int, readers: int, **more: Any) -> list[Any]:
    """Everything read_group yields for the first ``count`` partitions: pages (lists of records) and results."""
    _, connector = shop
    items = connector.stream("items")
    units = open_sync(connector, items, None).plan()[:count]
    return list(read_group(connector, items, units, as_records, readers=readers, **more))  # type: ignore[arg-type]


def results_of(items: list[Any]) -> list[UnitResult]:
    return [item for item in items if isinstance(item, UnitResult)]


def readers_alive() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("reader-")]


@pytest.mark.parametrize(("readers", "units", "at_once"), [(1, 6, 1), (4, 6, 4), (8, 3, 3)])
def test_readers_units_are_asked_for_at_once(shop, readers, units, at_once):
    api, _ = shop
    api.reset(dict.fromkeys(PARTS, 3), hold_until=at_once)
    items = read(shop, units, readers)
    assert api.peak == at_once
    threads = {name for _, _, name in api.asked}
    if readers == 1:
        assert threads == {threading.current_thread().name}  # one at a time, in the task's own thread
    else:
        assert len(threads) == at_once and all(name.startswith("reader-") for name in threads)
    assert sorted(r.unit for r in results_of(items)) == list(range(units))
    assert all(r.error is None and r.records == 3 and r.pages == 2 for r in results_of(items))
    assert not readers_alive()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=len(PARTS)), st.integers(2, 6),
       st.frozensets(st.sampled_from(PARTS)))
def test_any_readers_give_each_unit_the_records_and_result_of_one_reader(shop, counts, readers, wrong):
    """Whatever the layout and the number of readers: the same records per unit, in order, and the same
    results as reading one unit after the other; a unit's result comes after all its pages."""
    api, _ = shop
    layout = dict.fromkeys(PARTS, 0) | dict(zip(PARTS, counts))

    def run(readers: int) -> tuple[dict[str, list[str]], dict[int, UnitResult]]:
        api.reset(layout, wrong=wrong)
        pages: dict[str, list[str]] = {}
        results: dict[int, UnitResult] = {}
        for item in read(shop, len(counts), readers):
            if isinstance(item, UnitResult):
                results[item.unit] = item
            elif item:  # a page the extractor found records in
                part = item[0]["part"]
                assert PARTS.index(part) not in results, "a page came after its unit's result"
                pages.setdefault(part, []).extend(record["id"] for record in item)
        return pages, results

    one = run(1)
    assert run(readers) == one
    pages, results = one
    assert pages == {p: [f"{p}-{i}" for i in range(n)] for p, n in zip(PARTS, counts)
                     if n and p not in wrong}
    assert sorted(results) == list(range(len(counts)))


def test_each_unit_is_watched_by_itself(shop):
    """The page watcher is set in the reader's thread for each unit: only the unit answered under the wrong
    key warns that the extractor found nothing, with its own empty page."""
    api, _ = shop
    api.reset(dict.fromkeys(PARTS, 1), wrong=frozenset({"b", "e"}), hold_until=4)
    results = sorted(results_of(read(shop, 6, 4)), key=lambda r: r.unit)
    assert api.peak == 4
    assert [[w.kind for w in r.warnings] for r in results] == [
        [], ["extractor-empty"], [], [], ["extractor-empty"], []]
    assert [(r.records, r.empty_pages) for r in results] == [(1, 0), (0, 1), (1, 0), (1, 0), (0, 1), (1, 0)]
    assert "found no records, but the response has a list of 1 objects at `items`" in results[1].warnings[0].message


def test_a_failed_unit_fails_every_unit_not_finished_and_stops_the_readers(shop):
    """Two readers: ``a`` finishes, then ``b`` is refused while ``c`` (endless) is being read; ``c`` stops
    after its request in flight, ``d`` to ``f`` are never asked for, and every unit not finished gets the
    masked message."""
    api, connector = shop
    a_done, c_asked = threading.Event(), threading.Event()

    def refuse(page: int) -> tuple[int, dict, Any]:
        assert a_done.wait(10) and c_asked.wait(10)
        return 403, {}, {"error": "this token may not read b"}

    def endless(page: int) -> None:
        c_asked.set()

    api.reset(dict.fromkeys(PARTS, 1) | {"c": 2000}, hooks={"b": refuse, "c": endless})
    items = connector.stream("items")
    units = open_sync(connector, items, None).plan()[:6]
    results = []
    for item in read_group(connector, items, units, as_records, readers=2):  # type: ignore[arg-type]
        if isinstance(item, UnitResult):
            results.append(item)
            a_done.set()
    assert [r.unit for r in results] == [0, 1, 2, 3, 4, 5]  # a, then every unit not finished, in plan order
    assert results[0].error is None and results[0].records == 1
    message = results[1].error
    assert "403" in message and SECRET not in message and "****" in message
    assert all(r.error == message for r in results[1:])
    assert results[2].records < 2000  # c: stopped early
    assert api.parts_asked() == {"a", "b", "c"}
    assert not readers_alive()


def test_a_failed_write_stops_the_readers_and_fails_the_units_not_finished(shop):
    api, connector = shop
    api.reset(dict.fromkeys(PARTS, 2000))
    items = connector.stream("items")
    units = open_sync(connector, items, None).plan()[:5]

    def write(batch: Any) -> None:
        raise OSError(f"disk full while writing with {SECRET}")

    results = list(read_group(connector, items, units, as_records, write, readers=3))  # type: ignore[arg-type]
    assert [r.unit for r in results] == [0, 1, 2, 3, 4]
    assert {r.error for r in results} == {"disk full while writing with ****"}
    assert not readers_alive()
    assert len(api.asked) < 20  # three readers, a page or so each and what the queue holds


def test_closing_the_group_early_stops_its_readers(shop):
    api, connector = shop
    api.reset(dict.fromkeys(PARTS, 2000))
    items = connector.stream("items")
    units = open_sync(connector, items, None).plan()
    group = read_group(connector, items, units, as_records, readers=3)  # type: ignore[arg-type]
    assert [next(group) for _ in range(5)]
    assert len(readers_alive()) == 3
    group.close()
    assert not readers_alive()
    asked = len(api.asked)
    assert asked < 40
    assert len(api.asked) == asked  # nothing more is asked for once it returned


def test_an_interrupt_in_the_task_stops_its_readers(shop):
    api, connector = shop
    api.reset(dict.fromkeys(PARTS, 2000))
    items = connector.stream("items")
    units = open_sync(connector, items, None).plan()
    written = []

    def write(batch: Any) -> None:
        written.append(batch)
        if len(written) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        list(read_group(connector, items, units, as_records, write, readers=4))  # type: ignore[arg-type]
    assert not readers_alive()


# -- whether threads pay -----------------------------------------------------------------------------------------


def test_threads_are_chosen_only_where_the_api_keeps_the_readers_waiting(monkeypatch):
    from framework.components.http import client
    from framework.engine.worker import ReadersChoice

    wait = client.NetworkWait()
    monkeypatch.setattr("framework.engine.worker.NETWORK_WAIT", wait)
    choice = ReadersChoice()
    assert choice.readers(8, 1) == 1 and choice.readers(1, 30) == 1
    assert choice.readers(8, 30) == 8  # nothing sent yet: a level set above the default says the API is slow
    assert choice.readers(2, 30) == 1  # airbyte-cdk's default level says nothing of the kind
    wait.add(0.2)  # the connection check waited 200 ms
    assert choice.readers(2, 30) == 2
    choice.learn(seconds=0.05, requests=20)  # the last group's pages came back at once
    assert choice.readers(8, 30) == 1
    choice.learn(seconds=4.0, requests=20)
    assert choice.readers(8, 30) == 8
