"""framework/spark/connect_wait.py: a Spark Connect server that is starting is waited for, up to a limit.

Real sockets on 127.0.0.1, a clock and a pause of the test's own: a socket bound but not listening refuses
connections (a server whose JVM is still starting), and begins listening when the test's pause says so.
"""

from __future__ import annotations

import socket

import pytest

from framework.errors import ConfigError
from framework.spark.connect_wait import DEFAULT_WAIT_S, WAIT_VARIABLE, wait_for_server, wait_limit


class Steps:
    """A clock that moves only when paused, and a server that starts listening after ``listen_after`` pauses."""

    def __init__(self, server: socket.socket | None, listen_after: int) -> None:
        self.now, self.pauses, self.said = 100.0, 0, []
        self.server, self.listen_after = server, listen_after

    def clock(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        assert 0 <= seconds <= 0.5
        self.now += seconds
        self.pauses += 1
        if self.server is not None and self.pauses == self.listen_after:
            self.server.listen()


@pytest.fixture
def starting_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    yield server
    server.close()


def test_a_starting_server_is_waited_for_and_said_once(starting_server):
    port = starting_server.getsockname()[1]
    steps = Steps(starting_server, listen_after=6)
    wait_for_server("127.0.0.1", port, f"sc://127.0.0.1:{port}", 60, clock=steps.clock, pause=steps.pause,
                    say=steps.said.append)
    assert steps.pauses == 6 and steps.now == pytest.approx(103.0)
    (said,) = steps.said
    assert f"sc://127.0.0.1:{port} is not listening yet" in said and "waiting up to 60 s" in said
    assert WAIT_VARIABLE in said


def test_a_server_that_never_listens_fails_after_the_limit_naming_it(starting_server):
    port = starting_server.getsockname()[1]
    steps = Steps(None, listen_after=0)
    with pytest.raises(ConfigError) as failure:
        wait_for_server("127.0.0.1", port, f"sc://127.0.0.1:{port}", 5, clock=steps.clock, pause=steps.pause,
                        say=steps.said.append)
    assert steps.now == pytest.approx(105.0) and steps.pauses == 10
    message = str(failure.value)
    assert f"the Spark Connect server at sc://127.0.0.1:{port} could not be reached" in message
    assert "for 5 s" in message and "start it (sbin/start-connect-server.sh)" in message


def test_a_limit_of_zero_fails_at_once_without_a_word(starting_server):
    port = starting_server.getsockname()[1]
    steps = Steps(None, listen_after=0)
    with pytest.raises(ConfigError, match="could not be reached"):
        wait_for_server("127.0.0.1", port, "sc://x", 0, clock=steps.clock, pause=steps.pause, say=steps.said.append)
    assert steps.pauses == 0 and steps.said == []


def test_a_listening_server_is_not_waited_for(starting_server):
    starting_server.listen()
    steps = Steps(None, listen_after=0)
    wait_for_server("127.0.0.1", starting_server.getsockname()[1], "sc://x", 60, clock=steps.clock,
                    pause=steps.pause, say=steps.said.append)
    assert steps.pauses == 0 and steps.said == []


def test_an_unknown_host_is_not_a_server_starting():
    steps = Steps(None, listen_after=0)
    with pytest.raises(ConfigError, match="could not be reached"):
        wait_for_server("no-such-host.invalid", 15002, "sc://no-such-host.invalid:15002", 60, clock=steps.clock,
                        pause=steps.pause, say=steps.said.append)
    assert steps.pauses == 0


@pytest.mark.parametrize(("given", "seconds"), [(None, DEFAULT_WAIT_S), ("", DEFAULT_WAIT_S), ("0", 0.0),
                                                ("2.5", 2.5)])
def test_the_limit_comes_from_the_environment(given, seconds):
    environ = {} if given is None else {WAIT_VARIABLE: given}
    assert wait_limit(environ) == seconds


@pytest.mark.parametrize("given", ["soon", "-1", "nan"])
def test_a_limit_that_is_not_seconds_is_refused_naming_the_variable(given):
    with pytest.raises(ConfigError, match=f"{WAIT_VARIABLE}="):
        wait_limit({WAIT_VARIABLE: given})
