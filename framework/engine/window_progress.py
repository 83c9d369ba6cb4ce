"""Progress of one partition's datetime windows, and the state it allows.

Windows may finish in any order (they are read concurrently), but state may
only move over the *contiguous* run of finished windows from the first one:
a crash then never skips a window that was not read. Within that run the
state is the latest cursor value seen, capped at the end of the run while
later windows are unfinished (a record newer than an unread window must not
carry the state past it). State never moves backwards.

The finished run is tracked as windows finish, so :meth:`WindowProgress.value`
costs the same for ten windows or ten thousand. Windows finished beyond the
run are listed by :meth:`WindowProgress.finished_beyond` (merged into runs),
so a state can record them and the next sync skip them
(:mod:`framework.components.incremental.date_ranges`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from framework.components.incremental.date_ranges import Closed

__all__ = ["WindowProgress"]


@dataclass
class WindowProgress:
    """``windows``: (start, end) instants in order; ``prior``: the state this sync started from."""

    windows: list[tuple[datetime | None, datetime | None]]
    prior: datetime | None = None
    done: list[bool] = field(init=False)
    seen: list[datetime | None] = field(init=False)
    _prefix: int = field(init=False, default=0, repr=False)
    _best: datetime | None = field(init=False, default=None, repr=False)
    _finished: int = field(init=False, default=0, repr=False)

    def __post_init__(self) -> None:
        self.done = [False] * len(self.windows)
        self.seen = [None] * len(self.windows)
        self._best = self.prior

    def observe(self, window: int, value: datetime) -> None:
        """A record of ``window`` has cursor value ``value``."""
        current = self.seen[window]
        if current is None or value > current:
            self.seen[window] = value
            if window < self._prefix and (self._best is None or value > self._best):
                self._best = value  # a late observation in the finished run still counts

    def finish(self, window: int) -> None:
        """Every record of ``window`` has been handed over."""
        if not self.done[window]:
            self._finished += 1
        self.done[window] = True
        done, seen, count = self.done, self.seen, len(self.windows)
        while self._prefix < count and done[self._prefix]:
            value = seen[self._prefix]
            if value is not None and (self._best is None or value > self._best):
                self._best = value
            self._prefix += 1

    @property
    def complete(self) -> bool:
        return self._prefix == len(self.windows)

    def finished_prefix(self) -> int:
        """How many windows, from the first, are finished."""
        return self._prefix

    def finished_beyond(self) -> tuple[Closed, ...]:
        """The windows finished after the first unfinished one, adjacent ones merged into one interval each
        (with the latest value seen in it); empty when every finished window is in the run from the first."""
        if self._finished == self._prefix:
            return ()
        out: list[Closed] = []
        run_open = False
        for index in range(self._prefix, len(self.windows)):
            if not self.done[index]:
                run_open = False
                continue
            low, high = self.windows[index]
            seen = self.seen[index]
            if low is None or high is None:  # a window without bounds (no datetime cursor): nothing to say
                continue
            if run_open:
                last = out[-1]
                latest = last.latest if seen is None or (last.latest is not None and last.latest >= seen) else seen
                out[-1] = Closed(last.start, high, latest)
            else:
                out.append(Closed(low, high, seen))
                run_open = True
        return tuple(out)

    def value(self) -> datetime | None:
        """The cursor value state may hold now (None: nothing to record yet)."""
        best = self._best
        prefix = self._prefix
        if best is not None and prefix < len(self.windows):
            cap = self.windows[prefix - 1][1] if prefix > 0 else None
            if cap is not None and best > cap:
                best = cap
            if self.prior is not None and best < self.prior:
                best = self.prior
        return best
