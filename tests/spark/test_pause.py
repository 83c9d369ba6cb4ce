"""Holding a session's start (framework/spark/pause.py) on real processes: a process group stopped and
continued as one, a launch held until resumed, only groups led by a ``spark-submit`` child found, and a stopped
group whose driver dies ends (the kernel's orphaned-group rule the module relies on). No JVM: small Python
children stand in for it. Linux only (``/proc``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from framework.spark.pause import StartPause, jvm_groups

pytestmark = [pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc (Linux)"),
              pytest.mark.skipif(sys.version_info < (3, 11), reason="Popen's process_group is Python 3.11's")]
OWN_GROUP: dict[str, Any] = {"process_group": 0}  # Popen's (3.11+), passed so for mypy's 3.10 target

SLEEPER = "import time\nwhile True: time.sleep(0.05)\n"


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def _wait_for(check, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)  # polling a real process
    return check()


@pytest.fixture
def group() -> Iterator[subprocess.Popen]:
    """A child leading its own process group, with a grandchild in it."""
    code = f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {SLEEPER!r}])\n{SLEEPER}"
    child = subprocess.Popen([sys.executable, "-c", code], **OWN_GROUP)
    # both running their loop: a grandchild between fork and exec would hold its parent in vfork, not stopped
    assert _wait_for(lambda: any(_runs_sleeper(pid) for pid in _children(child.pid)))
    yield child
    with contextlib.suppress(ProcessLookupError):  # a test may have ended the group
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def _runs_sleeper(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
        # exec'd: a child still in vfork shows its parent's command line, which starts it (subprocess)
        return b"while True" in command and b"subprocess" not in command
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as handle:
            found.extend(int(p) for p in handle.read().split())
    return found


def test_a_paused_group_stops_as_one_and_goes_on_when_resumed(group):
    pause = StartPause(lambda: [group.pid])
    grandchild = _children(group.pid)[0]
    pause.pause()
    assert pause.paused
    assert _wait_for(lambda: _state(group.pid) == "T" and _state(grandchild) == "T")
    pause.pause()  # again (after each group): stopped once
    pause.resume()
    assert not pause.paused
    assert _wait_for(lambda: _state(group.pid) != "T" and _state(grandchild) != "T")


def test_a_launch_waits_while_paused():
    pause = StartPause(lambda: [])
    pause.pause()
    went = threading.Event()

    def launch() -> None:
        pause.wait()
        went.set()

    waiter = threading.Thread(target=launch, daemon=True)
    waiter.start()
    assert not went.wait(0.2)
    pause.resume()
    assert went.wait(5)


def test_a_group_gone_is_skipped(group):
    gone = 2 ** 22 + 12345  # above Linux's largest pid: no such process group
    grandchild = _children(group.pid)[0]
    pause = StartPause(lambda: [gone, group.pid])  # the gone one first: the live one after it is still stopped
    pause.pause()
    assert pause.paused
    assert _wait_for(lambda: _state(group.pid) == "T" and _state(grandchild) == "T")
    pause.resume()
    assert not pause.paused
    assert _wait_for(lambda: _state(group.pid) != "T" and _state(grandchild) != "T")


def test_only_children_leading_a_group_of_their_own_and_running_spark_are_found(tmp_path):
    script = tmp_path / "spark-submit"  # a command line like the JVM launch's
    script.write_text(SLEEPER)
    own = subprocess.Popen([sys.executable, str(script)], **OWN_GROUP)
    shared = subprocess.Popen([sys.executable, str(script)])  # in this process's group: never stopped
    other = subprocess.Popen([sys.executable, "-c", SLEEPER], **OWN_GROUP)  # not Spark
    try:
        assert _wait_for(lambda: own.pid in jvm_groups())
        found = jvm_groups()
        assert shared.pid not in found and other.pid not in found
    finally:
        for process in (own, shared, other):
            process.kill()
            process.wait()


# SIGHUP at its default in the driver, so in its child: under `nohup` (ignored, and inherited) the kernel's SIGHUP
# to an orphaned group would not end the sleeper (a JVM still ends then: its gateway's stdin closes at SIGCONT).
DRIVER = """
import signal, subprocess, sys, time
from framework.spark.pause import StartPause
signal.signal(signal.SIGHUP, signal.SIG_DFL)
child = subprocess.Popen([sys.executable, "-c", {sleeper!r}], process_group=0)
time.sleep(0.3)
StartPause(lambda: [child.pid]).pause()
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_stopped_group_whose_driver_dies_ends():
    driver = subprocess.Popen([sys.executable, "-c", DRIVER.format(sleeper=SLEEPER)], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    assert driver.stdout is not None
    jvm = int(driver.stdout.readline())
    assert _wait_for(lambda: _state(jvm) == "T")
    driver.kill()
    driver.wait()

    def ended() -> bool:
        try:
            return _state(jvm) in ("Z", "X")  # a zombie until whoever adopted it reaps it
        except OSError:
            return True

    assert _wait_for(ended), "the stopped child of a dead driver is still there"


def test_ending_kills_the_whole_group_even_stopped_and_lets_a_held_launch_go(group):
    pause = StartPause(lambda: [group.pid])
    grandchild = _children(group.pid)[0]
    pause.pause()
    assert _wait_for(lambda: _state(group.pid) == "T")
    pause.end()
    assert not pause.paused
    group.wait(timeout=10)
    assert group.returncode == -signal.SIGKILL

    def gone() -> bool:
        try:
            return _state(grandchild) in ("Z", "X")
        except OSError:
            return True

    assert _wait_for(gone)


def _waited(pause: StartPause) -> threading.Event:
    went = threading.Event()

    def launch() -> None:
        pause.wait()
        went.set()

    threading.Thread(target=launch, daemon=True).start()
    return went


def test_a_hold_ends_by_itself_when_nobody_says():
    began = time.monotonic()
    pause = StartPause(lambda: [], hold=0.3)
    assert pause.paused
    assert _waited(pause).wait(5)
    assert time.monotonic() - began >= 0.29
    assert not pause.paused


def test_a_hold_ends_at_once_when_resumed_and_lasts_when_paused():
    resumed = StartPause(lambda: [], hold=30.0)
    went = _waited(resumed)
    resumed.resume()
    assert went.wait(5)
    paused = StartPause(lambda: [], hold=0.2)
    went = _waited(paused)
    paused.pause()  # not wanted: held past the hold, until resumed
    assert not went.wait(0.6)
    paused.resume()
    assert went.wait(5)
