"""The output's lease: one holder at a time, a live holder named to the next sync, a dead one taken over
atomically (by heartbeat age from any host, at once on the same host when its pid is gone), released only by
its holder; on a local folder and on S3 (moto's server, which checks conditional puts as S3 does)."""

from __future__ import annotations

import multiprocessing
import threading

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.storage.lease import (
    EXIT_BUSY,
    LEASE_KEY,
    Lease,
    LeaseHolder,
    LeaseLost,
    LocalLeaseBackend,
    OutputBusy,
    S3LeaseBackend,
    acquire,
    holding,
)
from framework.storage.local import LocalStorage
from framework.storage.s3 import S3Storage


class Clock:
    def __init__(self, now: float = 1_764_680_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["local", "s3"])
def backend(request, tmp_path):
    if request.param == "local":
        return LocalLeaseBackend(LocalStorage(str(tmp_path / "out")))
    return S3LeaseBackend(S3Storage(request.getfixturevalue("s3_bucket"), "data", request.getfixturevalue("s3_client")))


def lease(backend, clock, host="etl-1", pid=100, alive=lambda pid: True, **kw) -> Lease:
    return Lease(backend, clock=clock, host=host, pid=pid, alive=alive, **kw)


def test_a_second_sync_finds_the_first_and_is_told_who_holds_it(backend):
    clock = Clock()
    first, second = lease(backend, clock, pid=100), lease(backend, clock, host="etl-2", pid=200)
    assert first.try_acquire() is None
    clock.now += 30
    holder = second.try_acquire()
    assert holder is not None and (holder.host, holder.pid, holder.owner) == ("etl-1", 100, first.owner)
    with pytest.raises(OutputBusy) as refused:
        acquire(second, None)
    text = str(refused.value)
    assert "pid 100 on etl-1" in text and "last heartbeat 30 s ago" in text and "--wait-for-lock" in text
    assert str(EXIT_BUSY) in text and backend.where in text


def test_released_it_is_free_again(backend):
    clock = Clock()
    first, second = lease(backend, clock), lease(backend, clock, pid=200)
    assert first.try_acquire() is None
    first.release()
    assert backend.read() is None
    assert second.try_acquire() is None and second.taken_from is None


def test_a_holder_whose_heartbeat_stopped_is_taken_over_from_any_host(backend):
    clock = Clock()
    first, second = lease(backend, clock), lease(backend, clock, host="etl-2", pid=200, stale_after=120)
    assert first.try_acquire() is None
    clock.now += 119
    assert second.try_acquire() is not None  # not stale yet
    clock.now += 2
    assert second.try_acquire() is None
    assert second.taken_from is not None and second.taken_from.owner == first.owner
    # the first wakes up: its heartbeat fails, it learns who took it and stops before publishing
    assert first.renew() is False
    with pytest.raises(LeaseLost, match="took over the lease"):
        first.check()
    first.release()  # not its own any more: the new holder's lease stays
    assert LeaseHolder.parse(backend.read()[0]).owner == second.owner


def test_on_the_same_host_a_holder_whose_pid_is_gone_is_taken_over_at_once(backend):
    clock = Clock()
    first = lease(backend, clock, pid=100)
    assert first.try_acquire() is None
    other_host = lease(backend, clock, host="etl-2", pid=100, alive=lambda pid: False)
    assert other_host.try_acquire() is not None  # another host cannot see that pid: it waits for the heartbeat
    same_host = lease(backend, clock, pid=300, alive=lambda pid: pid != 100)
    assert same_host.try_acquire() is None and same_host.taken_from.pid == 100


def test_the_heartbeat_keeps_a_long_sync_alive(backend):
    clock = Clock()
    first, second = lease(backend, clock), lease(backend, clock, host="etl-2", pid=200, stale_after=120)
    assert first.try_acquire() is None
    for _ in range(10):
        clock.now += 100
        assert first.renew() is True
        assert second.try_acquire() is not None
    first.check()


def test_a_damaged_lease_reads_as_dead(backend):
    clock = Clock()
    assert backend.create(b"{not json") is not None
    assert lease(backend, clock).try_acquire() is None


def test_waiting_for_the_lock_takes_it_when_the_holder_ends(backend):
    clock = Clock()
    first, second = lease(backend, clock), lease(backend, clock, pid=200)
    assert first.try_acquire() is None
    told, naps = [], []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        clock.now += seconds
        if len(naps) == 3:
            first.release()

    acquire(second, 60, sleep=sleep, waiting=told.append, poll=2)
    assert second.version is not None and naps == [2, 2, 2]
    assert len(told) == 1 and "pid 100 on etl-1" in told[0]


def test_waiting_too_long_names_the_holder_and_the_wait(backend):
    clock = Clock()
    assert lease(backend, clock).try_acquire() is None

    def sleep(seconds: float) -> None:
        clock.now += seconds

    with pytest.raises(OutputBusy, match=r"waited 10 s \(--wait-for-lock\)"):
        acquire(lease(backend, clock, pid=200), 10, sleep=sleep, poll=3)


def test_holding_releases_on_every_way_out(tmp_path):
    storage = LocalStorage(str(tmp_path / "out"))
    with pytest.raises(KeyboardInterrupt), holding(storage, heartbeat_every=0.01) as held:
        assert held is not None and storage.read(LEASE_KEY) is not None
        raise KeyboardInterrupt
    assert storage.read(LEASE_KEY) is None
    with holding(storage, heartbeat_every=0.01) as held:
        first = orjson.loads(storage.read(LEASE_KEY))
        threading.Event().wait(0.1)
        assert orjson.loads(storage.read(LEASE_KEY))["heartbeat"] > first["heartbeat"]  # the thread beats
        with pytest.raises(OutputBusy), holding(storage):
            pass
    assert storage.read(LEASE_KEY) is None


def _contend(root: str, start, wins, tried, done) -> None:  # a process of its own: real concurrency on the disk
    contender = Lease(LocalLeaseBackend(LocalStorage(root)))
    start.wait()
    if contender.try_acquire() is None:
        wins.put(contender.owner)
    tried.put(1)
    done.wait(30)  # alive until all tried: a holder whose pid is gone is taken over, rightly


@pytest.mark.parametrize("stale", [False, True])
def test_of_many_processes_started_at_once_one_wins(tmp_path, stale):
    root = str(tmp_path / "out")
    backend = LocalLeaseBackend(LocalStorage(root))
    if stale:  # a dead holder's lease: many take it over at once, one wins
        assert backend.create(LeaseHolder("gone", "elsewhere", 1, 0.0, 0.0).as_json())
    context = multiprocessing.get_context("fork")
    start, done, wins, tried = context.Event(), context.Event(), context.Queue(), context.Queue()
    workers = [context.Process(target=_contend, args=(root, start, wins, tried, done)) for _ in range(6)]
    for worker in workers:
        worker.start()
    start.set()
    for _ in workers:
        tried.get(timeout=30)
    done.set()
    for worker in workers:
        worker.join(30)
    winners = []
    while not wins.empty():
        winners.append(wins.get())
    assert len(winners) == 1
    assert LeaseHolder.parse(backend.read()[0]).owner == winners[0]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["acquire", "renew", "release", "die"]),
                          st.integers(0, 200)), max_size=30))
def test_interleavings_never_make_two_holders(tmp_path_factory, steps):
    """Three syncs on two hosts, each step one of them acting after some seconds: whoever wins, the holder it
    beat was dead, and no two believe they hold it with a document that says so."""
    backend = LocalLeaseBackend(LocalStorage(str(tmp_path_factory.mktemp("out"))))
    clock = Clock()
    dead: set[int] = set()
    hosts = ["etl-1", "etl-1", "etl-2"]
    leases = [lease(backend, clock, host=hosts[i], pid=100 + i, alive=lambda pid: pid not in dead, stale_after=120)
              for i in range(3)]
    for who, action, seconds in steps:
        clock.now += seconds
        me = leases[who]
        if 100 + who in dead and action != "die":
            continue
        current = backend.read()
        before = LeaseHolder.parse(current[0]) if current else None
        if action == "acquire" and me.version is None:
            holder = me.try_acquire()
            if holder is None and before is not None and before.owner != me.owner:
                assert before.dead(clock.now, me.host, me.alive, 120)  # only a dead holder is taken over
            if holder is not None:
                assert before is not None and holder.owner == before.owner
        elif action == "acquire":
            continue
        elif action == "renew":
            me.renew()
        elif action == "release":
            me.release()
        else:
            dead.add(100 + who)
        current = backend.read()
        believers = [x for x in leases if x.version is not None and current and x.version == current[1]]
        assert len(believers) <= 1
        if believers:
            assert LeaseHolder.parse(current[0]).owner == believers[0].owner
