"""The circuit breaker per host: an API that refuses every connection fails in bounded time, once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.context import BuildContext
from framework.components.http.circuit import GIVE_UP_AFTER, CircuitOpenError, ConnectError, HostCircuits
from framework.components.http.client import HttpClient
from framework.components.http.error_handler import default_error_handler
from framework.components.http.request import RequestParts
from framework.components.http.transport import FunctionTransport
from framework.errors import TransportError


class FakeTime:
    """Monotonic seconds that move only when something sleeps."""

    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def refusing(request):
    raise ConnectError("could not connect: [Errno 111] Connection refused")


def client(time: FakeTime, circuits: HostCircuits, transport=None) -> HttpClient:
    return HttpClient(transport or FunctionTransport(refusing), default_error_handler(BuildContext(config={})),
                      sleep=time.sleep, circuits=circuits, stream="tickets")


def parts(page: int = 1) -> RequestParts:
    return RequestParts(url_base="http://127.0.0.1:9", path="tickets", params={"page": page})


def test_a_host_that_refuses_everything_fails_within_the_bound_with_one_message():
    time = FakeTime()
    circuits = HostCircuits(now=time)
    with pytest.raises(CircuitOpenError) as caught:
        client(time, circuits).send(parts())
    assert time.now < 180  # under 3 minutes, Airbyte's default backoff included (10, 20, 40, 80 s)
    assert time.now >= GIVE_UP_AFTER
    message = str(caught.value)
    assert "127.0.0.1:9 refused every connection for 150 s (5 attempts" in message
    assert "check that the API is up" in message and "GET http://127.0.0.1:9/tickets" in message


def test_once_open_every_other_partition_fails_at_once_without_a_request():
    time = FakeTime()
    circuits = HostCircuits(now=time)
    with pytest.raises(CircuitOpenError):
        client(time, circuits).send(parts(1))
    sent = []

    def counting(request):
        sent.append(request)
        raise ConnectError("refused")

    waited = len(time.sleeps)
    with pytest.raises(CircuitOpenError):
        client(time, circuits, FunctionTransport(counting)).send(parts(2))
    assert sent == [] and len(time.sleeps) == waited


def test_an_answer_closes_the_circuit_and_other_hosts_are_not_affected():
    time = FakeTime()
    circuits = HostCircuits(now=time)
    answers = iter([ConnectError("refused")] * 3 + [(200, {}, {"ok": True})])

    def flaky(request):
        item = next(answers)
        if isinstance(item, Exception):
            raise item
        return item

    response = client(time, circuits, FunctionTransport(flaky)).send(parts())
    assert response is not None and response.status == 200
    circuits.check("http://127.0.0.1:9/x")  # closed again: no error
    other = RequestParts(url_base="http://127.0.0.2:9", path="x")
    assert client(time, circuits, FunctionTransport(lambda r: (200, {}, {}))).send(other) is not None


def test_a_failure_after_the_request_went_out_is_not_a_refused_connection():
    time = FakeTime()
    circuits = HostCircuits(now=time)

    def reset(request):
        raise TransportError("the connection failed while the response body was read: reset")

    with pytest.raises(TransportError) as caught:
        client(time, circuits, FunctionTransport(reset)).send(parts())
    assert not isinstance(caught.value, CircuitOpenError)  # the handler's retries ran out, as before


@given(st.lists(st.floats(min_value=0, max_value=500), min_size=1, max_size=20))
def test_the_circuit_opens_exactly_when_failures_span_the_bound(gaps):
    now = [0.0]
    circuits = HostCircuits(now=lambda: now[0], give_up_after=100.0)
    opened_at = None
    for gap in gaps:
        now[0] += gap
        try:
            circuits.failed("http://h/x", ConnectError("refused"))
        except CircuitOpenError:
            opened_at = now[0]
            break
    if opened_at is None:
        assert now[0] - gaps[0] < 100.0
    else:
        assert opened_at - gaps[0] >= 100.0
