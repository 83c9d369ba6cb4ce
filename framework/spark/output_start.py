"""What a sync does to its output before it reads anything, holding the output's lease.

* a publication its predecessor left half done is finished, or, where its staged files are gone, the
  stream is set back so those units are read again (:func:`framework.storage.state_store.finish_publishing`);
* an overwrite that died deleting older generations is finished (:mod:`framework.spark.replacing`);
* the staging area is cleared: holding the lease, whatever is staged belongs to syncs that are gone;
* a stream the state knows nothing of, landing beside files of the same stream, is named in a warning
  (its records would be read again into the folder that holds them).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, timezone

from framework.engine.selection import Selection
from framework.models.destination import DestinationSettings
from framework.spark.replacing import finish_replacing
from framework.storage import Storage
from framework.storage.layout import StreamLayout
from framework.storage.state_store import ConnectionState, StateStore, clear_staging, finish_publishing


def prepare_output(storage: Storage, store: StateStore, saved: ConnectionState, settings: DestinationSettings,
                   namespace: str, warn: Callable[[str], None]) -> None:
    """Finish or undo what a sync that is gone left (see the module docs); ``saved`` is updated and saved."""
    now = datetime.now(timezone.utc).isoformat
    if saved.publishing:
        done = finish_publishing(storage, saved)
        store.save(saved, now())
        if done.set_back:
            warn(f"{len(done.lost)} staged file(s) of stream {done.set_back!r} were gone before they were published "
                 f"(first {storage.uri(done.lost[0])}); the stream's state is set back to before them, so this "
                 "sync reads those records again, once")
    if finish_replacing(storage, settings, saved, namespace):  # an overwrite that died deleting
        store.save(saved, now())
    clear_staging(storage)


def untracked_streams(storage: Storage, settings: DestinationSettings, selections: Sequence[Selection],
                      saved: ConnectionState, sync_mode: str, namespace: str = "",
                      given: Collection[str] = ()) -> list[str]:
    """Streams this sync appends with no saved entry (and no ``--state``) whose folder already holds files."""
    found = []
    for selection in selections:
        mode = selection.destination_sync_mode or sync_mode
        if mode == "overwrite" or selection.name in saved.streams or selection.name in given:
            continue
        layout = StreamLayout.of(settings, selection.name, namespace)
        if any(layout.part_number_of(info.key) is not None
               for info in storage.list(layout.scan_prefix, with_metadata=False)):
            found.append(selection.name)
    return found


def untracked_warning(storage: Storage, names: Sequence[str]) -> str:
    listed = ", ".join(repr(name) for name in names)
    return (f"the output {storage.uri()} already holds files of {listed}, but its state "
            f"({storage.uri('_airbyte_state/state.json')}) has no entry for them: this sync reads them from the "
            "start and appends, so records already there land again. To start over, run with --sync-mode "
            "overwrite (the older files are deleted once the new ones are in), or delete those folders first; "
            "or pass --state with the state they were synced to")


def warn_untracked(storage: Storage, settings: DestinationSettings, selections: Sequence[Selection],
                   saved: ConnectionState, sync_mode: str, namespace: str, given: Mapping[str, object] | None,
                   warn: Callable[[str], None]) -> None:
    names = untracked_streams(storage, settings, selections, saved, sync_mode, namespace, tuple(given or ()))
    if names:
        warn(untracked_warning(storage, names))


__all__ = ["prepare_output", "untracked_streams", "untracked_warning", "warn_untracked"]
