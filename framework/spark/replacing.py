"""An overwrite's last step, done so that a crash never leaves a stream with no copy or two.

When every group of an overwrite succeeded, its files are published; the
state is then saved with the stream's entry marked ``"replacing": true``
(the new generation and cursor state are durable), and only then are the
older generations' files deleted and the mark dropped with the next save. A
run that finds the mark (its predecessor died between the save and the
deletes) deletes the older generations first (:func:`finish_replacing`), so
the folder again holds the one copy the state describes.
"""

from __future__ import annotations

from framework.formats.rolling import delete_older_generations
from framework.models.destination import DestinationSettings
from framework.storage import Storage
from framework.storage.state_store import ConnectionState

MARK = "replacing"


def mark_replacing(state: ConnectionState, stream: str) -> None:
    """Say in ``state`` (saved next) that ``stream``'s older generations are to be deleted."""
    state.streams.setdefault(stream, {})[MARK] = True


def replace_older(storage: Storage, settings: DestinationSettings, state: ConnectionState, stream: str,
                  namespace: str = "") -> list[str]:
    """Delete the older generations of ``stream`` (the state saved with its mark) and drop the mark."""
    entry = state.streams.get(stream) or {}
    deleted = delete_older_generations(storage, settings, stream, namespace, int(entry.get("generation_id", 0)))
    entry.pop(MARK, None)
    return deleted


def finish_replacing(storage: Storage, settings: DestinationSettings, state: ConnectionState,
                     namespace: str = "") -> list[str]:
    """Do the deletes a dead run left undone (streams whose entry is marked); returns those streams' names.
    The caller saves ``state`` afterwards."""
    names = [name for name, entry in state.streams.items() if entry.get(MARK)]
    for name in names:
        replace_older(storage, settings, state, name, namespace)
    return names


__all__ = ["MARK", "finish_replacing", "mark_replacing", "replace_older"]
