"""The garbage collector's policy: when it is off, what it leaves frozen, and how much room its young generation
has while records are read.

Every setting of Python's collector that the framework makes is made here
(standard library only, so the command line's start pays nothing for it):

* :func:`off_while_starting`: start-up makes many objects and little
  garbage, so the collector is off while a command starts (the caller turns
  it on again with :func:`on_after_start` once start-up is over, where garbage
  follows). At the end a caller that goes on gets it back as it was; a
  program that ends leaves it off with every object frozen
  (:func:`frozen_for_exit`).
* :func:`on_after_start`: what start-up made lives as long as the run;
  frozen, the first collection after the collector is on again does not walk
  every object made since start.
* :func:`frozen_as_loaded`: what a process loaded before it forks (Spark's
  worker daemon) is collected once and frozen, out of every worker's
  collections.
* :func:`reading`: while records are read (protocol mode's read, a Spark
  task), what lives already is frozen and the youngest generation takes
  :data:`YOUNG_OBJECTS` allocations before it is collected; both are put back
  at the end.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: The collector's youngest-generation threshold while reading (Python's default is 700 allocations): more
#: than a page of records allocates (1,000 records of a few nested objects each), so a page is gone before the
#: collector looks at it.
YOUNG_OBJECTS = 50_000


@contextmanager
def off_while_starting(program: bool) -> Iterator[bool]:
    """The collector off for the block; yields whether it was on.

    ``program``: the process ends after the block (the command line's own ``argv``): the collector is left off
    with every object frozen (:func:`frozen_for_exit`). Otherwise a collector that was on is on again, and
    what the run froze (:func:`on_after_start`) is the caller's to collect again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield collecting
    finally:
        if program:  # nothing of the run is left for a last collection to finalize: files are closed
            frozen_for_exit()
        elif collecting:
            gc.unfreeze()
            gc.enable()


def frozen_for_exit() -> None:
    """The collector off and every object frozen, for a process about to end: the interpreter would otherwise
    walk the whole heap once more on its way out (2 % of a cold check, 0.3 s after a 200,000-record sync)."""
    gc.disable()
    gc.freeze()


def on_after_start() -> None:
    """The collector on again once start-up is over, what start-up made frozen first: it lives as long as the
    run, and frozen it is not walked by the first collection after enable, which would otherwise take every
    object made since start (a whole gen-0 walk: 30 ms of a 0.33 s protocol read)."""
    gc.freeze()
    gc.enable()


def frozen_as_loaded() -> None:
    """Collect once, then freeze what is loaded now: it stays out of the garbage collections of every process
    forked from this one."""
    gc.collect()
    gc.freeze()


@contextmanager
def reading() -> Iterator[None]:
    """The collector as reading records wants it, for the block; put back as it was at the end.

    Pages make many short-lived objects, so the collector runs often; frozen, what lives now (modules, the
    connector, a writer) is not walked again by every older-generation collection. A page's records are
    containers without cycles, freed as soon as the page is written; with the default threshold (700
    allocations) the collector ran several times per page, found them still alive and moved them to older
    generations, which it then walked again. With room for a page's objects (:data:`YOUNG_OBJECTS`, unless
    the threshold is higher already) it runs a few times per group of pages instead."""
    gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], YOUNG_OBJECTS), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


__all__ = ["YOUNG_OBJECTS", "frozen_as_loaded", "frozen_for_exit", "off_while_starting", "on_after_start",
           "reading"]
