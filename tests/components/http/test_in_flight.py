"""The sync's requests in flight: one ledger of permits, pools per process, AIMD on 429."""

from __future__ import annotations

import threading
import time
from multiprocessing.connection import Client

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework import coordination
from framework.components.http.in_flight import (
    AUTO_CEILING,
    AUTO_START,
    DEFAULT_LEVEL,
    Ask,
    InFlight,
    Ledger,
    Limit,
    build_in_flight,
)

# -- the ledger alone -------------------------------------------------------------------------------------------


def test_the_ledger_grants_up_to_its_level_and_again_what_comes_back():
    ledger = Ledger(Limit.fixed(3, "manifest"))
    assert ledger(Ask("a", wanted=5)).granted == 3
    assert ledger(Ask("b", wanted=1)).granted == 0
    assert ledger(Ask("a", returned=2)).granted == 0
    assert ledger(Ask("b", wanted=1)).granted == 1
    assert ledger.pace().most_in_flight == 3


def test_while_another_waits_a_holder_gets_its_share_and_is_asked_to_give_back_the_rest():
    ledger = Ledger(Limit.fixed(8, "flag"))
    assert ledger(Ask("a", wanted=8)).granted == 8  # alone: everything it wants
    waiting = ledger(Ask("b", wanted=4))
    assert waiting.granted == 0
    told = ledger(Ask("a", answered=3))  # a's next word: b waits, a holds more than half
    assert told.contended and told.give_back == 4
    ledger(Ask("a", returned=4))
    assert ledger(Ask("b", wanted=4)).granted == 4


def test_a_429_halves_the_level_once_per_burst_and_answers_raise_it_back_while_someone_waits():
    now = [0.0]
    ledger = Ledger(Limit.fixed(8, "manifest"), now=lambda: now[0])
    ledger(Ask("a", wanted=8))
    ledger(Ask("a", answered=1, refused=1))
    assert ledger.level == 4
    ledger(Ask("a", answered=2, refused=2))  # the same burst: sent before the decrease
    assert ledger.level == 4
    ledger(Ask("a", answered=10))  # nobody waits: the level stays
    assert ledger.level == 4
    ledger(Ask("b", wanted=1))
    for _ in range(20):
        ledger(Ask("a", answered=1))
    assert ledger.level == 7  # one more per round of answers, up to just under where the 429 came
    for _ in range(40):
        ledger(Ask("a", answered=1))
    assert ledger.level == 7  # then it probes the cap only now and then
    for _ in range(200):
        ledger(Ask("a", answered=1))
    assert ledger.level == 8  # climbed back, never past the manifest's limit
    pace = ledger.pace()
    assert (pace.refused, pace.lowest, pace.level) == (3, 4, 8)


def test_a_later_429_after_a_second_lowers_the_level_again_even_without_answers_between():
    now = [0.0]
    ledger = Ledger(Limit.fixed(8, "manifest"), now=lambda: now[0])
    ledger(Ask("a", answered=1, refused=1))
    now[0] = 1.5
    ledger(Ask("a", answered=1, refused=1))
    assert ledger.level == 2


def test_auto_starts_low_and_climbs_while_requests_wait():
    ledger = Ledger(Limit.auto())
    assert ledger.level == AUTO_START
    ledger(Ask("a", wanted=100))
    for _ in range(3000):  # one more permit per round of `level` answers: 2 + 3 + ... + 63 of them
        ledger(Ask("a", answered=1, wanted=1))
    assert ledger.level == AUTO_CEILING


def test_a_disconnected_task_gives_its_permits_back():
    ledger = Ledger(Limit.fixed(2, "manifest"))
    coordination._serving.caller = 7  # as on a coordinator's serving thread
    try:
        assert ledger(Ask("task", wanted=2)).granted == 2
    finally:
        del coordination._serving.caller
    assert ledger(Ask("driver", wanted=1)).granted == 0
    ledger.disconnected(7)
    assert ledger(Ask("driver", wanted=1)).granted == 1


def test_limits_say_who_set_them():
    assert Limit.default() == Limit(DEFAULT_LEVEL, DEFAULT_LEVEL, "default")
    assert "concurrency_level" in Limit.default().describe()
    assert Limit.fixed(0, "flag").level == 1
    assert Limit.fixed(9, "manifest").share(4) == Limit(2, 2, "manifest")
    assert Limit.fixed(2, "manifest").share(8).level == 1


# -- pools and threads ------------------------------------------------------------------------------------------


def _hammer(pools: list[InFlight], threads_per_pool: int, requests: int, refuse=lambda n: False) -> int:
    """Threads that each send ``requests`` requests through their pool; the most in flight at once."""
    lock = threading.Lock()
    now = [0, 0]  # in flight, most

    def work(pool: InFlight) -> None:
        for n in range(requests):
            pool.acquire()
            with lock:
                now[0] += 1
                now[1] = max(now[1], now[0])
            time.sleep(0.0005)
            with lock:
                now[0] -= 1
            pool.release(429 if refuse(n) else 200)
        pool.settle()

    workers = [threading.Thread(target=work, args=(pool,)) for pool in pools for _ in range(threads_per_pool)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert not any(worker.is_alive() for worker in workers)
    return now[1]


@settings(max_examples=15, deadline=None)
@given(level=st.integers(1, 6), pools=st.integers(1, 3), threads=st.integers(1, 6))
def test_threads_of_many_pools_never_hold_more_than_the_level(level, pools, threads):
    ledger = Ledger(Limit.fixed(level, "manifest"))
    most = _hammer([InFlight(ledger) for _ in range(pools)], threads, 15)
    assert most <= level
    assert most == min(level, pools * threads) or level > 1  # (timing decides how close to the level it gets)
    assert ledger.pace().requests == pools * threads * 15
    assert ledger(Ask("x", wanted=level)).granted == level  # every permit came back


def test_429s_lower_the_level_that_the_threads_then_keep_to():
    ledger = Ledger(Limit.fixed(8, "manifest"))
    pool = InFlight(ledger)
    _hammer([pool], 8, 10, refuse=lambda n: n == 0)
    pace = ledger.pace()
    assert pace.refused == 8 and pace.lowest <= 4
    assert pace.requests == 80


def test_a_pool_through_the_coordinator_holds_the_drivers_limit():
    ledger = Ledger(Limit.fixed(2, "manifest"))
    with coordination.Coordinator({"in_flight": ledger}) as coordinator:
        with coordination.attached(coordinator.address):
            pool = InFlight(coordination.routed("in_flight", ledger))
            assert _hammer([pool], 4, 5) <= 2
        # a task process that dies holding permits: its connection closes and the ledger takes them back
        connection = Client((coordinator.address.host, coordinator.address.port), authkey=coordinator.address.authkey)
        connection.send(("in_flight", Ask("doomed", wanted=2)))
        assert connection.recv()[1].granted == 2
        connection.close()
        deadline = time.monotonic() + 5
        while ledger(Ask("driver", wanted=1)).granted == 0:
            assert time.monotonic() < deadline, "the dead task's permits never came back"
            time.sleep(0.01)


def test_build_in_flight_offers_the_ledger_as_the_sync_wide_service():
    offered = {}

    def service(name, handler):
        offered[name] = handler
        return handler

    pool, ledger = build_in_flight(service, Limit.fixed(3, "manifest"))
    assert offered == {"in_flight": ledger}
    pool.acquire()
    pool.release(200)
    pool.settle()
    assert ledger.pace().requests == 1


@pytest.mark.parametrize("status", [None, 500])
def test_a_request_without_an_answer_frees_its_permit_too(status):
    ledger = Ledger(Limit.fixed(1, "manifest"))
    pool = InFlight(ledger)
    pool.acquire()
    pool.release(status)
    pool.acquire()  # would wait for ever if the permit were lost
    pool.release(200)


def test_permits_no_thread_takes_go_back_to_the_ledger_soon():
    """The driver reads a substream's parents, then nothing: its permits must not wait for a task's end."""
    ledger = Ledger(Limit.fixed(2, "manifest"))
    driver, task = InFlight(ledger), InFlight(ledger)
    driver.acquire()
    driver.acquire()
    driver.release(200)
    driver.release(200)
    started = time.monotonic()
    task.acquire()  # waits until the driver's idle permits come back
    assert time.monotonic() - started < 2.0
    task.release(200)
    task.settle()
