"""The garbage collector's policy (framework/collector.py): off while a command starts, frozen after start-up
and before a fork, room for a page in the young generation while reading, and each put back as it was."""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Iterator

import pytest

from framework import collector
from framework.collector import YOUNG_OBJECTS


@pytest.fixture(autouse=True)
def collector_as_it_was() -> Iterator[None]:
    """Whatever a test does to the collector, the next one finds it as this one did."""
    enabled, threshold, frozen = gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()
    yield
    if gc.get_freeze_count() != frozen:
        gc.unfreeze()
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_off_while_a_command_starts_then_back_for_a_caller_that_goes_on():
    gc.enable()
    with collector.off_while_starting(program=False) as collecting:
        assert collecting and not gc.isenabled()
        collector.on_after_start()  # start-up over: what it made frozen, the collector on
        assert gc.isenabled() and gc.get_freeze_count() > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0  # thawed: the caller's to collect again


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with collector.off_while_starting(program=False) as collecting:
        assert not collecting and not gc.isenabled()
    assert not gc.isenabled()


def test_a_program_ends_with_the_collector_off_and_everything_frozen():
    gc.enable()
    with pytest.raises(RuntimeError), collector.off_while_starting(program=True):
        raise RuntimeError("the command failed")
    assert not gc.isenabled() and gc.get_freeze_count() > 0


def test_frozen_as_loaded_collects_first():
    class Node:
        pass

    node = Node()
    node.itself = node  # a cycle: only the collector frees it
    gone = weakref.ref(node)
    del node
    collector.frozen_as_loaded()
    assert gone() is None and gc.get_freeze_count() > 0


@pytest.mark.parametrize("raised", [False, True])
def test_reading_has_room_for_a_page_and_puts_the_collector_back(raised):
    before = gc.get_threshold()
    assert before[0] < YOUNG_OBJECTS  # Python's default (700): the test means something
    frozen = gc.get_freeze_count()
    with pytest.raises(KeyboardInterrupt) if raised else contextlib.nullcontext():
        with collector.reading():
            assert gc.get_threshold() == (YOUNG_OBJECTS, *before[1:])
            assert gc.get_freeze_count() > frozen
            if raised:
                raise KeyboardInterrupt
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_reading_keeps_a_higher_threshold():
    gc.set_threshold(2 * YOUNG_OBJECTS, 5, 5)
    with collector.reading():
        assert gc.get_threshold() == (2 * YOUNG_OBJECTS, 5, 5)
    assert gc.get_threshold() == (2 * YOUNG_OBJECTS, 5, 5)
