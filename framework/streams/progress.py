"""Progress of one partition's datetime windows, and the state it allows.

Windows may finish in any order (they are read concurrently), but state may
only move over the *contiguous* run of finished windows from the first one:
a crash then never skips a window that was not read. Within that run the
state is the latest cursor value seen, capped at the end of the run while
later windows are unfinished (a record newer than an unread window must not
carry the state past it). State never moves backwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class WindowProgress:
    """``windows``: (start, end) instants in order; ``prior``: the state this sync started from."""

    windows: list[tuple[datetime | None, datetime | None]]
    prior: datetime | None = None
    done: list[bool] = field(init=False)
    seen: list[datetime | None] = field(init=False)

    def __post_init__(self) -> None:
        self.done = [False] * len(self.windows)
        self.seen = [None] * len(self.windows)

    def observe(self, window: int, value: datetime) -> None:
        current = self.seen[window]
        if current is None or value > current:
            self.seen[window] = value

    def finish(self, window: int) -> None:
        self.done[window] = True

    @property
    def complete(self) -> bool:
        return all(self.done)

    def finished_prefix(self) -> int:
        count = 0
        for flag in self.done:
            if not flag:
                break
            count += 1
        return count

    def value(self) -> datetime | None:
        """The cursor value state may hold now (None: nothing to record yet)."""
        prefix = self.finished_prefix()
        best = self.prior
        for value in self.seen[:prefix]:
            if value is not None and (best is None or value > best):
                best = value
        if prefix < len(self.windows) and best is not None:
            cap = self.windows[prefix - 1][1] if prefix > 0 else None
            if cap is not None and best > cap:
                best = cap
            if self.prior is not None and best < self.prior:
                best = self.prior
        return best

    def latest_seen(self) -> datetime | None:
        values = [v for v in self.seen if v is not None]
        return max(values) if values else None


__all__ = ["WindowProgress"]
