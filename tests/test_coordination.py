"""The driver's sync-wide services and the tasks' calls to them (framework.coordination)."""

from __future__ import annotations

import threading

import pytest

from framework import coordination
from framework.components.context import BuildContext
from framework.coordination import Coordinator, CoordinatorAddress, CoordinatorError


def test_a_call_reaches_the_handler_and_comes_back():
    seen = []

    def handler(payload):
        seen.append(payload)
        return {"twice": payload * 2}

    with Coordinator({"double": handler}) as coordinator:
        assert coordination.call(coordinator.address, "double", 21) == {"twice": 42}
        assert coordination.call(coordinator.address, "double", 1) == {"twice": 2}
    assert seen == [21, 1]


def test_a_failing_handler_and_an_unknown_service_raise_for_the_caller():
    def broken(payload):
        raise ValueError("no token today")

    with Coordinator({"broken": broken}) as coordinator:
        with pytest.raises(CoordinatorError, match="no token today"):
            coordination.call(coordinator.address, "broken", None)
        with pytest.raises(CoordinatorError, match="no service 'missing'"):
            coordination.call(coordinator.address, "missing", None)


def test_a_wrong_key_is_refused_and_the_coordinator_serves_on():
    with Coordinator({"echo": lambda p: p}) as coordinator:
        wrong = CoordinatorAddress(coordinator.address.host, coordinator.address.port, b"not the key" * 3)
        with pytest.raises(Exception):  # noqa: B017 - multiprocessing's AuthenticationError
            coordination.call(wrong, "echo", 1)
        assert coordination.call(coordinator.address, "echo", "still here") == "still here"


def test_a_closed_driver_is_a_clear_error():
    coordinator = Coordinator({"echo": lambda p: p})
    address = coordinator.address
    assert coordination.call(address, "echo", 1) == 1
    coordinator.close()
    with pytest.raises(CoordinatorError, match="could not be reached"):
        coordination.call(address, "echo", 2)


def test_the_key_stays_out_of_the_address_repr():
    with Coordinator({}) as coordinator:
        assert coordinator.address.authkey.hex() not in repr(coordinator.address)


def test_routed_calls_run_in_place_unless_attached():
    calls = []
    here = coordination.routed("count", lambda p: calls.append(("here", p)) or "here")
    with Coordinator({"count": lambda p: calls.append(("driver", p)) or "driver"}) as coordinator:
        assert here(1) == "here"
        with coordination.attached(coordinator.address):
            assert coordination.current() == coordinator.address
            assert here(2) == "driver"
        assert coordination.current() is None
        assert here(3) == "here"
    assert calls == [("here", 1), ("driver", 2), ("here", 3)]


def test_build_context_shares_the_first_handler_offered_under_a_name():
    ctx = BuildContext({})
    first = ctx.service("token", lambda p: "first")
    second = ctx.within_stream("other").service("token", lambda p: "second")
    assert first(None) == second(None) == "first"
    assert set(ctx.services) == {"token"}


def test_concurrent_callers_each_get_their_own_answer():
    lock = threading.Lock()
    counter = {"n": 0}

    def next_number(_):
        with lock:
            counter["n"] += 1
            return counter["n"]

    with Coordinator({"next": next_number}) as coordinator:
        answers: list[int] = []

        def worker():
            for _ in range(20):
                answers.append(coordination.call(coordinator.address, "next", None))

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(answers) == list(range(1, 81))
