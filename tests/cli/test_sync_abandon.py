"""What ``run-manifest`` does with a background session at a sync's end (framework/cli/sync_command.py,
``_abandon``): one still starting is stopped; one up is killed too when no group went to it, else left."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from framework.cli.sync_command import _abandon


class _Start:
    """Stands in for a SessionStart: its future, and whether it was abandoned."""

    def __init__(self, future: Future):
        self.future = future
        self.abandoned = False

    def abandon(self) -> None:
        self.abandoned = True


def _start(state: str) -> Any:
    future: Future = Future()
    if state == "up":
        future.set_result(object())
    elif state == "failed":
        future.set_exception(RuntimeError("no java"))
    return _Start(future)


def test_a_start_still_running_is_always_stopped():
    for unused in (False, True):
        start = _start("starting")
        _abandon([start], unused=unused)
        assert start.abandoned


def test_an_up_session_is_killed_only_when_no_group_went_to_it():
    used, unused = _start("up"), _start("up")
    _abandon([used], unused=False)
    _abandon([unused], unused=True)
    assert not used.abandoned and unused.abandoned


def test_a_session_that_failed_to_start_has_nothing_to_kill():
    failed = _start("failed")
    _abandon([failed], unused=True)
    assert not failed.abandoned
