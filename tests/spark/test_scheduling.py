"""The driver reads groups while Spark starts, then Spark takes the rest (framework/spark/scheduling.py).

No Spark here: the session is a ``Future`` the tests complete when they want, and the runners record
who ran which group.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.spark.scheduling import schedule_groups


class Runners:
    """``here`` and ``on_spark`` that record (index, group) and answer ("here"|"spark", group)."""

    def __init__(self, session: Future, ready_at: int | None = None, failing: set[str] | None = None):
        self.session = session
        self.ready_at = ready_at  # the session comes up while the driver reads the group of this index
        self.failing = failing or set()
        self.here_ran: list[tuple[int, str]] = []
        self.spark_ran: list[tuple[int, str]] = []
        self.lock = threading.Lock()

    def here(self, index: int, group: str) -> tuple[str, str]:
        self.here_ran.append((index, group))
        if index == self.ready_at and not self.session.done():
            self.session.set_result("session")
        if group in self.failing:
            raise RuntimeError(f"{group} broke")
        return "here", group

    def on_spark(self, index: int, group: str) -> tuple[str, str]:
        with self.lock:
            self.spark_ran.append((index, group))
        if group in self.failing:
            raise RuntimeError(f"{group} broke on Spark")
        return "spark", group

    @staticmethod
    def failed(group: str, exc: BaseException) -> tuple[str, str]:
        return "failed", f"{group}: {exc}"

    def run(self, groups: Any, **more: Any) -> list[tuple[str, str]]:
        return list(schedule_groups(groups, here=self.here, on_spark=self.on_spark, failed=self.failed,
                                    spark=self.session, **more))


GROUPS = ["g0", "g1", "g2", "g3", "g4"]


def test_while_spark_starts_the_driver_reads_every_group_in_order_and_does_not_wait():
    session: Future = Future()
    runners = Runners(session)

    answers = runners.run(GROUPS)

    assert answers == [("here", g) for g in GROUPS]  # as each finished, in order
    assert runners.here_ran == list(enumerate(GROUPS)) and runners.spark_ran == []
    assert not session.done()  # nothing waited for it


def test_a_session_up_from_the_start_runs_every_group_on_spark():
    session: Future = Future()
    session.set_result("session")
    runners = Runners(session)

    answers = runners.run(GROUPS)

    assert sorted(answers) == [("spark", g) for g in GROUPS]
    assert runners.here_ran == [] and sorted(runners.spark_ran) == list(enumerate(GROUPS))


def test_once_spark_is_up_the_rest_goes_to_spark_and_the_group_being_read_finishes_here():
    session: Future = Future()
    runners = Runners(session, ready_at=1)  # up while the driver reads g1

    answers = runners.run(GROUPS)

    assert runners.here_ran == [(0, "g0"), (1, "g1")]
    assert sorted(runners.spark_ran) == [(2, "g2"), (3, "g3"), (4, "g4")]  # indices kept: part numbers
    assert answers[:2] == [("here", "g0"), ("here", "g1")]
    assert sorted(answers[2:]) == [("spark", "g2"), ("spark", "g3"), ("spark", "g4")]


def test_with_driver_reads_off_every_group_waits_for_spark():
    session: Future = Future()
    runners = Runners(session)
    threading.Timer(0.2, session.set_result, ("session",)).start()

    answers = runners.run(GROUPS, read_here=False)

    assert runners.here_ran == [] and sorted(answers) == [("spark", g) for g in GROUPS]


def test_groups_are_pulled_lazily_one_at_a_time_by_the_driver():
    session: Future = Future()
    pulled: list[int] = []

    def groups():
        for index, group in enumerate(GROUPS):
            pulled.append(index)
            yield group

    runners = Runners(session)
    seen = []
    for answer in schedule_groups(groups(), here=runners.here, on_spark=runners.on_spark, failed=runners.failed,
                                  spark=session):
        seen.append(answer)
        assert len(pulled) == len(seen)  # the next group is taken only once this one was handed back
    assert len(seen) == len(GROUPS)


def test_a_group_that_fails_here_or_on_spark_answers_its_failure_and_the_others_run():
    session: Future = Future()
    runners = Runners(session, ready_at=1, failing={"g0", "g3"})

    answers = runners.run(GROUPS)

    assert ("failed", "g0: g0 broke") in answers and ("failed", "g3: g3 broke on Spark") in answers
    assert sorted(a for a in answers if a[0] != "failed") == [("here", "g1"), ("spark", "g2"), ("spark", "g4")]


def test_a_session_that_failed_to_start_raises_when_groups_are_left_for_it():
    session: Future = Future()
    runners = Runners(session)

    def here(index: int, group: str) -> tuple[str, str]:
        if index == 1:
            session.set_exception(RuntimeError("no java"))
        return runners.here(index, group)

    with pytest.raises(RuntimeError, match="no java"):
        list(schedule_groups(GROUPS, here=here, on_spark=runners.on_spark, failed=runners.failed, spark=session))
    assert runners.spark_ran == []


def test_a_session_that_failed_after_the_last_group_was_read_here_is_not_raised():
    session: Future = Future()
    runners = Runners(session)

    def here(index: int, group: str) -> tuple[str, str]:
        if index == len(GROUPS) - 1:
            session.set_exception(RuntimeError("no java"))
        return runners.here(index, group)

    answers = list(schedule_groups(GROUPS, here=here, on_spark=runners.on_spark, failed=runners.failed,
                                   spark=session))
    assert answers == [("here", g) for g in GROUPS]


def test_stopping_early_cancels_the_spark_jobs_still_running():
    session: Future = Future()
    session.set_result("session")
    cancelled = threading.Event()

    def on_spark(index: int, group: str) -> tuple[str, str]:
        if index == 0:
            return "spark", group
        cancelled.wait(10)  # a job that runs until cancelled
        raise RuntimeError("cancelled")

    answers = schedule_groups(GROUPS, here=Runners(session).here, on_spark=on_spark, failed=Runners.failed,
                              spark=session, cancel=cancelled.set)
    assert next(answers) == ("spark", "g0")
    answers.close()  # the caller stops (an interrupt, a failure of its own)
    assert cancelled.is_set()


@settings(max_examples=60, deadline=None)
@given(count=st.integers(0, 12), ready_at=st.one_of(st.none(), st.integers(-1, 12)), read_here=st.booleans())
def test_every_group_runs_exactly_once_with_its_own_index(count, ready_at, read_here):
    groups = [f"g{i}" for i in range(count)]
    session: Future = Future()
    if ready_at == -1 or not read_here:
        session.set_result("session")
    runners = Runners(session, ready_at=ready_at)

    answers = runners.run(groups, read_here=read_here)

    ran = sorted(runners.here_ran + runners.spark_ran)
    assert ran == list(enumerate(groups))
    assert sorted(g for _, g in answers) == sorted(groups)
    assert all(index <= (ready_at if ready_at is not None else count) for index, _ in runners.here_ran)


def test_at_most_spark_slots_groups_run_at_once_and_groups_are_taken_only_when_a_slot_is_free():
    session: Future = Future()
    session.set_result("session")
    lock = threading.Lock()
    running, most, pulled = [0], [0], [0]

    def groups():
        for group in [f"g{i}" for i in range(9)]:
            pulled[0] += 1
            with lock:
                assert pulled[0] - len(seen) <= 3  # never more taken than can run (2 slots) + the one handed back
            yield group

    def on_spark(index: int, group: str) -> tuple[str, str]:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threading.Event().wait(0.01)  # a short job
        with lock:
            running[0] -= 1
        return "spark", group

    seen: list[tuple[str, str]] = []
    for answer in schedule_groups(groups(), here=Runners(session).here, on_spark=on_spark, failed=Runners.failed,
                                  spark=session, spark_slots=2):
        with lock:
            seen.append(answer)
    assert sorted(g for _, g in seen) == [f"g{i}" for i in range(9)] and most[0] <= 2
